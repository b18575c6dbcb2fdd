"""When two notes say the same thing: normalisation, scoring and a blocked index.

Two texts are the same lesson when, after normalisation, rapidfuzz scores them
at or above the threshold and their technical words do not disagree.

- Normalisation: lower case, split into words on anything that is not a letter
  or digit (backticks, slashes and dashes go), drop a short stopword list and
  strip common English suffixes (sorted -> sort, migrations -> migration,
  file/files -> fil), so the score sees wording, not inflection.
- Score: `fuzz.token_set_ratio` on the normalised words (order-free, tolerant of
  a few extra or missing words), capped by `token_sort_ratio` when one text has
  less than half the words of the other, so a short note does not match every
  longer one that contains its words.
- Anchors: words from technical tokens (paths, flags, numbers, `code`,
  key=value, camelCase). Same command with another file, flag or value is
  another trick. Strict anchors (flags, numbers, and the subcommand after a
  known CLI such as `pnpm lint` or `uv run pytest`) must appear on both sides;
  for the others, the texts disagree when each has one the other lacks
  (seeds/ vs drizzle/). When both sides name exactly the same anchors, the
  prose may differ by AGREE_BONUS points more.

The index never compares a text with every other: each bucket (role and kind)
keeps an inverted index word -> recent variants, and a query scores only a
short list drawn from the postings of its three rarest words, stopping at the
first match. A text seen before word for word skips all that (`Clusters`).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from rapidfuzz import fuzz

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
_LEAD_PUNCT = "\"'([{"
_TRAIL_PUNCT = ".,;:!?\"')]}"

MAX_VARIANTS = 2  # phrasings indexed per cluster: more recall, bounded drift
BLOCK_WORDS = 3  # a query looks up the variants under its rarest words only
POSTING_CAP = 24  # per word, only the most recent variants are looked at
SHORTLIST = 4  # variants sharing the most of those words get scored by rapidfuzz
LENGTH_FLOOR = 0.5  # shorter side must have at least half the words of the longer
AGREE_BONUS = 10.0  # same technical words on both sides: the prose may differ this much more
SEEN_CAP = 1 << 16  # exact texts remembered (per generation) to skip matching them again


_STEM_ENDINGS = "sdge"  # `stem` leaves any other word as it is: spare it the call


@lru_cache(maxsize=1 << 14)
def stem(word: str) -> str:
    """A trivial stemmer: strip plural, -ed, -ing and a final e, so inflections meet."""
    if len(word) > 4 and not word.isdigit():
        if word.endswith("ies") or word.endswith("ied"):
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
    """

    key: str
    anchors: str = ""
    strict: str = ""
    packed: str = ""


@lru_cache(maxsize=1 << 12)
def _token(token: str) -> tuple[str, tuple[str, ...], tuple[str, ...], bool, bool]:
    """What a token says on its own: its bare lower form, its stemmed words (all of them,
    and without stopwords), whether it looks technical, and whether it is a flag."""
    token = token.lstrip(_LEAD_PUNCT).rstrip(_TRAIL_PUNCT)
    low = token.lower()
    flag = low.startswith("-")
    technical = flag or bool(_TECH_CHARS.search(token) or _CAMEL.search(token))
    found = _WORD.findall(low)
    every = tuple([stem(w) if w[-1] in _STEM_ENDINGS else w for w in found])
    if STOPWORDS.isdisjoint(found):
        return low, every, every, technical, flag
    return (low, every, tuple([s for w, s in zip(found, every, strict=True)
                               if w not in STOPWORDS]),
            technical, flag)


def _step(token: str, in_code: bool, after_launcher: bool) -> tuple:
    """What `token` adds in its context: (words, anchors, strict words, whether it is a
    launcher, whether it is an article, whether a command word follows it)."""
    low, every, content, technical, flag = _token(token)
    subcommand = after_launcher and not flag and (low not in STOPWORDS or low in RUNNERS)
    if in_code or technical or subcommand:
        strict = every if flag or subcommand else tuple([w for w in every if w[0].isdigit()])
        return (every, every, strict, low in LAUNCHERS, low in ARTICLES,
                subcommand and low in RUNNERS)
    return content, (), (), low in LAUNCHERS, low in ARTICLES, False


# _step's answers by context (in code * 2 + after a launcher), then token: normalising
# is most of the curator's reading, and tokens recur far more than texts do
_STEPS: tuple[dict[str, tuple], ...] = ({}, {}, {}, {})
STEP_CACHE = 1 << 12  # tokens remembered per context before that cache starts over


