"""When two notes say the same thing: the match rule and a blocked index.

Two normalised texts (`text.normalize`) are one lesson when their technical words agree and
rapidfuzz scores them at the threshold (`_accept`). A flag, number or subcommand on one side
only is another trick, and so is another file or value (seeds/ vs drizzle/). A short text
would match every longer one holding its words, so a much shorter side is scored whole. A
swap, each side with a word the other lacks, may be a paraphrase or another lesson: the rule
refuses it (precision first) and a judge (`judge`) decides among the most similar phrasings
(`pool_of`); `same_lesson`, for texts no judge sees, does not refuse it.

The index scores a query only against a short list (`shortlist_of`): the recent phrasings
filed under its signature (`text.Norm`), which name the same terms however common each is
(without it, 44% of `bench/lessons.py`'s queries missed at 100k), then under its rarest
technical words: its rarest prose words are as often its noise as its lesson (anchors first
raised rules-only recall on four corpora and lowered none, `bench/judge_bound.py`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import Any

from rapidfuzz import fuzz

from harness.curator.judge import Judgments
from harness.curator.lessonstore import Bucket, LessonStore, Variant
from harness.curator.text import Norm, normalize

MAX_VARIANTS = 2  # phrasings indexed per cluster: more recall, bounded drift
LENGTH_FLOOR = 0.5  # shorter side must have at least half the words of the longer
AGREE_BONUS = 10.0  # same technical words on both sides: the prose may differ this much more
BLOCK_WORDS = 3  # a query looks up the variants under these many of its words only
POSTING_CAP = 24  # per word, only the most recent variants are looked at
SHORTLIST = 4  # variants sharing the most of those words get scored by rapidfuzz
POOL_WORDS = 5  # a judge's candidates come from under these many words (`pool_of`)


def same_lesson(a: str, b: str, threshold: float) -> bool:
    """Whether two note texts say the same thing at `threshold` (0-100)."""
    na, nb = normalize(a), normalize(b)
    a_words = set(na.key.split())
    return na.key == nb.key or (_strict_in(a_words, nb.packed)
                                and _accept(na, a_words, nb, set(nb.key.split()), threshold))


def _strict_in(a_words: set[str], b_packed: str) -> bool:
    """Whether `a_words` hold each flag, subcommand and number of `b` (marked "!")."""
    return "!" not in b_packed or a_words.issuperset(
        [w[1:] for w in b_packed.split() if w[0] == "!"])


def _accept(a: Norm, a_words: set[str], b: Norm | Variant, b_words: set[str],
            threshold: float) -> bool:
    """The match rule for `a` and `b` (`b`'s strict words in `a`): the anchors do not
    conflict, and the score reaches `threshold`, or AGREE_BONUS less when both sides name
    the same anchors."""
    a_anchors, b_anchors = a.anchors.split(), b.packed.replace("!", "").split()
    # b has a's strict words and, unless a has all of b's anchors, all of a's anchors
    if not b_words.issuperset(a.strict.split() if a_words.issuperset(b_anchors) else a_anchors):
        return False
    cutoff = threshold - AGREE_BONUS if a_anchors and a_anchors == b_anchors else threshold
    raw = fuzz.token_set_ratio(a.key, b.key, score_cutoff=cutoff)  # under the cutoff: 0
    na, nb = a.key.count(" ") + 1, b.key.count(" ") + 1
    # a subset scores 100 under token_set_ratio: the whole-text ratio caps a short side's
    short = min(na, nb) < LENGTH_FLOOR * max(na, nb)
    return bool(raw) and (not short or fuzz.token_sort_ratio(a.key, b.key) >= cutoff)


def _near(a: Norm, a_words: set[str], b_words: set[str]) -> bool:
    """Whether `a` may say what `b` says in other words (`b`'s strict words in `a`): half
    the words of the two are common to both, and `b` has `a`'s strict words."""
    # |a & b| >= |a | b| / 2, as |a | b| = |a| + |b| - |a & b|
    return (3 * len(a_words & b_words) >= len(a_words) + len(b_words)
            and b_words.issuperset(a.strict.split()))


class LessonIndex:
    """Clusters of same-lesson texts per bucket (e.g. role and kind), found without all-pairs:
    a query scores its short list only, bounded work whatever the number of clusters. The
    buckets a `store` covers are read from it as queries need them (`lessonstore`)."""

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
        if bucket not in self._buckets and not (self.store is not None
                                                and self.store.covers(bucket)):
            return None
        b = self._bucket(bucket, norm)
        hit = b.exact.get(norm.key)  # most queries of a big log are exact repeats
        return self._match(b, norm, set(norm.key.split()), ask) if hit is None else hit

    def assign(self, bucket: Any, norm: Norm, new_cluster: int) -> int:
        """The cluster `norm` belongs to; `new_cluster` (now indexed) when none matches."""
        b = self._bucket(bucket, norm)
        hit = b.exact.get(norm.key)
        if hit is not None:
            return hit
        words = set(norm.key.split())
        found = self._match(b, norm, words, ask=True)
        cluster = new_cluster if found is None else found
        self._add(b, norm, cluster, words)
        return cluster

    def add(self, bucket: Any, norm: Norm, cluster: int) -> None:
        """Index `norm` as a phrasing of `cluster` (a small int; up to MAX_VARIANTS each)."""
        b = self._bucket(bucket, norm)
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
        if not _strict_in(a_words, v.packed):
            return False  # a flag, subcommand or number on v's side only
        b_words = set(v.key.split())
        if self.near and _near(norm, a_words, b_words):
            return True
        return _accept(norm, a_words, v, b_words, self.threshold) and not (
            self.sure and not (a_words <= b_words or b_words <= a_words))  # a swap

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
        df, postings = b.df, b.postings
        for w in words:
            df[w] = df.get(w, 0) + 1
            plist = postings.get(w)
            if plist is None:
                postings[w] = [vid]
            else:
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

    def _bucket(self, bucket: Any, query: Norm | None = None) -> Bucket:
        """The bucket, with what the store holds of a `query` read into it."""
        b = self._buckets.get(bucket)
        if b is None:
            stored = self.store is not None and self.store.covers(bucket)
            b = self._buckets[bucket] = Bucket(bucket, stored)
        if query is not None and b.stored and self.store.first_vid:
            self.store.fault(b, query.key, query.signature)
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
        """(cluster, key, packed anchors) of each phrasing in `bucket`, the store's too."""
        b = self._bucket(bucket)
        self._fault_variants(b, None)
        return ((v.owner, v.key, v.packed) for _, v in sorted(b.variants.items()))

    def stored_buckets(self) -> list[Bucket]:
        """The buckets the store keeps, for writing back what a pass added."""
        return [b for b in self._buckets.values() if b.stored]


def block_words(df: dict[str, int], words: set[str], anchors: Collection[str] = (),
                limit: int = BLOCK_WORDS) -> list[tuple[int, str]]:
    """(count, word) of the `limit` rarest of a query's `anchors` (a subset of `words`),
    then of its other words; ties by the word, as a set's order changes with the hash seed."""
    get = df.get
    counted = sorted([(n, w) for w in anchors if (n := get(w))])[:limit]
    if len(counted) < limit:
        others = sorted([(n, w) for w in words if (n := get(w)) and w not in anchors])
        counted += others[:limit - len(counted)]
    return counted


def shortlist_of(b: Bucket, words: set[str], anchors: Collection[str] = (),
                 signature: str = "") -> list[int]:
    """Recent variants filed under the `signature` of a query, if any is, and under its
    `block_words` (the first two then), best first: those under the first word (in posting
    order) ranked by whether they are under the second and the third too, then those under
    the second and the third, the second, and the third."""
    counted = [w for _, w in block_words(b.df, words, anchors)]
    if signature in b.postings:
        counted = [signature, *counted[:BLOCK_WORDS - 1]]
    first, second, third = [*(b.postings[w][-POSTING_CAP:] for w in counted), [], [], []][:3]
    in_second, in_third = set(second), set(third)
    best = sorted(first, key=lambda v: (v not in in_second, v not in in_third))
    if len(best) < SHORTLIST:
        in_first = set(first)
        best += sorted((v for v in second if v not in in_first), key=lambda v: v not in in_third)
        best += [v for v in third if v not in in_first and v not in in_second]
    return best[:SHORTLIST]


def pool_of(b: Bucket, words: set[str], anchors: Collection[str] = (),
            signature: str = "") -> list[int]:
    """A judge's candidates for a query (`judge.decide`): every recent variant filed
    under its signature or one of its POOL_WORDS rarest words, most recent first."""
    filed = [w for _, w in block_words(b.df, words, anchors, POOL_WORDS)]
    if signature in b.postings:
        filed.insert(0, signature)
    recent = (vid for w in filed for vid in reversed(b.postings[w][-POSTING_CAP:]))
    return list(dict.fromkeys(recent))
