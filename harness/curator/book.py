"""Pure compaction of L2 summary.md and L3 MEMORY.md: entries and texts in, texts out.

MEMORY.md is a list of items (see `items` for the line grammar). New
entries update it: a lesson merges into the item that says the same thing
(see `matching`), with an exact count; a decision supersedes an earlier one on
the same topic; plain notes become Context. The topic is the text before a
colon when the note starts with a short `topic:` prefix ("db: use postgres 16"
then "db: move to postgres 17"); otherwise two decisions share a topic when
their whole texts score at least `topic_similarity`. Superseded decisions
leave Decisions for History.

Bounds: each section has a share of MEMORY.md's line budget; what does not fit
goes to the top of History, newest demotions first; what falls out of History
is returned for the archive. Any line of the old MEMORY.md whose item is not in
the new one is returned verbatim for the archive, so nothing leaves L3 unseen.
Lines that are not curator items (hand edits) are kept in History as they are.
The summary takes the best lessons, the current decisions and what to avoid,
every line pointing to its item, within its line and token bounds.
"""

from __future__ import annotations

import heapq
import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

from harness.curator.candidate import LESSON_KINDS
from harness.curator.clusters import Clusters
from harness.curator.items import TEXT_MAX, Item, clip, parse_item
from harness.curator.matching import LessonIndex
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
        self._explicit: dict[str, int] = {}
        self._current: list[Item] = []  # topic id -> current decision
        # plain notes: only the newest can stay, in Context or at the top of History
        self._context: deque[Item] = deque(maxlen=caps["History"] + caps["Context"])
        self._dropped: deque[Item] = deque(maxlen=caps["History"])  # superseded new decisions
        self._superseded_old: list[Item] = []
        self.history: list[Item] = []
        self._old_lines: list[Item] = []
        items = [(parse_item(line.rstrip()), name) for name, line in _memory_lines(memory_text)]
        for item, name in items:
            self._load(item, name)
        top = {"L": 0, "D": 0, "C": 0}
        for item in self._old_lines:
            if item.letter:
                top[item.letter] = max(top[item.letter], item.id)
        self.next_ids = {k: max(v + 1, (next_ids or {}).get(k, 1)) for k, v in top.items()}

    def _load(self, item: Item, section: str) -> None:
        # Old items are never merged with each other: loading must not change what an
        # earlier run decided. A lesson joins its cluster in the candidate record, if any.
        self._old_lines.append(item)
        item.in_history = section == "History" or item.superseded or not item.letter
        if item.letter == "L":
            bucket, norm = (item.role, item.kind), normalize(item.text)
            cid = self.clusters.find(bucket, norm)
            if cid is None or cid in self._lessons:
                cid = self.clusters.new(bucket, norm)
            self._lessons[cid] = item
        elif item.letter == "D" and not item.in_history:
            explicit, topic = topic_of(item.text)
            if explicit:
                self._explicit.setdefault(topic, len(self._current))
            else:
                self._topics.add("topic", normalize(topic), len(self._current))
            self._current.append(item)
        elif item.letter == "C" and not item.in_history:
            self._context.append(item)
        if item.in_history:
            self.history.append(item)

    def add(self, entry: Entry, cluster: int | None = None) -> None:
        """Take one new L1 entry into memory; `cluster` if the caller already matched it."""
        self._seq += 1
        role, kind, text, day = entry.role, entry.kind, entry.text, entry.ts[:10]
        if kind in LESSON_KINDS:
            if cluster is None:
                cluster = self.clusters.assign_text((role, kind), text)
            self._add_lesson(cluster, entry)
            return
        item = Item("D" if kind == "DECISION" else "C", kind, role, clip(text, TEXT_MAX), day,
                    self._seq, feature=entry.feature, run=entry.run)
        if kind == "DECISION":
            self._add_topic(item)
        else:
            self._context.append(item)

    def _add_lesson(self, cid: int, entry: Entry) -> None:
        ref, day = entry.run or entry.feature, entry.ts[:10]
        item = self._lessons.get(cid)
        if item is None:
            ids = (ref,) if ref != "-" else ()
            self._lessons[cid] = Item("L", entry.kind, entry.role, clip(entry.text, TEXT_MAX),
                                      day, self._seq, ids=ids)
            return
        item.note(ref, day)
        if item.in_history:  # back from History: it recurs
            item.in_history = False
            if item.text.endswith("…"):
                item.text = clip(entry.text, TEXT_MAX)

    def _add_topic(self, item: Item) -> None:
        explicit, topic = topic_of(item.text)
        if explicit:
            tid = self._explicit.setdefault(topic, len(self._current))
        else:
            tid = self._topics.assign("topic", normalize(topic), len(self._current))
        if tid == len(self._current):
            self._current.append(item)
            return
        old = self._current[tid]
        old.superseded, old.superseded_by = True, item
        (self._superseded_old if old.old_line else self._dropped).append(old)
        self._current[tid] = item

    def compact(self) -> Compacted:
        """The bounded MEMORY.md and summary.md, and the old lines that left MEMORY.md."""
        caps = self.bounds.shares()
        live = [i for i in self._lessons.values() if not i.in_history]
        best = heapq.nsmallest(caps["Lessons"] + caps["History"], live, key=Item.rank)
        lessons, demoted = best[: caps["Lessons"]], best[caps["Lessons"]:]
        newest = sorted(self._current, key=lambda i: (i.day, i.seq), reverse=True)
        decisions = newest[: caps["Decisions"]]
        demoted += newest[caps["Decisions"]: caps["Decisions"] + caps["History"]]
        superseded = sorted([*self._superseded_old, *self._dropped],
                            key=lambda i: (i.day, i.seq), reverse=True)
        context = sorted(self._context, key=lambda i: (i.day, i.seq), reverse=True)
        demoted += superseded + context[caps["Context"]:]
        old_history = [i for i in self.history if i.in_history]
        history = (demoted + old_history)[: caps["History"]]
        context = context[: caps["Context"]]
        for item in sorted([*lessons, *decisions, *context, *history], key=lambda i: i.seq):
            if item.letter and not item.id:
                item.id = self.next_ids[item.letter]
                self.next_ids[item.letter] += 1
        sections = {
            "Decisions": [i.line() for i in decisions],
            "Context": [i.line() for i in context],
            "History": [i.line(compressed=True) for i in history],
            "Lessons": [i.line() for i in lessons],
        }
        memory = render_sections("Memory", sections, MEMORY_SECTIONS)
        written = {id(i) for group in (lessons, decisions, context, history) for i in group}
        archived = [i.old_line for i in self._old_lines
                    if i.old_line is not None and id(i) not in written]
        return Compacted(memory, build_summary(lessons, decisions, self.bounds), archived,
                         dict(self.next_ids))