@lru_cache(maxsize=1 << 10)
def normalize(text: str) -> Norm:
    """Normalise a note's text for matching (see the module docstring)."""
    words: list[str] = []
    anchors: set[str] = set()
    strict: set[str] = set()
    prev_article = after_launcher = False
    for i, segment in enumerate(text.split("`")):
        in_code = i % 2
        for token in segment.split():
            cache = _STEPS[in_code * 2 + after_launcher]
            step = cache.get(token)
            if step is None:
                if len(cache) >= STEP_CACHE:
                    cache.clear()
                step = cache[token] = _step(token, bool(in_code), bool(after_launcher))
            more, anchored, strict_words, launcher, article, command_next = step
            words += more
            if anchored:
                anchors.update(anchored)
                if strict_words:
                    strict.update(strict_words)
            after_launcher = (launcher and not prev_article) or command_next
            prev_article = article
    ordered = sorted(anchors)
    joined = " ".join(ordered)
    packed = " ".join(["!" + w if w in strict else w for w in ordered]) if strict else joined
    return Norm(" ".join(words), joined, " ".join(sorted(strict)), packed)


def anchors_conflict(a: Norm, b: Norm) -> bool:
    """True when the technical words say these are different tricks (see module docstring)."""
    if not (a.anchors or b.anchors):
        return False
    return _conflict(set(a.key.split()), a.strict.split(), a.anchors.split(), b.key,
                     b.strict.split(), b.anchors.split())


def _conflict(a_words: set[str], a_strict: list[str], a_anchors: list[str], b_key: str,
              b_strict: list[str], b_anchors: list[str]) -> bool:
    # (b has all of a's strict words, a all of b's) and (b has all of a's anchors, or a all
    # of b's), tested so that b's words are split only when needed. Strict words are anchors.
    if not a_words.issuperset(b_strict):
        return True  # a flag, subcommand or number on one side only
    needed = a_strict if a_words.issuperset(b_anchors) else a_anchors
    return bool(needed) and not set(b_key.split()).issuperset(needed)


def score(a: Norm, b: Norm) -> float:
    """Similarity 0-100 of two normalised texts, before the anchor check."""
    return _capped(a.key, b.key, fuzz.token_set_ratio(a.key, b.key))


def _capped(a: str, b: str, raw: float) -> float:
    na, nb = a.count(" ") + 1, b.count(" ") + 1
    if min(na, nb) < LENGTH_FLOOR * max(na, nb):
        # a subset scores 100 under token_set_ratio; fall back to the whole-text ratio
        return min(raw, fuzz.token_sort_ratio(a, b))
    return raw


def _accept(a: Norm, b: Norm, similarity: float, threshold: float) -> bool:
    if anchors_conflict(a, b):
        return False
    if similarity >= threshold:
        return True
    return bool(a.anchors) and a.anchors == b.anchors and similarity >= threshold - AGREE_BONUS


def same_lesson(a: str, b: str, threshold: float) -> bool:
    """Whether two note texts say the same thing at `threshold` (0-100)."""
    na, nb = normalize(a), normalize(b)
    return na.key == nb.key or _accept(na, nb, score(na, nb), threshold)


def _shortlist(b: _Bucket, words: set[str]) -> list[int]:
    """Recent variants filed under the BLOCK_WORDS rarest of `words`, best first.

    A variant counts 4 for the rarest of those words it is filed under, 2 for
    the next and 1 for the third, so the rarest shared word decides first; ties
    keep posting order. (Every variant under the rarest word outranks the rest,
    which is what lets this skip counting.)
    """
    get = b.df.get
    # rarest first, ties by the word itself: a set's order changes with the hash seed
    counted = sorted([(n, w) for w in words if (n := get(w))])[:BLOCK_WORDS]
    if not counted:
        return []
    postings = b.postings
    first = postings[counted[0][1]][-POSTING_CAP:]
    if len(counted) == 1:
        return first[:SHORTLIST]
    second = postings[counted[1][1]][-POSTING_CAP:]
    third = postings[counted[2][1]][-POSTING_CAP:] if len(counted) > 2 else []
    in_first = set(first)
    if in_first.isdisjoint(second) and in_first.isdisjoint(third):
        # the common case: the rarest word's variants keep their order, then come the
        # second's under the third too, the second's, and the third's
        if len(first) >= SHORTLIST:
            return first[:SHORTLIST]
        return first + _rest(second, third, SHORTLIST - len(first))
    in_second, in_third = set(second), set(third)
    ranked: list[list[int]] = [[], [], [], []]  # under the second and third, second, third, none
    for vid in first:
        ranked[(0 if vid in in_third else 1) if vid in in_second else
               (2 if vid in in_third else 3)].append(vid)
    best = ranked[0] + ranked[1] + ranked[2] + ranked[3]
    if len(best) < SHORTLIST:
        best += _rest([v for v in second if v not in in_first],
                      [v for v in third if v not in in_first], SHORTLIST - len(best))
    return best[:SHORTLIST]


