"""The two logs a pass reads. raw.md, read once to its last complete line (`RawPass`): its
entries from where the last pass stopped, the archive cut with its months. And the candidate
record `<identity>/.candidates.log`: the append-only truth of every TRICK, FAIL or FORGOT note
(`lessondb` caches it clustered), each append one write under `.candidates.lock`. A line's
`batch:seq` dedupes: a reader skips a seq at or below the highest seen for its batch, so a redone
batch counts once. Only each mission's latest batch is kept (a mission redoes its pending batch
before it appends another): two states sharing a mission name and identity could, after a
crash, count a redone batch twice (a note count, never missions or runs).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from hashlib import blake2b
from pathlib import Path
from typing import NamedTuple

from harness.state.memory import TIME, parse_fields, real_day
from harness.state.store import append_lines, sha256

LESSON_KINDS = ("TRICK", "GOTCHA", "FAIL", "FORGOT")
PROMOTABLE = ("TRICK", "FAIL", "FORGOT")
RECORD = ".candidates.log"
LOCK = ".candidates.lock"
TAIL = 4096
CHUNK = 1 << 20
HEAD_BYTES = 65536  # how much of raw.md's head identifies it before the rewrite


class Candidate(NamedTuple):
    """One promotable note as recorded, written by the raw.md pass (`RawPass`)."""

    ts: str
    mission: str
    role: str
    kind: str
    feature: str
    run: str | None
    text: str

    def line(self, tag: str) -> str:
        """The record line, without the newline; `tag` is `batch:seq`."""
        return "\t".join((tag, self.ts, self.mission, self.role, self.kind, self.feature,
                          self.run or "-", self.text))


def mission_token(mission: str) -> str:
    """The mission's name as one interned token, whitespace runs made `_`."""
    return sys.intern("_".join(mission.split()) or "-")


def parse_candidate(line: str) -> tuple[str, int, Candidate] | None:
    """(batch, seq, candidate) from a record line; None when the line is malformed."""
    parts = line.rstrip("\n").split("\t", 7)
    batch, _, seq = parts[0].rpartition(":")
    if (len(parts) != 8 or parts[4] not in PROMOTABLE or not parts[7] or not batch
            or not seq.isdigit() or not TIME.fullmatch(parts[1]) or not real_day(parts[1])):
        return None  # a hand-damaged line: no lesson may rank by a day the calendar lacks
    run = None if parts[6] == "-" else parts[6]
    return batch, int(seq), Candidate(parts[1], sys.intern(parts[2]), sys.intern(parts[3]),
                                      sys.intern(parts[4]), sys.intern(parts[5]), run, parts[7])


@dataclass
class RecordRead:
    """How far a pass read the record, and the batches it saw (for dedupe and `lessondb`)."""

    end: int = 0
    tail_sha: str = ""
    batches: dict[str, int] = field(default_factory=dict)  # batch -> the highest seq seen
    latest: dict[str, str] = field(default_factory=dict)  # mission -> its latest batch

    def saw(self, batch: str, seq: int, mission: str) -> None:
        """Remember `seq` of `batch`, forgetting `mission`'s earlier batch."""
        if (earlier := self.latest.get(mission, batch)) != batch:
            self.batches.pop(earlier, None)
        self.latest[mission] = batch
        self.batches[batch] = seq


def read_record(identity: Path, read: RecordRead) -> Iterator[Candidate]:
    """The candidates after `read.end`, each batch's lines once; `read` then covers them."""
    # not exists() first: a person may delete it in between
    with contextlib.suppress(FileNotFoundError), open(identity / RECORD, "rb") as f:
        f.seek(read.end)
        offset = read.end
        for raw in f:
            if not raw.endswith(b"\n"):
                break  # an append in progress
            offset += len(raw)
            if (parsed := parse_candidate(raw.decode("utf-8", "replace"))) is None:
                continue
            batch, seq, candidate = parsed
            if seq <= read.batches.get(batch, -1):
                continue
            read.saw(batch, seq, candidate.mission)
            yield candidate
        read.end, read.tail_sha = offset, _tail_sha(f.fileno(), offset)


def _tail_sha(fd: int, end: int) -> str:
    """The hash of the TAIL bytes before `end`: a later pass tells by it the record is as read."""
    return sha256(os.pread(fd, min(end, TAIL), max(0, end - TAIL)))