def _memory_lines(memory_text: str) -> Iterator[tuple[str, str]]:
    """(section, line) of each of MEMORY.md's item lines, in the order they load; a line
    outside the sections goes to History."""
    sections = parse_sections(memory_text)
    for name in ("Lessons", "Decisions", "Context", "History"):
        for line in sections.get(name, []):
            if line.strip():
                yield name, line
    for line in sections.get("", []):
        if line.strip() and not line.startswith("# "):
            yield "History", line


def build_summary(lessons: list[Item], decisions: list[Item], bounds: Bounds) -> str:
    """summary.md: the top lessons, current decisions and things to avoid, within both bounds.

    Sections take turns adding their next line while the file stays within the
    line and token bounds, so a long section cannot starve the others.
    """
    queues = {
        "Lessons": deque(_summary_line(i) for i in lessons if i.kind not in AVOID_KINDS),
        "Decisions (current)": deque(_summary_line(i) for i in decisions),
        "Avoid": deque(_summary_line(i) for i in lessons if i.kind in AVOID_KINDS),
    }
    sections: dict[str, list[str]] = {name: [] for name in SUMMARY_SECTIONS}
    text = render_sections("Summary", sections, SUMMARY_SECTIONS)
    while any(queues.values()):
        for name in SUMMARY_SECTIONS:
            if not queues[name]:
                continue
            sections[name].append(queues[name].popleft())
            trial = render_sections("Summary", sections, SUMMARY_SECTIONS)
            if (trial.count("\n") > bounds.summary_max_lines
                    or estimate_tokens(trial) > bounds.summary_max_tokens):
                sections[name].pop()
                queues[name].clear()
            else:
                text = trial
    return text


def _summary_line(item: Item) -> str:
    prefix = "" if item.kind in ("TRICK", "DECISION") else f"{item.kind}: "
    count = f"x{item.count}, " if item.count > 1 else ""
    return f"- {prefix}{clip(item.text, SUMMARY_TEXT_MAX)} ({count}see MEMORY.md {item.ref()})"