def _rest(second: list[int], third: list[int], need: int) -> list[int]:
    """The best `need` of the variants under the second and third rare words, none of them
    under the first: under both, then under the second, then under the third."""
    in_third = set(third)
    rest = [v for v in second if v in in_third]
    if len(rest) < need:
        rest += [v for v in second if v not in in_third]
        if len(rest) < need:
            in_second = set(second)
            rest += [v for v in third if v not in in_second]
    return rest[:need]


class _Bucket:
    __slots__ = ("exact", "keys", "anchors", "strict", "owner", "postings", "df")

    def __init__(self) -> None:
        self.exact: dict[str, int] = {}  # every phrasing seen -> cluster
        self.keys: list[str] = []  # variant -> normalised text
        self.anchors: list[str] = []  # variant -> anchors, strict ones marked "!" (packed)
        # variant -> its strict words, one shared tuple per combination (there are few):
        # most shortlisted variants fail on these alone, before their anchors are unpacked
        self.strict: list[tuple[str, ...]] = []
        self.owner: list[int] = []  # variant -> cluster
        self.postings: defaultdict[str, list[int]] = defaultdict(list)  # word -> recent variants
        self.df: dict[str, int] = {}  # word -> variants ever indexed under it


class LessonIndex:
    """Clusters of same-lesson texts per bucket (e.g. role and kind), found without all-pairs.

    A query looks only at the variants filed under its BLOCK_WORDS rarest words
    (the most recent POSTING_CAP each), shortlists up to SHORTLIST that share
    the most of those words, and scores just those: the work per query is
    bounded whatever the number of clusters.
    """

    def __init__(self, threshold: float, *, anchored: bool = True) -> None:
        self.threshold = threshold
        self.anchored = anchored  # False: score alone decides (decision topics)
        self._buckets: dict[Any, _Bucket] = {}
        self._variants = bytearray()  # cluster id -> phrasings indexed
        self._strict: dict[str, tuple[str, ...]] = {}  # strict words -> their shared tuple

    def find(self, bucket: Any, norm: Norm) -> int | None:
        """The cluster id `norm` belongs to in `bucket`, or None."""
        b = self._buckets.get(bucket)
        if b is None:
            return None
        hit = b.exact.get(norm.key)
        if hit is not None:
            return hit
        return self._match(b, norm, set(norm.key.split()))

    def _match(self, b: _Bucket, norm: Norm, a_words: set[str]) -> int | None:
        key, ratio, threshold = norm.key, fuzz.token_set_ratio, self.threshold
        shortlist = _shortlist(b, a_words)
        if not shortlist:
            return None
        if not self.anchored:
            for vid in shortlist:
                if ratio(key, b.keys[vid], score_cutoff=threshold):
                    return b.owner[vid]
            return None
        # anchors first: a near miss is turned away before it costs a fuzzy score
        a_strict, a_anchors = norm.strict.split(), norm.anchors.split()
        cutoff = threshold - (AGREE_BONUS if a_anchors else 0)
        for vid in shortlist:
            b_strict = b.strict[vid]
            if b_strict and not a_words.issuperset(b_strict):
                continue  # what _conflict would find first: a strict word of b's a lacks
            other_key, packed = b.keys[vid], b.anchors[vid]
            b_anchors = packed.replace("!", "").split() if b_strict else packed.split()
            if (b_anchors or a_anchors) and _conflict(a_words, a_strict, a_anchors, other_key,
                                                      b_strict, b_anchors):
                continue
            raw = ratio(key, other_key, score_cutoff=cutoff)
            if not raw:
                continue
            similarity = _capped(key, other_key, raw)
            if similarity >= threshold or (
                    a_anchors and b_anchors == a_anchors
                    and similarity >= threshold - AGREE_BONUS):
                return b.owner[vid]
        return None

    def add(self, bucket: Any, norm: Norm, cluster: int) -> None:
        """Index `norm` as a phrasing of `cluster` (a small int; up to MAX_VARIANTS each)."""
        self.add_packed(bucket, norm.key, norm.packed, cluster)

    def add_packed(self, bucket: Any, key: str, packed: str, cluster: int) -> None:
        """`add` for a phrasing as `phrasings` gives it back: its key and packed anchors."""
        b = self._bucket(bucket)
        if key not in b.exact:
            self._add(b, key, packed, cluster, set(key.split()))

    def _add(self, b: _Bucket, key: str, packed: str, cluster: int, words: set[str]) -> None:
        b.exact[key] = cluster
        variants = self._variants
        if cluster >= len(variants):
            variants.extend(bytes(cluster + 1 - len(variants) + 1024))
        if variants[cluster] >= MAX_VARIANTS:
            return
        variants[cluster] += 1
        vid = len(b.keys)
        b.keys.append(key)
        b.anchors.append(packed)
        b.strict.append(self._strict_of(packed))
        b.owner.append(cluster)
        df, postings = b.df, b.postings
        for w in words:
            df[w] = df.get(w, 0) + 1
            plist = postings[w]
            plist.append(vid)
            if len(plist) > 2 * POSTING_CAP:
                del plist[:-POSTING_CAP]

    def _strict_of(self, packed: str) -> tuple[str, ...]:
        """The strict words of packed anchors, as the tuple every variant with them shares."""
        if "!" not in packed:
            return ()
        marked = " ".join([w for w in packed.split() if w[0] == "!"])
        found = self._strict.get(marked)
        if found is None:
            found = self._strict[marked] = tuple([w[1:] for w in marked.split()])
        return found

    def _bucket(self, bucket: Any) -> _Bucket:
        b = self._buckets.get(bucket)
        if b is None:
            b = self._buckets[bucket] = _Bucket()
        return b

    def has(self, bucket: Any) -> bool:
        """Whether anything is indexed in `bucket`."""
        return bucket in self._buckets

    def buckets(self) -> list[Any]:
        """The buckets in use."""
        return list(self._buckets)

    def phrasings(self, bucket: Any) -> Iterator[tuple[int, str, str]]:
        """(cluster, key, packed anchors) of each phrasing indexed in `bucket`."""
        b = self._buckets[bucket]
        return zip(b.owner, b.keys, b.anchors, strict=True)

    def assign(self, bucket: Any, norm: Norm, new_cluster: int) -> int:
        """The cluster `norm` belongs to; `new_cluster` (now indexed) when none matches."""
        b = self._bucket(bucket)
        key = norm.key
        hit = b.exact.get(key)
        if hit is not None:
            return hit
        words = set(key.split())
        found = self._match(b, norm, words)
        cluster = new_cluster if found is None else found
        self._add(b, key, norm.packed, cluster, words)
        return cluster


