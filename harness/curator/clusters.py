"""Cluster ids over one `matching.LessonIndex`, so L3 and promotion share one clustering."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from harness.curator.matching import LessonIndex, Source
from harness.curator.text import Norm, normalize

SEEN_CAP = 1 << 16  # exact texts remembered (per generation) to skip matching them again


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


class BatchSource(Source, Protocol):
    """A `matching.Source` that can look up many exact phrasings of a bucket in one go."""

    def prefetch(self, bucket: Any, keys: Iterable[str]) -> None: ...


class Clusters:
    """Cluster ids handed out over one LessonIndex, so L3 and promotion share one clustering."""

    def __init__(self, threshold: float, source: BatchSource | None = None) -> None:
        self.index = LessonIndex(threshold, source=source)
        self.source = source
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

    def expect(self, queries: Iterable[tuple[Any, str]]) -> None:
        """Let the source look up at once the exact phrasings (bucket, key) about to be
        found, one by one (a lazy iterable: not consumed without a source)."""
        if self.source is None:
            return
        keys: dict[Any, list[str]] = {}
        for bucket, key in queries:
            keys.setdefault(bucket, []).append(key)
        for bucket, bucket_keys in keys.items():
            self.source.prefetch(bucket, bucket_keys)

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
