"""A second opinion on "same lesson", for pairs the rapidfuzz rule refuses (`matching`).

Paraphrases written by different agents share a few rare words (a flag, a file, a
subcommand) and little else, so the rule's whole-text score misses them. This scores
a pair by how much of the query's weight, each word weighted by its rarity in the
bucket, the two texts share, with boosted decision trees over the overlap features
below (`features`). The trees were fitted on the development corpora by
`bench/matcher_train.py` and are read from `pair_model.json`; the match rule's
conflicts (another flag, file or subcommand) still veto a pair before it is scored.

Rarity uses only the query's words' counts, which the index always has (a lesson
database faults in just those), so a pair scores the same in memory and from disk.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from rapidfuzz import fuzz

MODEL = Path(__file__).with_name("pair_model.json")
THRESHOLD = 0.9  # chosen on the development corpora, one left out at a time

FEATURES = (
    "shared weight / query weight", "shared words / other's words",
    "shared anchor weight / query anchor weight", "shared anchors / other's anchors",
    "shared anchors (of 4)", "shared words (of 8)", "token set ratio", "token sort ratio",
    "rarest shared word", "rarest shared anchor", "anchors on one side only (of 4)",
    "shared strict words (of 3)", "strict words on one side only (of 3)",
    "length difference (of 30 words)",
)


def rarity(df: int) -> float:
    """A word's weight from how many phrasings in the bucket hold it: 1 for a new word."""
    return 1.0 / (1.0 + math.log1p(df))


def weights(a_words: set[str], df: Callable[[str], int]) -> dict[str, float]:
    """Each query word's `rarity`, from `df`, its count in the bucket (one query, any pair)."""
    return {w: rarity(df(w)) for w in a_words}


def features(a_key: str, a_words: set[str], a_anchors: set[str], a_strict: set[str],
             b_key: str, b_anchors: set[str], b_strict: set[str],
             weight: dict[str, float]) -> list[float]:
    """The pair's overlap features (FEATURES), query `a` against indexed `b`; `weight` is
    `weights` of the query's words."""
    b_words = set(b_key.split())
    shared, shared_anchors = a_words & b_words, a_anchors & b_anchors
    total = sum(weight.values()) or 1.0
    anchor_total = sum(weight.get(w, 1.0) for w in a_anchors)
    return [
        sum(weight[w] for w in shared) / total,
        len(shared) / max(len(b_words), 1),
        (sum(weight.get(w, 1.0) for w in shared_anchors) / anchor_total
         if shared_anchors else 0.0),
        len(shared_anchors) / len(b_anchors) if shared_anchors else 0.0,
        min(len(shared_anchors), 4) / 4,
        min(len(shared), 8) / 8,
        fuzz.token_set_ratio(a_key, b_key) / 100,
        fuzz.token_sort_ratio(a_key, b_key) / 100,
        max((weight[w] for w in shared), default=0.0),
        max((weight.get(w, 1.0) for w in shared_anchors), default=0.0),
        min(len(a_anchors - b_anchors), len(b_anchors - a_anchors), 4) / 4,
        min(len(a_strict & b_strict), 3) / 3,
        min(len(a_strict - b_strict), len(b_strict - a_strict), 3) / 3,
        min(abs(len(a_words) - len(b_words)), 30) / 30,
    ]


class PairModel:
    """Boosted trees: each node is [feature, cut, left, right], each leaf a number."""

    def __init__(self, trees: list, rate: float) -> None:
        self.trees, self.rate = trees, rate

    @classmethod
    def from_json(cls, text: str) -> PairModel:
        data = json.loads(text)
        if data.get("features") != list(FEATURES):
            raise ValueError("pair_model.json was fitted on other features; "
                             "rerun bench/matcher_train.py")
        return cls(data["trees"], data["rate"])

    def margin(self, x: list[float]) -> float:
        """The log-odds that the pair is one lesson."""
        total = 0.0
        for node in self.trees:
            while isinstance(node, list):
                node = node[2] if x[node[0]] <= node[1] else node[3]
            total += node
        return total * self.rate

    def same(self, x: list[float], threshold: float = THRESHOLD) -> bool:
        """Whether the pair's probability of being one lesson reaches `threshold`."""
        return self.margin(x) >= log_odds(threshold)


def log_odds(probability: float) -> float:
    return math.log(probability / (1.0 - probability))


@lru_cache(maxsize=1)
def model() -> PairModel:
    """The fitted model shipped with the curator."""
    return PairModel.from_json(MODEL.read_text())


def second_opinion(a_key: str, a_words: set[str], a_anchors: list[str], a_strict: list[str],
                   refused: list[tuple], df: dict[str, int]) -> int | None:
    """Of the (id, key, anchors, strict words) the rule refused without a conflict, the id
    the model is surest says the query's lesson, if it reaches THRESHOLD; else None."""
    best = ranked(a_key, a_words, a_anchors, a_strict, refused, df, THRESHOLD)
    return best[0][1] if best else None


def ranked(a_key: str, a_words: set[str], a_anchors: list[str], a_strict: list[str],
           candidates: list[tuple], df: dict[str, int], floor: float) -> list[tuple[float, int]]:
    """Of (id, key, anchors, strict words) candidates, (margin, id) of those the model
    scores at probability `floor` or more, surest first (of equal ones, the later
    candidate)."""
    pairs, count = model(), df.get
    anchors, strict = set(a_anchors), set(a_strict)
    weight = weights(a_words, lambda w: count(w, 0))
    cut = log_odds(floor) if floor > 0 else -math.inf
    scored = []
    for vid, b_key, b_anchors, b_strict in candidates:
        margin = pairs.margin(features(a_key, a_words, anchors, strict, b_key, set(b_anchors),
                                       set(b_strict), weight))
        if margin >= cut:
            scored.append((margin, vid))
    scored.reverse()  # a stable sort then keeps the later of equal margins first
    return sorted(scored, key=lambda s: -s[0])
