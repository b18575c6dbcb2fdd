"""Lessons (notes clustered by `PromotionTracker`) and which have earned a line in
identity/<role>.md: the rules and the line are in docs/curator.md."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.curator import curatordb, lessondb
from harness.curator.identity import IdentityIndex, listed_values, provenance
from harness.curator.judge import Judgments
from harness.curator.matching import LessonIndex
from harness.curator.record import Candidate, read_record
from harness.curator.text import Norm, normalize

LISTED = 3  # provenance values listed per field; the count stays exact
_BITS = {"missions": 1, "features": 2, "runs": 4}  # `Evidence.more`: values were dropped


@dataclass(eq=False, slots=True)
class Evidence:
    """One lesson's notes, stored as `row()`; worker, occasion and mission: its first run's."""

    role: str
    kind: str
    text: str
    count: int = 0
    first: str = ""  # dates
    last: str = ""
    missions: tuple[str, ...] = ()
    features: tuple[str, ...] = ()
    runs: tuple[str, ...] = ()
    more: int = 0  # _BITS
    worker: str = ""  # a person's notes (no run) are counted and listed, but none of these
    two_workers: bool = False
    occasion: str = ""
    two_occasions: bool = False
    sourced: str = ""
    two_missions: bool = False

    def note(self, day: str, mission: str, feature: str, run: str | None) -> None:
        """Count one more note of this lesson, of `day` (yyyy-mm-dd)."""
        self.first = min(self.first or day, day)
        self.last = max(self.last, day)
        self.count += 1
        # missions and features recur in many lessons: each kept as one string
        mission, feature = sys.intern(mission), sys.intern(feature)
        self.missions = self._listed(self.missions, mission, 1)
        self.features = self._listed(self.features, feature, 2)
        if not run:
            return
        self.runs = self._listed(self.runs, run, 4)
        if not self.occasion:
            self.worker, self.occasion, self.sourced = feature, run, mission
            return
        self.two_workers = self.two_workers or mission != self.sourced or feature != self.worker
        self.two_occasions = self.two_occasions or mission != self.sourced or run != self.occasion
        self.two_missions = self.two_missions or mission != self.sourced

    def _listed(self, values: tuple[str, ...], value: str, bit: int) -> tuple[str, ...]:
        if value in values:
            return values
        if len(values) < LISTED:
            return (*values, value)
        self.more |= bit
        return values

    def row(self) -> list:
        """The evidence as a JSON-ready list, its fields in order."""
        return [getattr(self, name) for name in self.__slots__]

    @classmethod
    def from_row(cls, row: list) -> Evidence:
        return cls(*(tuple(v) if isinstance(v, list) else v for v in row))

    def due(self) -> bool:
        """Whether the promotion rule for this kind holds."""
        return {"TRICK": self.two_workers, "FAIL": self.two_missions,
                "FORGOT": self.two_occasions}.get(self.kind, False)

    def show(self, name: str) -> str:
        """One provenance field as listed, `...` when some values were dropped."""
        return ", ".join(getattr(self, name)) + (", ..." if self.more & _BITS[name] else "")


class PromotionTracker:
    """Notes clustered into lessons per role and kind over `store`; MEMORY.md shares the ids."""

    def __init__(self, similarity: float, store: lessondb.LessonStore | None = None) -> None:
        self.store = store or lessondb.LessonStore(similarity)
        self.index = LessonIndex(similarity, store=self.store)
        self.count = self.store.first_cluster  # the next new cluster id
        self._seen: dict[tuple[Any, str], int] = {}  # a repeated text skips normalising
        # (bucket, key) -> the first text normalised to `key`: the words a judge is shown, and
        # recorded with a phrasing or an answer so that a new normaliser can key it again
        self.texts: dict[tuple[Any, str], str] = {}
        self.lessons: dict[int, Evidence] = {}  # cluster id -> evidence, as read or noted
        self.noted: set[int] = set()  # clusters given a note in this pass

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

    def add(self, c: Candidate, cluster: int | None = None) -> None:
        """File one candidate under its lesson; `cluster` if the caller already matched it."""
        if cluster is None:
            cluster = self.assign_text((c.role, c.kind), c.text)
        ev = self.lesson(cluster)
        if ev is None:
            ev = self.lessons[cluster] = Evidence(c.role, c.kind, c.text)
        ev.note(c.ts[:10], c.mission, c.feature, c.run)
        self.noted.add(cluster)

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


def load(identity: Path, similarity: float, judge: Judgments, *, write: bool = True,
         said: list[str] | None = None) -> PromotionTracker:
    """A tracker over the stored lessons and the record past them, clustered with `judge` if it
    has anything to say (given the recorded answers here); `write=False` changes nothing."""
    store = lessondb.open_store(identity, similarity, write=write, said=said)
    tracker = PromotionTracker(similarity, store)
    judge.recorded = curatordb.recorded_answers(store.conn)
    if judge.active():
        tracker.index.judge = judge
    for candidate in read_record(identity, store.read):
        tracker.add(candidate)
    return tracker


@dataclass
class Promotion:
    """A lesson to append to identity/<role>.md: its words and the evidence that earned it."""

    role: str
    kind: str
    text: str
    evidence: Evidence
    promoted_on: str

    @property
    def line(self) -> str:
        """The identity line (made when asked: a big first run may promote many)."""
        ev = self.evidence
        seen = ev.first if ev.first == ev.last else f"{ev.first}..{ev.last}"
        runs = f"; runs: {ev.show('runs')}" if ev.runs else ""
        return (f"- {self.kind}: {self.text} [promoted {self.promoted_on}; seen {ev.count}x "
                f"{seen}; missions: {ev.show('missions')}; features: {ev.show('features')}{runs}]")


def plan_promotions(due: Iterable[Evidence], identity: IdentityIndex,
                    promoted_on: str) -> list[Promotion]:
    """The due lessons that neither identity nor an earlier promotion holds (`returning`)."""
    out, returned = [], set()
    for ev in due:
        if identity.knows(ev.role, ev.text):
            continue
        archived = identity.archived_line_of(ev.role, ev.kind, ev.text)
        if archived is not None and archived in returned:
            continue  # another due lesson of this pass brought it back already
        returned.add(archived)
        out.append(returning(ev, archived, promoted_on))
        identity.add(ev.role, ev.text, out[-1].line)
    return out


def returning(ev: Evidence, line: str | None, promoted_on: str) -> Promotion:
    """A due lesson's promotion, in the words of the archived `line` if any, with the evidence
    of both (only `ev`'s when it counts the line's notes already: promoted then, recurring)."""
    old = None if line is None else provenance(line)
    if old is None:  # none; or a person's (never moved, but a person may put one there)
        return Promotion(ev.role, ev.kind, ev.text, ev, promoted_on)
    lists = {name: listed_values(old[name]) for name in _BITS}
    first, count = old["first"] or old["last"], int(old["count"])
    if ev.first > first or ev.count < count or not all(
            set(values) <= set(getattr(ev, name)) for name, (values, _) in lists.items()):
        merged = Evidence(ev.role, ev.kind, old["text"], ev.count + count, min(first, ev.first),
                          max(old["last"], ev.last), more=ev.more)
        for name, (values, cut) in lists.items():
            union = list(dict.fromkeys([*values, *getattr(ev, name)]))
            setattr(merged, name, tuple(union[:LISTED]))
            merged.more |= _BITS[name] if cut or len(union) > LISTED else 0
        ev = merged
    return Promotion(ev.role, ev.kind, old["text"], ev, promoted_on)
