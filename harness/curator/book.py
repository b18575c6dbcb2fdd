"""Pure compaction of L2 summary.md and L3 MEMORY.md (docs/memory.md): entries in, texts out."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from harness.curator.clusters import Clusters
from harness.curator.items import TEXT_MAX, Item, clip, parse_item
from harness.curator.matching import LessonIndex
from harness.curator.record import LESSON_KINDS
from harness.curator.text import normalize
from harness.state.memory import (
    MEMORY_SECTIONS,
    SUMMARY_SECTIONS,
    Entry,
    estimate_tokens,
    parse_sections,
    render_sections,
)

AVOID_KINDS = ("FAIL", "GOTCHA")
SUMMARY_TEXT_MAX = 110
MEMORY_OVERHEAD = 9  # title, blank, and a heading plus blank per section, minus the last blank

_TOPIC = re.compile(r"^([A-Za-z][\w./ -]{0,39}?):\s")


def topic_of(text: str) -> tuple[bool, str]:
    """A decision's topic: (True, prefix) for `topic: ...` texts, else (False, whole text)."""
    m = _TOPIC.match(text)
    if m and len(m[1].split()) <= 3:
        return True, " ".join(m[1].lower().split())
    return False, text


@dataclass
class Bounds:
    """The line and token budgets of L2 and L3."""

    summary_max_lines: int = 40
    summary_max_tokens: int = 800
    memory_max_lines: int = 200

    def shares(self) -> dict[str, int]:
        """Lines per MEMORY.md section: Decisions 20%, Context 10%, History 20%, Lessons rest."""
        content = max(self.memory_max_lines - MEMORY_OVERHEAD, 0)
        caps = {"Decisions": content // 5, "Context": content // 10, "History": content // 5}
        caps["Lessons"] = content - sum(caps.values())
        return caps


@dataclass
class Compacted:
    """The result of a curator pass over L3 and L2."""

    memory: str
    summary: str
    archived: list[str]  # old MEMORY.md lines that left it, verbatim
    next_ids: dict[str, int]


class MemoryBook:
    """MEMORY.md as items; feed it new entries, then `compact` to get the bounded files."""

    def __init__(self, memory_text: str, bounds: Bounds, *, similarity: float,
                 topic_similarity: float, next_ids: dict[str, int] | None = None,
                 clusters: Clusters | None = None) -> None:
        self.bounds = bounds
        caps = bounds.shares()
        self._seq = 0
        self.clusters = clusters or Clusters(similarity)
        self._lessons: dict[int, Item] = {}  # by cluster id
        self._topics = LessonIndex(topic_similarity, anchored=False)
        self._explicit: dict[str, int] = {}  # topic prefix -> index in _current
        self._current: list[Item] = []  # the current decision of each topic
        # plain notes: only the newest can stay, in Context or at the top of History
        self._context: deque[Item] = deque(maxlen=caps["History"] + caps["Context"])
        self._superseded_new: deque[Item] = deque(maxlen=caps["History"])  # only History takes them
        self._superseded_old: list[Item] = []
        self._old: list[Item] = []  # the old MEMORY.md, in load order
        sections = parse_sections(memory_text)
        outside = [line for line in sections[""] if not line.startswith("# ")]
        sections["History"] = sections.get("History", []) + outside  # a line outside is History's
        for name in ("Lessons", "Decisions", "Context", "History"):
            for line in filter(str.strip, sections.get(name, [])):
                self._load(parse_item(line.rstrip()), name)
        given = next_ids or {}
        self.next_ids = {letter: max([1, given.get(letter, 1)]
                                     + [i.id + 1 for i in self._old if i.letter == letter])
                         for letter in "LDC"}

    def _load(self, item: Item, section: str) -> None:
        """Take an item of the old MEMORY.md; old items never merge with each other."""
        self._old.append(item)
        item.in_history = section == "History" or item.superseded or not item.letter
        if item.letter == "L":  # its cluster in the candidate record, unless an old one has it
            bucket, norm = (item.role, item.kind), normalize(item.text)
            cid = self.clusters.find(bucket, norm)
            if cid is None or cid in self._lessons:
                cid = self.clusters.new(bucket, norm)
            self._lessons[cid] = item
        elif item.letter == "D" and not item.in_history:
            self._decide(item, load=True)
        elif item.letter == "C" and not item.in_history:
            self._context.append(item)

    def add(self, entry: Entry, cluster: int | None = None) -> None:
        """Take one new L1 entry into memory; `cluster` if the caller already matched it."""
        self._seq += 1
        role, kind, text, day = entry.role, entry.kind, entry.text, entry.ts[:10]
        if kind not in LESSON_KINDS:
            item = Item("D" if kind == "DECISION" else "C", kind, role, clip(text, TEXT_MAX), day,
                        self._seq, feature=entry.feature, run=entry.run)
            if kind == "DECISION":
                self._decide(item)
            else:
                self._context.append(item)
            return
        if cluster is None:
            cluster = self.clusters.assign_text((role, kind), text)
        ref, lesson = entry.run or entry.feature, self._lessons.get(cluster)
        if lesson is None:
            self._lessons[cluster] = Item("L", kind, role, clip(text, TEXT_MAX), day, self._seq,
                                          ids=(ref,) if ref != "-" else ())
        else:
            lesson.note(ref, day, text)

    def _decide(self, item: Item, load: bool = False) -> None:
        """`item` becomes its topic's current decision; the one it replaces goes to History.
        A loaded one supersedes nothing: loading must not change what a pass decided."""
        explicit, topic = topic_of(item.text)
        tid = len(self._current)
        if explicit:
            tid = self._explicit.setdefault(topic, tid)
        elif load:
            self._topics.add("topic", normalize(topic), tid)
        else:
            tid = self._topics.assign("topic", normalize(topic), tid)
        if load or tid == len(self._current):
            self._current.append(item)
            return
        old, self._current[tid] = self._current[tid], item
        old.superseded, old.superseded_by = True, item
        (self._superseded_old if old.old_line else self._superseded_new).append(old)

    def compact(self) -> Compacted:
        """The bounded MEMORY.md and summary.md, and the old lines that left MEMORY.md."""
        caps = self.bounds.shares()
        live = [i for i in self._lessons.values() if not i.in_history]
        lessons = sorted(live, key=Item.rank)[: caps["Lessons"] + caps["History"]]
        decisions = _newest_first(self._current)[: caps["Decisions"] + caps["History"]]
        context = _newest_first(self._context)
        history = [*lessons[caps["Lessons"]:], *decisions[caps["Decisions"]:],
                   *_newest_first([*self._superseded_old, *self._superseded_new]),
                   *context[caps["Context"]:], *(i for i in self._old if i.in_history)]
        chosen = dict(Lessons=lessons, Decisions=decisions, Context=context, History=history)
        sections = {name: items[: caps[name]] for name, items in chosen.items()}
        written = [item for items in sections.values() for item in items]
        for item in sorted(written, key=lambda i: i.seq):
            if item.letter and not item.id:  # new: the next id of its letter, in arrival order
                item.id = self.next_ids[item.letter]
                self.next_ids[item.letter] += 1
        lines = {name: [i.line(compressed=name == "History") for i in items]
                 for name, items in sections.items()}
        summary = build_summary(sections["Lessons"], sections["Decisions"], self.bounds)
        kept = set(written)
        archived = [i.old_line for i in self._old if i not in kept]
        return Compacted(render_sections("Memory", lines, MEMORY_SECTIONS), summary, archived,
                         dict(self.next_ids))


def _newest_first(items: Iterable[Item]) -> list[Item]:
    return sorted(items, key=lambda i: (i.day, i.seq), reverse=True)


def build_summary(lessons: list[Item], decisions: list[Item], bounds: Bounds) -> str:
    """summary.md: the top lessons, current decisions and things to avoid. Sections take turns
    adding a line while both bounds hold, so a long section cannot starve the others."""
    queues = {
        "Lessons": deque(_summary_line(i) for i in lessons if i.kind not in AVOID_KINDS),
        "Decisions (current)": deque(_summary_line(i) for i in decisions),
        "Avoid": deque(_summary_line(i) for i in lessons if i.kind in AVOID_KINDS),
    }
    sections: dict[str, list[str]] = {name: [] for name in SUMMARY_SECTIONS}
    while any(queues.values()):
        for name, queue in queues.items():
            if queue:
                sections[name].append(queue.popleft())
                text = render_sections("Summary", sections, SUMMARY_SECTIONS)
                if (text.count("\n") > bounds.summary_max_lines
                        or estimate_tokens(text) > bounds.summary_max_tokens):
                    sections[name].pop()
                    queue.clear()
    return render_sections("Summary", sections, SUMMARY_SECTIONS)


def _summary_line(item: Item) -> str:
    prefix = "" if item.kind in ("TRICK", "DECISION") else f"{item.kind}: "
    count = f"x{item.count}, " if item.count > 1 else ""
    return f"- {prefix}{clip(item.text, SUMMARY_TEXT_MAX)} ({count}see MEMORY.md {item.ref()})"