class RecentTexts:
    """Exact texts seen lately, each with a value: a bounded memo.

    Keyed by a 64-bit hash to stay small (the odds of a collision among a million
    distinct texts are below one in ten million). Two generations of `cap` bound
    the memory and keep what recurs: a hit in the old one moves to the new. So it
    holds at least the last `cap` distinct keys touched, and at most the last 2 * `cap`.
    """

    __slots__ = ("_new", "_old", "_cap")

    def __init__(self, cap: int = SEEN_CAP) -> None:
        self._new: dict[int, Any] = {}
        self._old: dict[int, Any] = {}
        self._cap = cap

    def get(self, key: int) -> Any:
        """The value remembered under `key` (a hash), or None."""
        value = self._new.get(key)
        if value is None:
            value = self._old.get(key)
            if value is not None:
                self.put(key, value)
        return value

    def put(self, key: int, value: Any) -> None:
        if len(self._new) >= self._cap:
            self._old, self._new = self._new, {}
        self._new[key] = value


class Clusters:
    """Cluster ids handed out over one LessonIndex, so L3 and promotion share one clustering."""

    def __init__(self, threshold: float) -> None:
        self.index = LessonIndex(threshold)
        self.count = 0
        # (bucket, exact text) -> cluster: a note repeated word for word skips
        # normalising and matching
        self._seen = RecentTexts()

    def assign_text(self, bucket: Any, text: str) -> int:
        """The cluster `text` belongs to, a new one when none matches."""
        h = hash((bucket, text))
        cid = self._seen.get(h)
        if cid is None:
            cid = self.assign(bucket, normalize(text))
            self._seen.put(h, cid)
        return cid

    def assign(self, bucket: Any, norm: Norm) -> int:
        """The cluster `norm` belongs to, a new one when none matches."""
        cid = self.index.assign(bucket, norm, self.count)
        if cid == self.count:
            self.count += 1
        return cid

    def find(self, bucket: Any, norm: Norm) -> int | None:
        """The cluster `norm` belongs to, or None."""
        return self.index.find(bucket, norm)

    def new(self, bucket: Any, norm: Norm) -> int:
        """A new cluster for `norm`, never merged into an existing one."""
        cid = self.new_id()
        self.index.add(bucket, norm, cid)
        return cid

    def new_id(self) -> int:
        """A fresh cluster id with nothing indexed under it yet."""
        self.count += 1
        return self.count - 1
