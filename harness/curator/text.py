"""Normalising a note's text for matching: stemmed words, technical ones (docs/curator.md)."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

# Raise on any change to what `normalize` returns: the curator database re-keys the judge's
# answers by it and clusters the candidate record again (`curatordb`).
NORMALISER_VERSION = 1
STOPWORDS = frozenset(
    "a an the to of in on at by for with and or is are was were be been being it its this "
    "that these those from into onto via when then than as so if also just you your we our i "
    "my me he she they them there here which who what where how do does did doing done has "
    "have had having can could should would will shall may might must any some all each every "
    "very too quite again once run running runs ran use using used".split())
# The word after one of these CLIs is a subcommand ("pnpm lint"), unless an article makes the
# name a noun ("the git folder"); after a runner ("uv run") so is the program run.
LAUNCHERS = frozenset(
    "git gh docker compose podman kubectl helm terraform npm pnpm yarn bun npx bunx deno cargo "
    "uv uvx pip pipx poetry alembic systemctl apt apt-get aws gcloud supabase prisma "
    "drizzle-kit wrangler vercel heroku".split())
RUNNERS = frozenset("run exec dlx x".split())
ARTICLES = frozenset("the a an this that our your their its".split())
_WORD = re.compile(r"[a-z0-9]+")
_TECHNICAL = re.compile(r"[/._=:@~$<>|*#\\\[\]{}()0-9]|^-|[a-z][A-Z]")  # or camelCase
_QUANTITY = re.compile(r"\d+(?:[.,]\d+)*[a-z]*")  # 3.11, 5432, 14s, 3min


@lru_cache(maxsize=1 << 14)
def stem(word: str) -> str:
    """A trivial stemmer: strip plural, -ed, -ing and a final e, so inflections meet."""
    if len(word) > 4 and not word.isdigit():
        if word.endswith(("ies", "ied")):
            word = word[:-3] + "y"
        elif word.endswith(("ing", "ed")):
            word = word[:-3] if word.endswith("ing") else word[:-2]
            if len(word) > 3 and word[-1] == word[-2] and word[-1] in "bdfgmnprtz":
                word = word[:-1]  # running -> runn -> run
        elif word.endswith("s") and not word.endswith("ss"):
            word = word[:-2] if word.endswith(("sses", "shes", "ches", "xes", "zes")) else word[:-1]
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


class Norm(NamedTuple):
    """Space-joined words; `packed`: anchors, strict ones "!"-marked; `signature`: "" or "=..."."""

    key: str
    anchors: str = ""
    strict: str = ""
    packed: str = ""
    signature: str = ""  # filed as a word: no word starts with "="


@lru_cache(maxsize=1 << 14)  # tokens recur far more than texts do
def _step(token: str, in_code: bool, after_launcher: bool, after_article: bool) -> tuple:
    """(words, None or (anchors, strict, signature words), command next?, article?)."""
    token = token.lstrip("\"'([{").rstrip(".,;:!?\"')]}")
    low = token.lower()
    flag = low.startswith("-")
    found = _WORD.findall(low)
    every = tuple(stem(w) for w in found)
    launches, article = low in LAUNCHERS and not after_article, low in ARTICLES
    runner = after_launcher and low in RUNNERS
    subcommand = after_launcher and not flag and (low not in STOPWORDS or runner)
    technical = _TECHNICAL.search(token) is not None
    if not (in_code or subcommand or technical):
        content = tuple(s for w, s in zip(found, every, strict=True) if w not in STOPWORDS)
        return content, None, launches, article
    quantity = low[:1].isdigit() and _QUANTITY.fullmatch(low) is not None
    strict = (every if flag or (subcommand and not runner)
              else () if quantity else tuple(w for w in every if w[0].isdigit()))
    shaped = every if technical and not (quantity and low[-1].isalpha()) else ()
    return every, (every, strict, shaped), runner or launches, article


# mostly holds a pass's due lessons till identity looks them up (300k: 0.35 s less, 23 MiB more)
@lru_cache(maxsize=1 << 16)
def normalize(text: str) -> Norm:
    """Normalise a note's text for matching (see the module docstring)."""
    words: list[str] = []
    techs: list[tuple] = []
    launched = article = False
    for i, segment in enumerate(text.split("`")):
        for token in segment.split():
            more, tech, launched, article = _step(token, i % 2 == 1, launched, article)
            words += more
            if tech:
                techs.append(tech)
    anchors, strict, shape = ({w for t in techs for w in t[n]} for n in range(3))
    ordered = sorted(anchors)
    packed = " ".join("!" + w if w in strict else w for w in ordered)
    return Norm(" ".join(words), " ".join(ordered), " ".join(sorted(strict)), packed,
                "=" + " ".join(sorted(shape)) if shape else "")
