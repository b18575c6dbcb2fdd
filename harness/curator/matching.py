"""The match rule (`_joins`) and its blocked index (`shortlist_of`, `pool_of`): docs/curator.md."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator
from typing import Any

from rapidfuzz import fuzz

from harness.curator.judge import Judgments
from harness.curator.lessondb import POSTING_CAP, Bucket, LessonStore, Variant
from harness.curator.text import Norm, normalize

MAX_VARIANTS = 2  # phrasings indexed per cluster: more recall, bounded drift
LENGTH_FLOOR = 0.5  # shorter side must have at least half the words of the longer
AGREE_BONUS = 10.0  # same technical words on both sides: the prose may differ this much more
BLOCK_WORDS = 3  # a query looks up the variants under these many of its words only
SHORTLIST = 4  # variants sharing the most of those words get scored by rapidfuzz
POOL_WORDS = 5  # a judge's candidates come from under these many words (`pool_of`)
_STRICT = re.compile(r"!(\S+)")  # a flag, number or subcommand in `text.Norm.packed`


def same_lesson(a: str, b: str, threshold: float) -> bool:
    """Whether two note texts say the same thing at `threshold` (0-100)."""
    na, nb = normalize(a), normalize(b)
    return na.key == nb.key or _joins(na, set(na.key.split()), nb, threshold, sure=False)


def _joins(a: Norm, a_words: set[str], b: Norm | Variant, threshold: float, sure: bool = True,
           near: bool = False) -> bool:
    """The rule (docs/curator.md); `sure`: no swap joins; `near`: half the words shared join."""
    if "!" in b.packed and not a_words.issuperset(_STRICT.findall(b.packed)):
        return False
    b_words = set(b.key.split())
    if not b_words.issuperset(a.strict.split()):
        return False
    # |a & b| >= |a | b| / 2, as |a | b| = |a| + |b| - |a & b|
    if near and 3 * len(a_words & b_words) >= len(a_words) + len(b_words):
        return True
    a_anchors, b_anchors = a.anchors.split(), b.packed.replace("!", "").split()
    # unless a has all of b's anchors, b must have all of a's
    if not (a_words.issuperset(b_anchors) or b_words.issuperset(a_anchors)):
        return False
    if sure and not (a_words <= b_words or b_words <= a_words):
        return False  # a swap
    cutoff = threshold - AGREE_BONUS if a_anchors and a_anchors == b_anchors else threshold
    na, nb = a.key.count(" ") + 1, b.key.count(" ") + 1
    # token_set_ratio: 0 under the cutoff, 100 for a subset; the whole-text ratio caps a short side
    return bool(fuzz.token_set_ratio(a.key, b.key, score_cutoff=cutoff)) and (
        min(na, nb) >= LENGTH_FLOOR * max(na, nb) or fuzz.token_sort_ratio(a.key, b.key) >= cutoff)


class LessonIndex:
    """Clusters of same-lesson texts per bucket, found without all-pairs, over a `store`."""

    def __init__(self, threshold: float, *, anchored: bool = True, store: LessonStore | None = None,
                 sure: bool = True, near: bool = False, judge: Judgments | None = None) -> None:
        self.threshold = threshold
        self.anchored = anchored  # False: score alone decides (decision topics)
        self.sure = sure  # False: a swap of words is no reason to refuse (`same_lesson`)
        self.near = near  # True: what may say the same in other words joins too (`_joins`)
        self.judge = judge  # answers about the notes left unsure, and questions (`judge`)
        self.store = store
        self.next_vid = 0 if store is None else store.first_vid
        self._buckets: dict[Any, Bucket] = {}
        self._variants: dict[int, int] = {}  # cluster id -> phrasings indexed

    def find(self, bucket: Any, norm: Norm, ask: bool = False) -> int | None:
        """The cluster id `norm` belongs to in `bucket`, or None; `ask`: a judge may be asked."""
        if not (bucket in self._buckets or self.store and self.store.covers(bucket)):
            return None
        b = self._bucket(bucket, norm)
        hit = b.exact.get(norm.key)  # most queries of a big log are exact repeats
        return self._match(b, norm, set(norm.key.split()), ask) if hit is None else hit

    def assign(self, bucket: Any, norm: Norm, cluster: int, match: bool = True) -> int:
        """The cluster `norm` belongs to (unless not `match`), or `cluster`, now indexed."""
        b = self._bucket(bucket, norm)
        if norm.key in b.exact:
            return b.exact[norm.key]
        words = set(norm.key.split())
        if match and (found := self._match(b, norm, words, ask=True)) is not None:
            cluster = found
        b.exact[norm.key] = cluster
        if cluster not in self._variants:
            self._variants[cluster] = self.store.variant_count(cluster) if b.stored else 0
        if self._variants[cluster] >= MAX_VARIANTS:
            return cluster
        self._variants[cluster] += 1
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
        return cluster

    def add(self, bucket: Any, norm: Norm, cluster: int) -> None:
        """Index `norm` as a phrasing of `cluster` (a small int; up to MAX_VARIANTS each)."""
        self.assign(bucket, norm, cluster, match=False)

    def _match(self, b: Bucket, norm: Norm, a_words: set[str], ask: bool) -> int | None:
        a_anchors = norm.anchors.split() if self.anchored else []
        shortlist = shortlist_of(b, a_words, a_anchors, norm.signature if self.anchored else "")
        for v in self._read(b, shortlist):
            if (_joins(norm, a_words, v, self.threshold, self.sure, self.near) if self.anchored
                    else fuzz.token_set_ratio(norm.key, v.key, score_cutoff=self.threshold)):
                return v.owner
        if self.judge is None or not (self.judge.about(b.name, norm.key)
                                      or ask and self.judge.asking(b.name, norm.key)):
            return None  # no pool for a note it has no answer about and asks no more about
        pool = pool_of(b, a_words, a_anchors, norm.signature)
        return self.judge.decide(b.name, norm, self._read(b, pool), ask, b.df)

    def _bucket(self, bucket: Any, query: Norm | None = None) -> Bucket:
        b = self._buckets.get(bucket)
        if b is None:
            stored = self.store is not None and self.store.covers(bucket)
            b = self._buckets[bucket] = Bucket(bucket, stored)
        if query is not None and b.stored and self.store.first_vid:
            self.store.fault(b, query.key, query.signature)
        return b

    def _read(self, b: Bucket, vids: list[int] | None) -> list[Variant]:
        if b.stored and self.store.first_vid:
            self.store.fault_variants(b, vids)
        return [b.variants[vid] for vid in (sorted(b.variants) if vids is None else vids)]

    def has(self, bucket: Any) -> bool:
        """Whether anything is indexed in `bucket` (in memory)."""
        return bucket in self._buckets

    def buckets(self) -> list[Any]:
        """The buckets in use, here or in the store."""
        return list(dict.fromkeys([*self._buckets, *(self.store.buckets() if self.store else [])]))

    def phrasings(self, bucket: Any) -> Iterator[tuple[int, str, str]]:
        """(cluster, key, packed anchors) of each phrasing in `bucket`, the store's too."""
        return ((v.owner, v.key, v.packed) for v in self._read(self._bucket(bucket), None))

    def stored_buckets(self) -> list[Bucket]:
        """The buckets the store keeps, for writing back what a pass added."""
        return [b for b in self._buckets.values() if b.stored]


