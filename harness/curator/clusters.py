"""Cluster ids over one `matching.LessonIndex`, so L3 and promotion share one clustering."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from harness.curator.matching import LessonIndex, Source
from harness.curator.text import Norm, normalize


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
        self._seen: dict[tuple[Any, str], int] = {}
        # (bucket, key) -> the first text normalised to `key`: what a phrasing or a judge's
        # answer is recorded with, so that a new normaliser can key it again (`curatordb`)
        self.texts: dict[tuple[Any, str], str] = {}

    def assign_text(self, bucket: Any, text: str) -> int:
        """The cluster `text` belongs to, a new one when none matches."""
        cid = self._seen.get((bucket, text))
        if cid is None:
            norm = normalize(text)
            cid = self._seen[bucket, text] = self.assign(bucket, norm)
            self.texts.setdefault((bucket, norm.key), text)
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