def covers(record: Path, end: int, tail_sha: str) -> bool:
    """Whether the record still holds what a reader read up to `end`."""
    with contextlib.suppress(FileNotFoundError), open(record, "rb") as f:
        fd = f.fileno()
        return os.fstat(fd).st_size >= end and _tail_sha(fd, end) == tail_sha
    return end == 0


def append_locked(identity: Path, staged: Path) -> tuple[int, int, str]:
    """Append the staged lines (the caller holds LOCK): the size before, after, its tail hash."""
    identity.mkdir(parents=True, exist_ok=True)
    with open(staged, "rb") as f:
        before, end = append_lines(identity / RECORD, iter(lambda: f.read(CHUNK), b""), sync=True)
    with open(identity / RECORD, "rb") as f:
        return before, end, _tail_sha(f.fileno(), end)


class RawPass:
    """Iterate `entries()`, then read what the pass found; an earlier run's `counted` entries
    are not yielded."""

    def __init__(self, raw: Path, start: int = 0, *, raw_keep: int = 0, month: str = "",
                 counted: list[list[str]] | None = None) -> None:
        self.raw, self.start, self.raw_keep, self.month = raw, start, raw_keep, month
        # where the last complete line ends; raw.md's bytes (lines) before the cut go to the archive
        self.end = self.cut = self.cut_line = self.inode = 0
        self.head = bytearray()  # raw.md's first HEAD_BYTES
        self.months: list[tuple[int, str]] = []  # (offset, month) of each change before the cut
        # lines from `start` on; of those, lines that did not parse; entries counted before
        self.processed = self.unparsed = self.recounted = 0
        self.counted: list[list[str]] = []  # `note_keys` of the entries from the cut on
        # `note_keys` -> the entries an earlier run counted, each of them taken once
        self.by_key: dict[str, list[int]] = {}
        for n, pair in enumerate(counted or ()):
            for key in pair:
                self.by_key.setdefault(key, []).append(n)
        self.taken: set[int] = set()

    def entries(self) -> Iterator[tuple]:
        """raw.md's entries from `start` on, as (ts, role, feature, kind, text, run)."""
        with contextlib.suppress(FileNotFoundError), open(self.raw, "rb") as f:
            self.inode = os.fstat(f.fileno()).st_ino
            yield from self._entries(f)

    def _entries(self, f: Iterator[bytes]) -> Iterator[tuple]:
        start, months = self.start, [(0, self.month)]
        keep: deque[tuple[int, int, tuple]] = deque(maxlen=max(self.raw_keep, 0))
        offset = lineno = 0
        for raw_line in f:
            if not raw_line.endswith(b"\n"):
                break  # an append in progress: the next run takes it
            if offset < HEAD_BYTES:
                self.head += raw_line[: HEAD_BYTES - offset]
            fields = parse_fields(raw_line.decode("utf-8", "replace"))
            if fields is not None:
                if fields[0][:7] != months[-1][1]:
                    if months[-1][0] == offset:  # an entry at 0 overrides the month carried
                        months.pop()
                    months.append((offset, fields[0][:7]))
                keep.append((offset, lineno, fields))
            if offset >= start:
                if fields is None:
                    self.unparsed += 1
                elif self.by_key and self._recounted(fields):
                    self.recounted += 1
                else:
                    self.processed += 1
                    yield fields
            offset += len(raw_line)
            lineno += 1
        # the cut: where the `raw_keep`-th last entry starts; with none to keep, the end
        self.end, (self.cut, self.cut_line) = offset, keep[0][:2] if keep else (offset, lineno)
        self.months = [m for m in months if m[0] < self.cut]
        self.processed += self.unparsed
        self.counted = [note_keys(fields) for _, _, fields in keep]

    def _recounted(self, fields: tuple) -> bool:
        for n in (n for key in note_keys(fields) for n in self.by_key.get(key, ())):
            if n not in self.taken:
                self.taken.add(n)
                return True
        return False


def note_keys(fields: tuple) -> list[str]:
    """Two keys of a counted entry: its time with role, feature, kind and run; its time with
    its text. A person's edit of raw.md changes one at most, so either finds the entry."""
    ts, role, feature, kind, text, run = fields
    return [blake2b(f"{ts} {role} {feature} {kind} {run}".encode(), digest_size=8).hexdigest(),
            blake2b(f"{ts} {text}".encode(), digest_size=8).hexdigest()]
