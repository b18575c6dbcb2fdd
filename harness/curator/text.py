"""Normalising a note's text for matching: its words, stemmed, and its technical words.

- Words: lower case, split on anything that is not a letter or digit (backticks,
  slashes and dashes go), a short stopword list dropped and common English
  suffixes stripped (sorted -> sort, migrations -> migration, file/files -> fil),
  so a score sees wording, not inflection.
- Anchors: words from technical tokens (paths, flags, numbers, `code`, key=value,
  camelCase). Strict anchors are the flags, the numbers inside a technical token
  (`PORT=3000`, `-j2`), and the subcommand after a known CLI such as `pnpm lint` or
  `uv run pytest` (see `matching` for what each kind decides). A number standing alone
  (`3.11`, `14s`, `2 tests`) is a measurement or a version: an anchor, not a strict one,
  and a runner (`run` in `pnpm run lint`) names no command of its own, so neither is strict.
- Signature: the anchors of the tokens that look technical by their shape alone (paths,
  flags, key=value, numbers), leaving out bare code words, subcommands and measurements
  (a number with a unit, `14s`, `3min`). Notes that name the same such terms are filed
  together (`shortlist`), however common each term is on its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

# Raise on any change to what `normalize` returns: the curator database re-keys the judge's
# recorded answers by it (`curatordb`), and clusters the candidate record again.
NORMALISER_VERSION = 1
STOPWORDS = frozenset(
    "a an the to of in on at by for with and or is are was were be been being it its "
    "this that these those from into onto via when then than as so if also just you "
    "your we our i my me he she they them there here which who what where how do does "
    "did doing done has have had having can could should would will shall may might "
    "must any some all each every very too quite again once run running runs ran "
    "use using used".split()
)
# The word after one of these CLIs is a subcommand ("pnpm lint" vs "pnpm typecheck"), unless an
# article shows the name is used as a noun ("the git folder"). After a runner subcommand
# ("uv run", "npm exec") the next word is the program run, a command word too.
LAUNCHERS = frozenset(
    "git gh docker compose podman kubectl helm terraform npm pnpm yarn bun npx bunx deno cargo "
    "uv uvx pip pipx poetry alembic systemctl apt apt-get aws gcloud supabase prisma "
    "drizzle-kit wrangler vercel heroku".split())
RUNNERS = frozenset("run exec dlx x".split())
ARTICLES = frozenset("the a an this that our your their its".split())
_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"[a-z][A-Z]")
_TECH_CHARS = re.compile(r"[/._=:@~$<>|*#\\\[\]{}()0-9]|^-")
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
        elif word.endswith(("sses", "shes", "ches", "xes", "zes")):
            word = word[:-2]
        elif word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


@dataclass(frozen=True, slots=True)
class Norm:
    """A normalised text: its words, its technical words, and the flags and subcommands.

    `key` is the words joined by spaces; `anchors` and `strict` are space-joined too, and
    `packed` is the anchors with each strict one marked "!", as the index keeps them.
    `signature` is the signature's words after "=", or "" when it has none: no word
    has that form, so the index files a phrasing under it as under a word.
    """

    key: str
    anchors: str = ""
    strict: str = ""
    packed: str = ""
    signature: str = ""


def _step(token: str, in_code: bool, after_launcher: bool) -> tuple:
    """What `token` adds in its context: (words, anchors, strict words, signature words,
    whether it is a launcher, whether it is an article, whether a command word follows)."""
    token = token.lstrip("\"'([{").rstrip(".,;:!?\"')]}")
    low = token.lower()
    flag = low.startswith("-")
    found = _WORD.findall(low)
    every = tuple(stem(w) for w in found)
    launcher, article = low in LAUNCHERS, low in ARTICLES
    runner = after_launcher and low in RUNNERS
    subcommand = after_launcher and not flag and (low not in STOPWORDS or runner)
    if not (in_code or flag or subcommand or _TECH_CHARS.search(token)
            or _CAMEL.search(token)):
        content = tuple(s for w, s in zip(found, every, strict=True) if w not in STOPWORDS)
        return content, (), (), (), launcher, article, False
    quantity = low[:1].isdigit() and _QUANTITY.fullmatch(low) is not None
    if flag or (subcommand and not runner):
        strict = every
    else:
        strict = () if quantity else tuple(w for w in every if w[0].isdigit())
    technical = flag or bool(_TECH_CHARS.search(token) or _CAMEL.search(token))
    shaped = every if technical and not (quantity and low[-1].isalpha()) else ()
    return every, every, strict, shaped, launcher, article, runner


# _step's answers per context (in code * 2 + after a launcher), by token: tokens recur far
# more than texts do, and normalising is most of a big pass's reading
_STEPS: tuple[dict[str, tuple], ...] = ({}, {}, {}, {})
STEP_CACHE = 1 << 12  # tokens remembered per context before that cache starts over


@lru_cache(maxsize=1 << 10)
def normalize(text: str) -> Norm:
    """Normalise a note's text for matching (see the module docstring)."""
    words: list[str] = []
    anchors: set[str] = set()
    strict: set[str] = set()
    shape: set[str] = set()
    prev_article = after_launcher = False
    for i, segment in enumerate(text.split("`")):
        for token in segment.split():
            cache = _STEPS[i % 2 * 2 + after_launcher]
            step = cache.get(token)
            if step is None:
                if len(cache) >= STEP_CACHE:
                    cache.clear()
                step = cache[token] = _step(token, bool(i % 2), after_launcher)
            more, anchored, strict_words, shaped, launcher, article, command_next = step
            words += more
            anchors.update(anchored)
            strict.update(strict_words)
            shape.update(shaped)
            after_launcher = (launcher and not prev_article) or command_next
            prev_article = article
    ordered = sorted(anchors)
    packed = " ".join("!" + w if w in strict else w for w in ordered)
    return Norm(" ".join(words), " ".join(ordered), " ".join(sorted(strict)), packed,
                "=" + " ".join(sorted(shape)) if shape else "")
