"""Hashes -> numbers for every text the raw.md pass has numbered (`scan.RawPass._ref`),
in about 16 bytes each.

A dict holds the latest RECENT; they are then merged into two sorted arrays (hashes and
their numbers), looked up by bisection. A dict of Python ints costs about 88 bytes an
entry: at 1M entries of bench/curator.py (237k texts) the reader process peaked at 61 MiB
with one, 43.5 MiB with this. Remembering only the recent texts took it to 37 MiB, but it
then spent 5-7 s more normalising the texts it had forgotten (2026-11-26).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from heapq import merge

RECENT = 1 << 15  # entries in the dict before they are merged into the arrays


class TextNumbers:
    """A map from 64-bit hashes to numbers that only grows."""

    def __init__(self) -> None:
        self._hashes = array("q")  # sorted
        self._numbers = array("q")  # the number of each hash in `_hashes`
        self._recent: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._hashes) + len(self._recent)

    def get(self, h: int) -> int | None:
        """The number of `h`, or None."""
        number = self._recent.get(h)
        if number is None:
            hashes = self._hashes
            i = bisect_left(hashes, h)
            if i < len(hashes) and hashes[i] == h:
                return self._numbers[i]
        return number

    def add(self, h: int, number: int) -> None:
        """Give `h` its `number` (`h` must not be in the map yet)."""
        self._recent[h] = number
        if len(self._recent) >= RECENT:
            self._merge()

    def _merge(self) -> None:
        hashes, numbers = array("q"), array("q")
        add_hash, add_number = hashes.append, numbers.append
        settled = zip(self._hashes, self._numbers, strict=True)
        for h, number in merge(settled, sorted(self._recent.items())):
            add_hash(h)
            add_number(number)
        self._hashes, self._numbers, self._recent = hashes, numbers, {}
