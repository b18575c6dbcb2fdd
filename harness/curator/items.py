"""MEMORY.md's lines: items with an id the summary points to, parsed and rendered.

    ## Decisions   - [D4] 2026-04-24 planner -: db: move to postgres 17 (run R)
    ## Context     - [C9] 2026-04-24 validator F-023: F-023 verified via curl (run R)
    ## History     the same lines compressed: text cut to 100 characters, no run list,
                   "(superseded by D4)" on decisions a later one replaced
    ## Lessons     - [L12] TRICK x3 2026-04-24 worker: psql -f ... order (from: R3, R2, R1, ...)

A lesson's count is exact; its `from:` list keeps the three most recent run ids
(the feature when a note has no run) and ends in `...` when older ones were
dropped. Lessons rank by recurrence and recency together: the day of the last
sighting plus RECUR_DAYS per doubling of the count. That needs no clock, so a
run with nothing new reproduces the same order byte for byte.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

RECUR_DAYS = 14  # each doubling of a lesson's count weighs as much as 14 days of recency
IDS_LISTED = 3
TEXT_MAX = 300  # MEMORY.md lines; the archive keeps every note verbatim
HISTORY_TEXT_MAX = 100
OLD_SEQ = -(10**9)  # an old item's arrival order: before every new one, then by its id

_TAIL = r"(?: \((?P<tail>(?:from: |run |superseded)[^()]*)\))?$"
_LESSON = re.compile(r"^- \[L(?P<id>\d+)\] (?P<kind>TRICK|GOTCHA|FAIL|FORGOT) x(?P<count>\d+) "
                     r"(?P<date>\d{4}-\d\d-\d\d) (?P<role>\S+): (?P<text>.*?)" + _TAIL)
_NOTE = re.compile(r"^- \[(?P<letter>[DC])(?P<id>\d+)\] (?P<date>\d{4}-\d\d-\d\d) (?P<role>\S+) "
                   r"(?P<feature>\S+): (?P<text>.*?)" + _TAIL)
_REF = re.compile(r"MEMORY\.md ([LDC]\d+)\)$")
_ID = re.compile(r"^- \[([LDC]\d+)\]")


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters with an ellipsis; clipping twice changes nothing."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@dataclass(eq=False, slots=True)
class Item:
    """One MEMORY.md line: a lesson (L), a decision (D), a plain note (C) or a foreign line."""

    letter: str  # L, D, C, or "" for a line the curator did not write
    kind: str
    role: str
    text: str
    day: str
    seq: int  # arrival order: old items by id, then new ones
    feature: str = "-"
    count: int = 1
    ids: tuple[str, ...] = ()  # most recent first
    more: bool = False
    run: str | None = None
    id: int = 0
    in_history: bool = False
    superseded: bool = False
    superseded_by: Item | None = None
    tail: str = ""  # a superseded decision's "(superseded by D4)" as read back
    old_line: str | None = None  # the line it came from in the previous MEMORY.md

    def note(self, ref: str, day: str) -> None:
        """Count one more sighting from run or feature `ref` on `day`."""
        self.count += 1
        if day > self.day:
            self.day = day
        if ref and ref != "-":
            ids = self.ids
            if ids and ids[0] == ref:
                return  # the latest sighting again: the list stays as it is
            if ref in ids:
                ids = tuple(i for i in ids if i != ref)
            elif len(ids) >= IDS_LISTED:
                ids = ids[: IDS_LISTED - 1]
                self.more = True
            self.ids = (ref, *ids)

    def rank(self) -> tuple[float, int]:
        """Sort key, best first: recency plus recurrence, then newest arrival."""
        days = date.fromisoformat(self.day).toordinal()
        return (-(days + RECUR_DAYS * math.log2(self.count)), -self.seq)

    def ref(self) -> str:
        return f"{self.letter}{self.id}"

    def line(self, compressed: bool = False) -> str:
        """The item as its MEMORY.md line; compressed is the History form."""
        if not self.letter:
            return self.text
        text = clip(self.text, HISTORY_TEXT_MAX if compressed else TEXT_MAX)
        if self.letter == "L":
            head = f"- [L{self.id}] {self.kind} x{self.count} {self.day} {self.role}: {text}"
            if compressed or not self.ids:
                return head
            return f"{head} (from: {', '.join(self.ids)}{', ...' if self.more else ''})"
        head = f"- [{self.ref()}] {self.day} {self.role} {self.feature}: {text}"
        if self.superseded:
            by = self.superseded_by
            tail = f"superseded by {by.ref()}" if by and by.id else self.tail or "superseded"
            return f"{head} ({tail})"
        return head if compressed or not self.run else f"{head} (run {self.run})"


def parse_item(line: str) -> Item:
    """The item on a MEMORY.md line; a foreign item when the curator did not write it."""
    m = _LESSON.match(line)
    if m:
        tail = m["tail"] or ""
        ids = tail[len("from: "):].split(", ") if tail.startswith("from: ") else []
        more = bool(ids) and ids[-1] == "..."
        ids = tuple(i for i in ids if i and i != "...")
        n = int(m["id"])
        return Item("L", m["kind"], m["role"], m["text"], m["date"], OLD_SEQ + n,
                    count=int(m["count"]), ids=ids, more=more, id=n, old_line=line)
    m = _NOTE.match(line)
    if m:
        tail = m["tail"] or ""
        n = int(m["id"])
        kind = "DECISION" if m["letter"] == "D" else "-"
        return Item(m["letter"], kind, m["role"], m["text"], m["date"], OLD_SEQ + n,
                    feature=m["feature"], run=tail[4:] if tail.startswith("run ") else None,
                    id=n, superseded=tail.startswith("superseded"), tail=tail, old_line=line)
    return Item("", "", "", line, "0001-01-01", OLD_SEQ, old_line=line)


def memory_ids(text: str) -> dict[str, int]:
    """Item ids in a MEMORY.md text with their counts (1 for decisions and notes)."""
    ids: dict[str, int] = {}
    for line in text.splitlines():
        item = parse_item(line)
        if item.letter:
            ids[item.ref()] = item.count
    return ids


def summary_refs(text: str) -> Iterable[tuple[str, str | None]]:
    """Each bullet line of a summary with the MEMORY.md id it points to, or None."""
    for line in text.splitlines():
        if line.startswith("- "):
            m = _REF.search(line)
            yield line, m[1] if m else None


def item_id(line: str) -> str | None:
    """The `L12`-style id a MEMORY.md line starts with, if any."""
    m = _ID.match(line)
    return m[1] if m else None