def block_words(b: Bucket, words: set[str], anchors: Collection[str], signature: str,
                limit: int) -> list[str]:
    """`signature` if filed, the `limit` rarest `anchors`, then `words`; ties by word, not seed."""
    get = b.df.get
    counted = sorted([(n, w) for w in anchors if (n := get(w))])[:limit]
    if len(counted) < limit:
        counted += sorted([(n, w) for w in words if (n := get(w)) and w not in anchors])
    return [signature] * (signature in b.postings) + [w for _, w in counted[:limit]]


def shortlist_of(b: Bucket, words: set[str], anchors: Collection[str], signature: str) -> list[int]:
    """Recent variants under 3 `block_words`, best first (weights 4, 2, 1; ties: first seen)."""
    score: dict[int, int] = {}
    filed = block_words(b, words, anchors, signature, BLOCK_WORDS)
    for weight, w in zip((4, 2, 1), filed, strict=False):
        for vid in b.postings[w][-POSTING_CAP:]:
            score[vid] = score.get(vid, 0) + weight
    return sorted(score, key=score.__getitem__, reverse=True)[:SHORTLIST]  # reverse: stable


def pool_of(b: Bucket, words: set[str], anchors: Collection[str], signature: str) -> list[int]:
    """A judge's candidates: the recent variants under the `signature` or POOL_WORDS words."""
    filed = block_words(b, words, anchors, signature, POOL_WORDS)
    return list(dict.fromkeys(vid for w in filed for vid in reversed(b.postings[w][-POSTING_CAP:])))
