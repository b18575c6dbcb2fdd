"""Which phrasings a query scores: the recent variants under its signature, its rarest
technical words, then its rarest other words (`matching`).

The signature (`text.Norm`: the terms that look technical by their shape, such as files,
flags and key=value) comes first because it finds the phrasings that name the same terms
however common each term is: at 100k entries of `bench/lessons.py` every term is in
hundreds of lessons, and the right phrasing was outside every word's window for 44% of
queries.

Technical words (`text.Norm.anchors`: flags, files, values, code) come first because a
lesson is told apart by them: a note's rarest prose words are as often its noise (what
went wrong first, a measured result) as its lesson, and the variants filed under noise
are other lessons'. On the development corpora, blocking on anchors first raised the
rules-only recall of four corpora and lowered none (`bench/judge_bound.py`).
"""

from __future__ import annotations

from collections.abc import Collection

from harness.curator.lessonstore import Bucket

BLOCK_WORDS = 3  # a query looks up the variants under these many of its words only
POSTING_CAP = 24  # per word, only the most recent variants are looked at
SHORTLIST = 4  # variants sharing the most of those words get scored by rapidfuzz
POOL_WORDS = 5  # a judge's candidates come from under these many words (`pool_of`)


def block_words(df: dict[str, int], words: set[str], anchors: Collection[str] = (),
                limit: int = BLOCK_WORDS) -> list[tuple[int, str]]:
    """(count, word) of the `limit` words a query looks up: the rarest of its
    `anchors` (a subset of `words`), then the rarest of its other words. Rarest first, ties
    by the word itself: a set's order changes with the hash seed."""
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
    postings = b.postings
    filed = [w for _, w in block_words(b.df, words, anchors, POOL_WORDS)]
    if signature in postings:
        filed.insert(0, signature)
    seen: set[int] = set()
    out = []
    for word in filed:
        for vid in reversed(postings[word][-POSTING_CAP:]):
            if vid not in seen:
                seen.add(vid)
                out.append(vid)
    return out
