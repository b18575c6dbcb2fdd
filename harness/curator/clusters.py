"""Cluster ids MEMORY.md and promotion share (`Clusters`), and the lessons (`PromotionTracker`)."""

from __future__ import annotations

from typing import Any

from harness.curator.lessonstore import LessonStore, rule
from harness.curator.matching import LessonIndex
from harness.curator.promotion import Evidence
from harness.curator.record import Candidate
from harness.curator.text import Norm, normalize


class Clusters:
    """Cluster ids over one LessonIndex; `count` is the next new one."""

    def __init__(self, threshold: float, store: LessonStore | None = None) -> None:
        self.index = LessonIndex(threshold, store=store)
        self.count = 0
        self._seen: dict[tuple[Any, str], int] = {}  # a repeated text skips normalising
        # (bucket, key) -> the first text normalised to `key`: a phrasing or a judge's answer
        # is recorded with it, so that a new normaliser can key it again (`curatordb`)
        self.texts: dict[tuple[Any, str], str] = {}

    def assign_text(self, bucket: Any, text: str) -> int:
        """The cluster `text` belongs to, a new one when none matches."""
        cid = self._seen.get((bucket, text))
        if cid is None:
            norm = normalize(text)
            cid = self._seen[bucket, text] = self.index.assign(bucket, norm, self.count)
            if cid == self.count:
                self.count += 1
            self.texts.setdefault((bucket, norm.key), text)
        return cid

    def find(self, bucket: Any, norm: Norm) -> int | None:
        """The cluster `norm` belongs to, or None."""
        return self.index.find(bucket, norm)

    def new(self, bucket: Any, norm: Norm) -> int:
        """A new cluster for `norm`, never merged into an existing one."""
        self.count += 1
        self.index.add(bucket, norm, self.count - 1)
        return self.count - 1


class PromotionTracker:
    """Candidates clustered into lessons per role and kind, over the lessons of `store`."""

    def __init__(self, similarity: float, store: LessonStore | None = None) -> None:
        self.store = store or LessonStore(rule(similarity))
        self.clusters = Clusters(similarity, store=self.store)
        self.clusters.count = self.store.first_cluster
        self.lessons: dict[int, Evidence] = {}  # cluster id -> evidence, as read or noted
        self.noted: set[int] = set()  # clusters given a note in this pass

    def add(self, c: Candidate, cluster: int | None = None) -> Evidence:
        """File one candidate under its lesson; `cluster` if the caller already matched it."""
        if cluster is None:
            cluster = self.clusters.assign_text((c.role, c.kind), c.text)
        return self.note(cluster, c.role, c.kind, c.text, c.ts[:10], c.ts, c.mission,
                         c.feature, c.run)

    def note(self, cluster: int, role: str, kind: str, text: str, day: str, ts: str,
             mission: str, feature: str, run: str | None) -> Evidence:
        """`add` for a note matched to `cluster` already, given by its fields."""
        ev = self.lesson(cluster) or self.lessons.setdefault(cluster, Evidence(role, kind, text))
        ev.note(day, ts, mission, feature, run)
        self.noted.add(cluster)
        return ev

    def lesson(self, cluster: int) -> Evidence | None:
        """The evidence of `cluster`, read from the store the first time; None if none."""
        ev = self.lessons.get(cluster)
        if ev is None and (row := self.store.lesson_row(cluster)) is not None:
            ev = self.lessons[cluster] = Evidence.from_row(row)
        return ev

    def text_of(self, cluster: int) -> str | None:
        """The text a lesson is known by (its first note's), or None when it has none."""
        return None if (ev := self.lesson(cluster)) is None else ev.text

    def due(self) -> list[Evidence]:
        """Lessons noted in this pass whose rule holds, in cluster order (one only read was planned
        when it became due; a line deleted from identity stays out until noted again)."""
        return [ev for cid in sorted(self.noted) if (ev := self.lessons[cid]).due()]
