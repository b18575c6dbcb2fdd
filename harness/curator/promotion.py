"""Promotion to identity: which lessons have earned a line in identity/<role>.md.

The notes of the candidate record (`record`) that say one thing (`matching`) are one lesson
per role and kind, its `Evidence`. A lesson is promoted when its kind's rule holds (TRICK:
two workers, FAIL: two missions, FORGOT: two occasions; see docs/curator.md) and identity
does not hold it in any words. Only lessons noted in this pass are planned
(`clusters.PromotionTracker.due`): a line someone deleted stays out until the lesson recurs. A
promoted line carries its provenance, lists capped at LISTED values, the count exact:

    - TRICK: <text> [promoted 2026-05-01; seen 3x 2026-04-12..2026-04-20;
      missions: shop, blog; features: F-003, F-007; runs: R1, R2, R3]
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass

from harness.curator.identity import IdentityIndex, listed_values, provenance

LISTED = 3  # provenance values listed per field; the count stays exact
_BITS = {"missions": 1, "features": 2, "runs": 4}  # `Evidence.more`: values were dropped


@dataclass(eq=False, slots=True)
class Evidence:
    """Everything known about one lesson across missions: provenance lists of LISTED
    distinct values (`more` marks those that dropped some), the exact count, and, as two
    workers, occasions or missions decide a rule, the first of each and whether a second
    came."""

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
    # the first note a run wrote: its feature (the worker), run (the occasion) and mission;
    # a person's notes (no run) are counted and listed but are none of these
    worker: str = ""
    two_workers: bool = False
    occasion: str = ""
    two_occasions: bool = False
    sourced: str = ""
    two_missions: bool = False

    def note(self, day: str, ts: str, mission: str, feature: str, run: str | None) -> None:
        """Count one more note of this lesson (`day` is ts[:10], interned)."""
        if not self.first or day < self.first:
            self.first = day
        if day > self.last:
            self.last = day
        self.count += 1
        # missions and features recur in many lessons: each kept as one string
        self.missions = self._listed(self.missions, sys.intern(mission), 1)
        self.features = self._listed(self.features, sys.intern(feature), 2)
        if not run:
            return  # a person's note: counted, but no worker, occasion or mission of its own
        self.runs = self._listed(self.runs, run, 4)
        if not self.occasion:  # the first note a run wrote
            self.worker, self.occasion = sys.intern(feature), run
            self.sourced = sys.intern(mission)
            return
        same_mission = mission == self.sourced
        self.two_workers = self.two_workers or not same_mission or feature != self.worker
        self.two_occasions = self.two_occasions or not same_mission or run != self.occasion
        self.two_missions = self.two_missions or not same_mission

    def _listed(self, values: tuple[str, ...], value: str, bit: int) -> tuple[str, ...]:
        """`values` with `value` added while fewer than LISTED, else `more` marked."""
        if value in values:
            return values
        if len(values) < LISTED:
            return (*values, value)
        self.more |= bit
        return values

    def row(self) -> list:
        """The evidence as a JSON-ready list, its fields in order (see `from_row`)."""
        return [getattr(self, name) for name in self.__slots__]

    @classmethod
    def from_row(cls, row: list) -> Evidence:
        """Evidence back from `row()`, its lists as tuples."""
        return cls(*(tuple(v) if isinstance(v, list) else v for v in row))

    def due(self) -> bool:
        """Whether the promotion rule for this kind holds."""
        rules = {"TRICK": self.two_workers, "FAIL": self.two_missions,
                 "FORGOT": self.two_occasions}
        return rules.get(self.kind, False)

    def show(self, name: str) -> str:
        """One provenance field as listed, `...` when some values were dropped."""
        return ", ".join(getattr(self, name)) + (", ..." if self.more & _BITS[name] else "")

    def line(self, promoted_on: str, text: str | None = None) -> str:
        """The identity line: the lesson (in other words if `text`), then its provenance."""
        seen = self.first if self.first == self.last else f"{self.first}..{self.last}"
        parts = [f"promoted {promoted_on}", f"seen {self.count}x {seen}",
                 f"missions: {self.show('missions')}", f"features: {self.show('features')}"]
        if self.runs:
            parts.append(f"runs: {self.show('runs')}")
        return f"- {self.kind}: {text or self.text} [{'; '.join(parts)}]"


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
        return self.evidence.line(self.promoted_on, self.text)


def plan_promotions(due: Iterable[Evidence], identity: IdentityIndex,
                    promoted_on: str) -> list[Promotion]:
    """The due lessons that neither identity nor a promotion before it holds yet (the rules
    keep two restatements of one note apart when each names a detail the other lacks, and
    both may be due). A lesson that an archived line says comes back in that line's words
    (`returning`)."""
    out, returned = [], set()
    for ev in due:
        if not identity.knows(ev.role, ev.text):
            archived = identity.archived_line_of(ev.role, ev.kind, ev.text)
            if archived is None:
                promotion = Promotion(ev.role, ev.kind, ev.text, ev, promoted_on)
            elif archived in returned:
                continue  # another due lesson of this pass brought it back already
            else:
                promotion = returning(ev, archived, promoted_on)
                returned.add(archived)
            out.append(promotion)
            identity.add(ev.role, ev.text, promotion.line)
    return out


def returning(ev: Evidence, line: str, promoted_on: str) -> Promotion:
    """The promotion of a due lesson that the archived `line` says: in the line's words,
    with the evidence of both; only `ev`'s when it counts the line's notes already (the
    lesson promoted then, recurring)."""
    old = provenance(line)
    if old is None:  # a person's line never moves, but a person may put one there
        return Promotion(ev.role, ev.kind, ev.text, ev, promoted_on)
    lists = [(bit, name, *listed_values(old[name])) for name, bit in _BITS.items()]
    first = old["first"] or old["last"]
    if ev.first <= first and ev.count >= int(old["count"]) and all(
            set(values) <= set(getattr(ev, name)) for _, name, values, _ in lists):
        return Promotion(ev.role, ev.kind, old["text"], ev, promoted_on)
    merged = Evidence(ev.role, ev.kind, old["text"], ev.count + int(old["count"]),
                      min(first, ev.first), max(old["last"], ev.last))
    for bit, name, values, cut in lists:
        joined = list(dict.fromkeys([*values, *getattr(ev, name)]))
        setattr(merged, name, tuple(joined[:LISTED]))
        if cut or ev.more & bit or len(joined) > LISTED:
            merged.more |= bit
    return Promotion(ev.role, ev.kind, old["text"], merged, promoted_on)
