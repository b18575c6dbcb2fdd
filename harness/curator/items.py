"""MEMORY.md's lines (grammar in docs/memory.md): items with an id the summary points to."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
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
    ids: tuple[str, ...] = ()  # the latest runs (or features) it was seen in, newest first
    more: bool = False  # older ones were dropped from `ids`
    run: str | None = None
    id: int = 0
    in_history: bool = False
    superseded: bool = False
    superseded_by: Item | None = None
    tail: str = ""  # the "(...)" after the text as read back, e.g. "superseded by D4"
    old_line: str | None = None  # the line it came from in the previous MEMORY.md

    def note(self, ref: str, day: str, text: str) -> None:
        """Count one more sighting of `text` from run or feature `ref` on `day`."""
        self.count += 1
        self.day = max(self.day, day)
        if self.in_history:  # back from History: it recurs, with its words whole again
            self.in_history = False
            if self.text.endswith("…"):
                self.text = clip(text, TEXT_MAX)
        if ref in ("", "-"):
            return
        if ref not in self.ids and len(self.ids) >= IDS_LISTED:
            self.ids, self.more = self.ids[: IDS_LISTED - 1], True
        self.ids = (ref, *(i for i in self.ids if i != ref))

    def rank(self) -> tuple[float, int]:
        """Sort key, best first: last day seen plus RECUR_DAYS per doubling of the count."""
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
    if m := _LESSON.match(line):
        tail, n = m["tail"] or "", int(m["id"])
        listed = tail[len("from: "):].split(", ") if tail.startswith("from: ") else []
        return Item("L", m["kind"], m["role"], m["text"], m["date"], OLD_SEQ + n,
                    count=int(m["count"]), ids=tuple(i for i in listed if i and i != "..."),
                    more=listed[-1:] == ["..."], id=n, old_line=line)
    if m := _NOTE.match(line):
        tail, n = m["tail"] or "", int(m["id"])
        return Item(m["letter"], "DECISION" if m["letter"] == "D" else "-", m["role"], m["text"],
                    m["date"], OLD_SEQ + n, feature=m["feature"], id=n,
                    run=tail[len("run "):] if tail.startswith("run ") else None,
                    superseded=tail.startswith("superseded"), tail=tail, old_line=line)
    return Item("", "", "", line, "0001-01-01", OLD_SEQ, old_line=line)


def memory_ids(text: str) -> dict[str, int]:
    """Item ids in a MEMORY.md text with their counts (1 for decisions and notes)."""
    return {i.ref(): i.count for i in map(parse_item, text.splitlines()) if i.letter}


def summary_refs(text: str) -> Iterator[tuple[str, str | None]]:
    """Each bullet line of a summary with the MEMORY.md id it points to, or None."""
    for line in text.splitlines():
        if line.startswith("- "):
            yield line, m[1] if (m := _REF.search(line)) else None


def item_id(line: str) -> str | None:
    """The `L12`-style id a MEMORY.md line starts with, if any."""
    return m[1] if (m := _ID.match(line)) else None
