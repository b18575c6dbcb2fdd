"""When two notes say the same thing: the match rule and a blocked index.

Two texts are the same lesson when, after normalisation (`text.normalize`), their
technical words do not disagree and rapidfuzz scores them at or above the threshold
(`_accept`, the one rule):

- Anchors: same command with another file, flag or value is another trick. Strict
  anchors (flags, numbers, subcommands) must appear on both sides; for the others,
  the texts disagree when each has one the other lacks (seeds/ vs drizzle/).
- Score: `fuzz.token_set_ratio` on the normalised words (order-free, tolerant of
  a few extra or missing words), capped by `token_sort_ratio` when one text has
  less than half the words of the other, so a short note does not match every
  longer one that contains its words. When both sides name exactly the same
  anchors, the prose may differ by AGREE_BONUS points more.

- Sure: the rule joins only what it is sure of. A pair where each side has a word the
  other lacks ("npm cache needs a writable folder" and "uv cache needs ...") is a
  swap: maybe a paraphrase, maybe another lesson with one name changed. The rules keep
  such pairs apart (precision first); a judge (`judge`) decides them, with any pair the
  anchors veto, among the note's most similar lessons (`shortlist.pool_of`).
  `same_lesson` is the rule's score alone, for texts that need no judge (identity lines,
  a model's rewrite): there, a swap is not refused.

The index never compares a text with every other: each bucket (role and kind)
keeps an inverted index word -> recent variants, each variant filed under its
signature too (`text.Norm`), and a query scores only a short list drawn from the
postings of its signature and its rarest words, technical ones first
(`shortlist`), stopping at the first match. A text seen before word for
word skips all that (`clusters.Clusters`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
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
    return na.key == nb.key or _accept(na.key, set(na.key.split()), na.strict.split(),
                                       na.anchors.split(), nb.key, nb.strict.split(),
                                       nb.anchors.split(), threshold)


def _accept(a_key: str, a_words: set[str], a_strict: list[str], a_anchors: list[str],
            b_key: str, b_strict: Sequence[str], b_anchors: list[str], threshold: float) -> bool:
    """The match rule: the anchors do not conflict, and the score reaches `threshold`, or
    AGREE_BONUS less when both sides name the same anchors. Each side comes split as the
    index keeps it: key, (a's) words, strict words and anchors."""
    if (a_anchors or b_anchors) and _conflict(a_words, a_strict, a_anchors, b_key, b_strict,
                                              b_anchors):
        return False
    return _scores(a_key, a_anchors, b_key, b_anchors, threshold)


def _scores(a_key: str, a_anchors: list[str], b_key: str, b_anchors: list[str],
            threshold: float) -> bool:
    """The rule's score part: rapidfuzz reaches the cutoff (see `_accept`)."""
    cutoff = threshold - AGREE_BONUS if a_anchors and a_anchors == b_anchors else threshold
    # a score under the cutoff comes back as 0, before any capping is worked out
    raw = fuzz.token_set_ratio(a_key, b_key, score_cutoff=cutoff)
    return bool(raw) and _capped(a_key, b_key, raw) >= cutoff


def _conflict(a_words: set[str], a_strict: list[str], a_anchors: list[str], b_key: str,
              b_strict: Sequence[str], b_anchors: list[str]) -> bool:
    # (b has all of a's strict words, a all of b's) and (b has all of a's anchors, or a all
    # of b's), tested so that b's words are split only when needed. Strict words are anchors.
    if not a_words.issuperset(b_strict):
        return True  # a flag, subcommand or number on one side only
    needed = a_strict if a_words.issuperset(b_anchors) else a_anchors
    return bool(needed) and not set(b_key.split()).issuperset(needed)


def _swapped(a_words: set[str], b_key: str) -> bool:
    """Whether each side has a word the other lacks (see the module docstring)."""
    b_words = set(b_key.split())
    return not (a_words <= b_words or b_words <= a_words)


def _capped(a: str, b: str, raw: float) -> float:
    na, nb = a.count(" ") + 1, b.count(" ") + 1
    if min(na, nb) < LENGTH_FLOOR * max(na, nb):
        # a subset scores 100 under token_set_ratio; fall back to the whole-text ratio
        return min(raw, fuzz.token_sort_ratio(a, b))
    return raw


class LessonIndex:
    """Clusters of same-lesson texts per bucket (e.g. role and kind), found without all-pairs.

    A query looks only at the variants filed under its signature and its BLOCK_WORDS block
    words, technical ones first (the most recent POSTING_CAP each), shortlists up to
    SHORTLIST that share the most of those words, and scores just those: the work per query
    is bounded whatever the number of clusters. The buckets a `store` covers are read from
    it as queries need them (`lessondb`).
    """

    def __init__(self, threshold: float, *, anchored: bool = True, store: LessonStore | None = None,
                 sure: bool = True, judge: Judgments | None = None) -> None:
        self.threshold = threshold
        self.anchored = anchored  # False: score alone decides (decision topics)
        self.sure = sure  # False: a swap of words is no reason to refuse (`same_lesson`)
        self.judge = judge  # answers about the notes left unsure, and questions (`judge`)
        self.store = store
        self.next_vid = 0 if store is None else store.next_vid
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
            if self._joins(norm, a_words, a_anchors, b.variants[vid]):
                return b.variants[vid].owner
        judge = self.judge
        if not self.anchored or judge is None or not judge.wanted(b.name, norm.key, ask):
            return None
        pool = pool_of(b, a_words, a_anchors, norm.signature)
        self._fault_variants(b, pool)
        return judge.decide(b.name, norm, [(vid, b.variants[vid].key, b.variants[vid].owner)
                                           for vid in pool], ask, b.df)

    def _joins(self, norm: Norm, a_words: set[str], a_anchors: list[str], v: Variant) -> bool:
        """Whether the rule joins `norm` to the phrasing `v`, surely when `sure`."""
        if not self.anchored:
            return bool(fuzz.token_set_ratio(norm.key, v.key, score_cutoff=self.threshold))
        packed = v.packed
        b_strict = [w[1:] for w in packed.split() if w[0] == "!"] if "!" in packed else []
        if not a_words.issuperset(b_strict):
            return False  # what `_conflict` finds first, before the anchors are split
        b_anchors = packed.replace("!", "").split()
        return _accept(norm.key, a_words, norm.strict.split(), a_anchors, v.key, b_strict,
                       b_anchors, self.threshold) and not (self.sure
                                                           and _swapped(a_words, v.key))

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
        if b.stored:
            b.dirty |= words

    def _count_variant(self, b: Bucket, cluster: int) -> bool:
        """Count one more phrasing of `cluster`: False when it has MAX_VARIANTS already."""
        count = self._variants.get(cluster)
        if count is None:
            count = self.store.variant_count(cluster) if b.stored else 0  # type: ignore
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
        if b.stored and self.store.first_vid:  # type: ignore[union-attr]
            self.store.fault(b, key, signature)  # type: ignore[union-attr]
        return b

    def _fault_variants(self, b: Bucket, vids: list[int] | None) -> None:
        if b.stored and self.store.first_vid:  # type: ignore[union-attr]
            self.store.fault_variants(b, vids)  # type: ignore[union-attr]

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

