"""When two notes say the same thing: the match rule and a blocked index.

Two texts are the same lesson when, normalised (`text.normalize`), their technical words
do not disagree and rapidfuzz scores them at the threshold or above (`_accept`):

- Anchors: the same command with another file, flag or value is another trick. Strict
  anchors (flags, numbers, subcommands) must be on both sides; for the others, the texts
  disagree when each has one the other lacks (seeds/ vs drizzle/).
- Score: `fuzz.token_set_ratio` on the normalised words, capped by `token_sort_ratio` when
  one text has less than half the words of the other (a short note would match every
  longer one holding its words); AGREE_BONUS points less when both name the same anchors.
- Sure: a pair where each side has a word the other lacks ("npm cache needs a writable
  folder", "uv cache needs ...") is a swap, a paraphrase or another lesson: the rules keep
  it apart (precision first), and a judge (`judge`) decides it, with any pair the anchors
  veto, among the note's most similar lessons (`shortlist.pool_of`). `same_lesson`, for
  texts no judge sees (identity lines, a model's rewrite), does not refuse a swap.

The index never compares a text with every other: per bucket (role and kind), each word
and signature (`text.Norm`) has its recent phrasings, and a query scores only a short list
of those (`shortlist`), stopping at the first match.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rapidfuzz import fuzz

from harness.curator.judge import Judgments
from harness.curator.lessonstore import Bucket, LessonStore, Variant
from harness.curator.shortlist import POSTING_CAP, pool_of, shortlist_of
from harness.curator.text import Norm, normalize

MAX_VARIANTS = 2  # phrasings indexed per cluster: more recall, bounded drift
LENGTH_FLOOR = 0.5  # shorter side must have at least half the words of the longer
AGREE_BONUS = 10.0  # same technical words on both sides: the prose may differ this much more


def same_lesson(a: str, b: str, threshold: float) -> bool:
    """Whether two note texts say the same thing at `threshold` (0-100)."""
    na, nb = normalize(a), normalize(b)
    return na.key == nb.key or _accept(na, set(na.key.split()), nb.key, nb.packed, threshold)


def _accept(a: Norm, a_words: set[str], b_key: str, b_packed: str, threshold: float) -> bool:
    """The match rule, for `a` (its words split) and `b` as the index keeps it (its key and
    packed anchors): the anchors do not conflict, and the score reaches `threshold`, or
    AGREE_BONUS less when both sides name the same anchors."""
    b_strict = [w[1:] for w in b_packed.split() if w[0] == "!"] if "!" in b_packed else []
    if not a_words.issuperset(b_strict):
        return False  # a flag, subcommand or number on b's side only
    a_anchors, b_anchors = a.anchors.split(), b_packed.replace("!", "").split()
    # b has a's strict words and, unless a has all of b's anchors, all of a's anchors
    needed = a.strict.split() if a_words.issuperset(b_anchors) else a_anchors
    if needed and not set(b_key.split()).issuperset(needed):
        return False
    cutoff = threshold - AGREE_BONUS if a_anchors and a_anchors == b_anchors else threshold
    raw = fuzz.token_set_ratio(a.key, b_key, score_cutoff=cutoff)  # under the cutoff: 0
    return bool(raw) and _capped(a.key, b_key, raw) >= cutoff


def _swapped(a_words: set[str], b_key: str) -> bool:
    """Whether each side has a word the other lacks (see the module docstring)."""
    b_words = set(b_key.split())
    return not (a_words <= b_words or b_words <= a_words)


def _near(a: Norm, a_words: set[str], b: Variant) -> bool:
    """Whether `a` may say what `b` says in other words: half the words of the two are
    common to both, and no flag, number or subcommand is on one side only."""
    b_words = set(b.key.split())
    b_strict = {w[1:] for w in b.packed.split() if w[0] == "!"}
    return (a_words >= b_strict and b_words.issuperset(a.strict.split())
            and 2 * len(a_words & b_words) >= len(a_words | b_words))


def _capped(a: str, b: str, raw: float) -> float:
    na, nb = a.count(" ") + 1, b.count(" ") + 1
    if min(na, nb) < LENGTH_FLOOR * max(na, nb):
        # a subset scores 100 under token_set_ratio; fall back to the whole-text ratio
        return min(raw, fuzz.token_sort_ratio(a, b))
    return raw


class LessonIndex:
    """Clusters of same-lesson texts per bucket (e.g. role and kind), found without all-pairs.

    A query scores only the few phrasings `shortlist` draws from its words' and signature's
    recent postings: bounded work whatever the number of clusters. The buckets a `store`
    covers are read from it as queries need them (`lessonstore`).
    """

    def __init__(self, threshold: float, *, anchored: bool = True, store: LessonStore | None = None,
                 sure: bool = True, near: bool = False, judge: Judgments | None = None) -> None:
        self.threshold = threshold
        self.anchored = anchored  # False: score alone decides (decision topics)
        self.sure = sure  # False: a swap of words is no reason to refuse (`same_lesson`)
        self.near = near  # True: what may say the same in other words joins too (`_near`)
        self.judge = judge  # answers about the notes left unsure, and questions (`judge`)
        self.store = store
        self.next_vid = 0 if store is None else store.first_vid
        self._buckets: dict[Any, Bucket] = {}
        self._variants: dict[int, int] = {}  # cluster id -> phrasings indexed

    def find(self, bucket: Any, norm: Norm, ask: bool = False) -> int | None:
        """The cluster id `norm` belongs to in `bucket`, or None; a judge is asked about
        the pairs it is unsure of when `ask` (see `judge`)."""
        if bucket not in self._buckets and not self._stored(bucket):
            return None
        b = self._faulted(bucket, norm.key, norm.signature)
        hit = b.exact.get(norm.key)
        if hit is not None:
            return hit  # before splitting: most queries of a big log are exact repeats
        return self._match(b, norm, set(norm.key.split()), ask)

    def assign(self, bucket: Any, norm: Norm, new_cluster: int) -> int:
        """The cluster `norm` belongs to; `new_cluster` (now indexed) when none matches."""
        b = self._faulted(bucket, norm.key, norm.signature)
        hit = b.exact.get(norm.key)
        if hit is not None:
            return hit  # as in `find`
        words = set(norm.key.split())
        found = self._match(b, norm, words, ask=True)
        cluster = new_cluster if found is None else found
        self._add(b, norm, cluster, words)
        return cluster

    def add(self, bucket: Any, norm: Norm, cluster: int) -> None:
        """Index `norm` as a phrasing of `cluster` (a small int; up to MAX_VARIANTS each)."""
        b = self._faulted(bucket, norm.key, norm.signature)
        if norm.key not in b.exact:
            self._add(b, norm, cluster, set(norm.key.split()))

    def _match(self, b: Bucket, norm: Norm, a_words: set[str], ask: bool) -> int | None:
        a_anchors = norm.anchors.split() if self.anchored else []
        shortlist = shortlist_of(b, a_words, a_anchors, norm.signature if self.anchored else "")
        self._fault_variants(b, shortlist)
        for vid in shortlist:
            if self._joins(norm, a_words, b.variants[vid]):
                return b.variants[vid].owner
        judge = self.judge
        if not self.anchored or judge is None or not judge.wanted(b.name, norm.key, ask):
            return None
        pool = pool_of(b, a_words, a_anchors, norm.signature)
        self._fault_variants(b, pool)
        return judge.decide(b.name, norm, [(vid, b.variants[vid].key, b.variants[vid].owner)
                                           for vid in pool], ask, b.df)

    def _joins(self, norm: Norm, a_words: set[str], v: Variant) -> bool:
        """Whether the rule joins `norm` to the phrasing `v`, surely when `sure`."""
        if not self.anchored:
            return bool(fuzz.token_set_ratio(norm.key, v.key, score_cutoff=self.threshold))
        if self.near and _near(norm, a_words, v):
            return True
        return _accept(norm, a_words, v.key, v.packed, self.threshold) and not (
            self.sure and _swapped(a_words, v.key))

    def _add(self, b: Bucket, norm: Norm, cluster: int, words: set[str]) -> None:
        """Index a phrasing under its `words` and its signature (added to them)."""
        b.exact[norm.key] = cluster
        if not self._count_variant(b, cluster):
            return
        vid = self.next_vid
        self.next_vid += 1
        b.variants[vid] = Variant(norm.key, norm.packed, norm.signature, cluster)
        if norm.signature:
            words.add(norm.signature)
        for w in words:
            b.df[w] = b.df.get(w, 0) + 1
            plist = b.postings.setdefault(w, [])
            plist.append(vid)
            if len(plist) > 2 * POSTING_CAP:
                del plist[:-POSTING_CAP]

    def _count_variant(self, b: Bucket, cluster: int) -> bool:
        """Count one more phrasing of `cluster`: False when it has MAX_VARIANTS already."""
        count = self._variants.get(cluster)
        if count is None:
            count = self.store.variant_count(cluster) if b.stored else 0
        self._variants[cluster] = min(count + 1, MAX_VARIANTS)
        return count < MAX_VARIANTS

    def _stored(self, bucket: Any) -> bool:
        return self.store is not None and self.store.covers(bucket)

    def _bucket(self, bucket: Any) -> Bucket:
        b = self._buckets.get(bucket)
        if b is None:
            b = self._buckets[bucket] = Bucket(bucket, self._stored(bucket))
        return b

    def _faulted(self, bucket: Any, key: str, signature: str) -> Bucket:
        """The bucket, with what the store holds of a query of `key` read into it."""
        b = self._bucket(bucket)
        if b.stored and self.store.first_vid:
            self.store.fault(b, key, signature)
        return b

    def _fault_variants(self, b: Bucket, vids: list[int] | None) -> None:
        if b.stored and self.store.first_vid:
            self.store.fault_variants(b, vids)

    def has(self, bucket: Any) -> bool:
        """Whether anything is indexed in `bucket` (in memory)."""
        return bucket in self._buckets

    def buckets(self) -> list[Any]:
        """The buckets in use, here or in the store."""
        stored = self.store.buckets() if self.store is not None else []
        return list(dict.fromkeys([*self._buckets, *stored]))

    def phrasings(self, bucket: Any) -> Iterator[tuple[int, str, str]]:
        """(cluster, key, packed anchors) of each phrasing indexed in `bucket`, the store's
        too (for `explain`, which lists them)."""
        b = self._bucket(bucket)
        self._fault_variants(b, None)
        return ((v.owner, v.key, v.packed) for _, v in sorted(b.variants.items()))

    def stored_buckets(self) -> list[Bucket]:
        """The buckets the store keeps, for writing back what a pass added."""
        return [b for b in self._buckets.values() if b.stored]

