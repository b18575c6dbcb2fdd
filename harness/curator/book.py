"""L3 MEMORY.md and L2 summary.md, bounded (docs/memory.md); what leaves is archived verbatim."""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

from harness.curator.matching import LessonIndex
from harness.curator.promotion import PromotionTracker
from harness.curator.record import LESSON_KINDS
from harness.curator.text import normalize
from harness.state import memory

RECUR_DAYS = 14  # each doubling of a lesson's count weighs as much as 14 days of recency
IDS_LISTED = 3
TEXT_MAX = 300  # MEMORY.md lines; the archive keeps every note verbatim
HISTORY_TEXT_MAX = 100
SUMMARY_TEXT_MAX = 110
OLD_SEQ = -(10**9)  # an old item's arrival order: before every new one, then by its id
AVOID_KINDS = ("FAIL", "GOTCHA")
MEMORY_OVERHEAD = 9  # title, blank, and a heading plus blank per section, minus the last blank

_TAIL = r"(?: \((?P<tail>from: (?P<ids>[^()]*)|run (?P<run>[^()]*)|superseded[^()]*)\))?$"
_LESSON = re.compile(r"^- \[L(?P<id>\d+)\] (?P<kind>TRICK|GOTCHA|FAIL|FORGOT) x(?P<count>\d+) "
                     r"(?P<date>\d{4}-\d\d-\d\d) (?P<role>\S+): (?P<text>.*?)" + _TAIL)
_NOTE = re.compile(r"^- \[(?P<letter>[DC])(?P<id>\d+)\] (?P<date>\d{4}-\d\d-\d\d) (?P<role>\S+) "
                   r"(?P<feature>\S+): (?P<text>.*?)" + _TAIL)
_TOPIC = re.compile(r"^([A-Za-z][\w./ -]{0,39}?):\s")


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters with an ellipsis; clipping twice changes nothing."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def topic_of(text: str) -> str | None:
    """A decision's short `topic:` prefix, lowercased; None when it has none."""
    m = _TOPIC.match(text)
    return " ".join(m[1].lower().split()) if m and len(m[1].split()) <= 3 else None


@dataclass(eq=False, slots=True)
class Item:
    letter: str  # L lesson, D decision, C plain note, "" a line the curator did not write
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
    superseded_by: Item | None = None
    tail: str = ""  # the "(...)" after the text as read back; "superseded..." once replaced
    old_line: str | None = None  # the line it came from in the previous MEMORY.md

    def note(self, ref: str, day: str, text: str) -> None:
        """Count one more sighting of `text` from run or feature `ref` on `day`."""
        self.count += 1
        self.day = max(self.day, day)
        if self.in_history and self.text.endswith("…"):  # back from History: its words whole
            self.text = clip(text, TEXT_MAX)
        self.in_history = False  # it recurs
        if ref not in ("", "-"):
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
        if (by := self.superseded_by) or self.tail.startswith("superseded"):
            tail = f"superseded by {by.ref()}" if by and by.id else self.tail or "superseded"
            return f"{head} ({tail})"
        return head if compressed or not self.run else f"{head} (run {self.run})"


def parse_item(line: str) -> Item:
    """The item on a MEMORY.md line; a foreign item when the curator did not write it."""
    if m := _LESSON.match(line):
        n, listed = int(m["id"]), (m["ids"] or "").split(", ")
        return Item("L", m["kind"], m["role"], m["text"], m["date"], OLD_SEQ + n,
                    count=int(m["count"]), ids=tuple(i for i in listed if i and i != "..."),
                    more=listed[-1:] == ["..."], id=n, old_line=line)
    if m := _NOTE.match(line):
        n = int(m["id"])
        return Item(m["letter"], "DECISION" if m["letter"] == "D" else "-", m["role"], m["text"],
                    m["date"], OLD_SEQ + n, feature=m["feature"], id=n, run=m["run"],
                    tail=m["tail"] or "", old_line=line)
    return Item("", "", "", line, "0001-01-01", OLD_SEQ, old_line=line)


def memory_ids(text: str) -> dict[str, int]:
    """Item ids in a MEMORY.md text with their counts (1 for decisions and notes)."""
    return {i.ref(): i.count for i in map(parse_item, text.splitlines()) if i.letter}


