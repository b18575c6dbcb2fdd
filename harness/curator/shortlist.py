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
from typing import Any

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


def shortlist_of(b: Any, words: set[str], anchors: Collection[str] = (),
                 signature: str = "") -> list[int]:
    """Recent variants filed under the `signature` of a query, if any is, and under its
    `block_words` (the first two then), best first.

    A variant counts 4 for the first of those words it is filed under, 2 for
    the next and 1 for the third, so the first shared word decides first; ties
    keep posting order. (Every variant under the first word outranks the rest,
    which is what lets this skip counting.)
    """
    counted = block_words(b.df, words, anchors)
    postings = b.postings
    if signature in postings:  # its postings are a tuple (`Bucket.postings`)
        counted = [(0, signature), *counted[:BLOCK_WORDS - 1]]
        first = list(postings[signature])
    elif not counted:
        return []
    else:
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


def pool_of(b: Any, words: set[str], anchors: Collection[str] = (),
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