@dataclass
class Bounds:
    summary_max_lines: int = 40
    summary_max_tokens: int = 800
    memory_max_lines: int = 200

    def shares(self) -> dict[str, int]:
        content = max(self.memory_max_lines - MEMORY_OVERHEAD, 0)
        caps = {"Decisions": content // 5, "Context": content // 10, "History": content // 5}
        caps["Lessons"] = content - sum(caps.values())
        return caps


@dataclass
class Compacted:
    memory: str
    summary: str
    archived: list[str]  # old MEMORY.md lines that left it, verbatim
    next_ids: dict[str, int]


class MemoryBook:
    """MEMORY.md as items; feed it new entries, then `compact` to get the bounded files."""

    def __init__(self, memory_text: str, bounds: Bounds, *, similarity: float,
                 topic_similarity: float, next_ids: dict[str, int] | None = None,
                 clusters: PromotionTracker | None = None) -> None:
        self.bounds = bounds
        self.caps = caps = bounds.shares()
        self._seq = 0
        self.clusters = clusters or PromotionTracker(similarity)
        self._lessons: dict[int, Item] = {}  # by cluster id
        self._topics = LessonIndex(topic_similarity, anchored=False)
        self._current: dict[str | int, Item] = {}  # prefix or _topics cluster -> current decision
        # plain notes: only the newest can stay, in Context or at the top of History
        self._context: deque[Item] = deque(maxlen=caps["History"] + caps["Context"])
        self._superseded_new: deque[Item] = deque(maxlen=caps["History"])  # only History takes them
        self._superseded_old: list[Item] = []
        self._old: list[Item] = []  # the old MEMORY.md, in load order
        sections = memory.parse_sections(memory_text)
        sections[""] = [line for line in sections[""] if not line.startswith("# ")]
        for name in ("Lessons", "Decisions", "Context", "History", ""):  # "": outside, History's
            for line in filter(str.strip, sections.get(name, [])):
                item = parse_item(line.rstrip())
                self._old.append(item)
                item.in_history = (name in ("History", "") or item.tail.startswith("superseded")
                                   or not item.letter)
                if item.letter == "L":  # its record's cluster, unless another old lesson has it
                    bucket, norm = (item.role, item.kind), normalize(item.text)
                    cid = self.clusters.find(bucket, norm)
                    if cid is None or cid in self._lessons:
                        cid = self.clusters.new(bucket, norm)
                    self._lessons[cid] = item
                elif not item.in_history:
                    self._place(item, load=True)
        given = next_ids or {}
        self.next_ids = {c: max(1, given.get(c, 1), *(i.id + 1 for i in self._old if i.letter == c))
                         for c in "LDC"}

    def add(self, entry: memory.Entry, cluster: int | None = None) -> None:
        """Take one new L1 entry into memory; `cluster` if the caller already matched it."""
        self._seq += 1
        role, kind, text, day = entry.role, entry.kind, entry.text, entry.ts[:10]
        if kind not in LESSON_KINDS:
            self._place(Item("D" if kind == "DECISION" else "C", kind, role, clip(text, TEXT_MAX),
                             day, self._seq, feature=entry.feature, run=entry.run))
            return
        if cluster is None:
            cluster = self.clusters.assign_text((role, kind), text)
        lesson = self._lessons.get(cluster)
        if lesson is None:
            lesson = self._lessons[cluster] = Item("L", kind, role, clip(text, TEXT_MAX), day,
                                                   self._seq, count=0)
        lesson.note(entry.run or entry.feature, day, text)

    def _place(self, item: Item, load: bool = False) -> None:
        # a loaded decision supersedes nothing: loading must not change what a pass decided
        if item.letter == "C":
            self._context.append(item)
            return
        tid = topic_of(item.text) or self._topics.assign(
            "topic", normalize(item.text), len(self._current), match=not load)
        if load and tid in self._current:
            tid = len(self._current)  # a new key: each loaded twin stays current
        old, self._current[tid] = self._current.get(tid), item
        if old is not None:
            old.superseded_by = item
            (self._superseded_old if old.old_line else self._superseded_new).append(old)

    def compact(self) -> Compacted:
        """The bounded MEMORY.md and summary.md, and the old lines that left MEMORY.md."""
        lessons = sorted((i for i in self._lessons.values() if not i.in_history), key=Item.rank)
        decisions = _newest_first(self._current.values())
        context = _newest_first(self._context)
        history = [*lessons[self.caps["Lessons"]:], *decisions[self.caps["Decisions"]:],
                   *_newest_first([*self._superseded_old, *self._superseded_new]),
                   *context[self.caps["Context"]:], *(i for i in self._old if i.in_history)]
        chosen = dict(Lessons=lessons, Decisions=decisions, Context=context, History=history)
        sections = {name: items[: self.caps[name]] for name, items in chosen.items()}
        written = {item for items in sections.values() for item in items}
        for item in sorted(written, key=lambda i: i.seq):
            if item.letter and not item.id:  # new: the next id of its letter, in arrival order
                item.id = self.next_ids[item.letter]
                self.next_ids[item.letter] += 1
        lines = {name: [i.line(compressed=name == "History") for i in items]
                 for name, items in sections.items()}
        return Compacted(memory.render_sections("Memory", lines, memory.MEMORY_SECTIONS),
                         build_summary(sections["Lessons"], sections["Decisions"], self.bounds),
                         [i.old_line for i in self._old if i not in written], dict(self.next_ids))


def _newest_first(items: Iterable[Item]) -> list[Item]:
    return sorted(items, key=lambda i: (i.day, i.seq), reverse=True)


def build_summary(lessons: list[Item], decisions: list[Item], bounds: Bounds) -> str:
    """summary.md: the top lessons, current decisions and things to avoid, sections in turn."""
    queues = [deque(i for i in lessons if i.kind not in AVOID_KINDS), deque(decisions),
              deque(i for i in lessons if i.kind in AVOID_KINDS)]  # in SUMMARY_SECTIONS' order
    sections: dict[str, list[str]] = {name: [] for name in memory.SUMMARY_SECTIONS}
    while any(queues):
        for lines, queue in zip(sections.values(), queues, strict=True):
            if queue:
                lines.append(_summary_line(queue.popleft()))
                text = memory.render_sections("Summary", sections, memory.SUMMARY_SECTIONS)
                if (text.count("\n") > bounds.summary_max_lines
                        or memory.estimate_tokens(text) > bounds.summary_max_tokens):
                    lines.pop()
                    queue.clear()
    return memory.render_sections("Summary", sections, memory.SUMMARY_SECTIONS)


def _summary_line(item: Item) -> str:
    prefix = "" if item.kind in ("TRICK", "DECISION") else f"{item.kind}: "
    count = f"x{item.count}, " if item.count > 1 else ""
    return f"- {prefix}{clip(item.text, SUMMARY_TEXT_MAX)} ({count}see MEMORY.md {item.ref()})"
