"""The candidate record `<identity>/.candidates.log`: the append-only truth of every TRICK,
FAIL or FORGOT note any mission's curator has seen (`lessondb` caches it clustered); each
append is one write under `.candidates.lock`. Lines carry `batch:seq`: a reader skips every seq
at or below the highest it has seen for that batch, so a batch appended twice (a crashed pass
redone) counts once. It remembers only each mission's latest batch: a mission's curator redoes
its pending batch before it appends another. (Two states sharing one mission name and identity
folder could, after a crash, count a redone batch twice: a note count, never missions or runs.)
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, NamedTuple

from harness.state.memory import TIME, real_day
from harness.state.store import named, sha256

LESSON_KINDS = ("TRICK", "GOTCHA", "FAIL", "FORGOT")
PROMOTABLE = ("TRICK", "FAIL", "FORGOT")
RECORD = ".candidates.log"
LOCK = ".candidates.lock"
TAIL = 4096
CHUNK = 1 << 20


class Candidate(NamedTuple):
    """One promotable note as recorded, written by the raw.md pass (`scan`)."""

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
    """The mission's name as one token for the tab-separated record, whitespace runs made
    `_` (interned: lessons keep it)."""
    return sys.intern("_".join(mission.split()) or "-")


def parse_candidate(line: str) -> tuple[str, int, Candidate] | None:
    """(batch, seq, candidate) from a record line; None when the line is malformed."""
    parts = line.rstrip("\n").split("\t", 7)
    if len(parts) != 8 or parts[4] not in PROMOTABLE or not parts[7]:
        return None
    if not TIME.fullmatch(parts[1]) or not real_day(parts[1]):
        return None  # a hand-damaged line: no lesson may rank by a day the calendar lacks
    batch, _, seq = parts[0].rpartition(":")
    if not batch or not seq.isdigit():
        return None
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
        self.batches[batch] = seq
        earlier = self.latest.get(mission)
        if earlier != batch:
            if earlier is not None:
                self.batches.pop(earlier, None)
            self.latest[mission] = batch


def read_record(identity: Path, read: RecordRead) -> Iterator[Candidate]:
    """The record's candidates after `read.end`, each batch's lines once; when they are all
    taken, `read` covers them."""
    try:
        f = open(identity / RECORD, "rb")
    except FileNotFoundError:
        return
    with f:
        f.seek(read.end)
        offset = read.end
        for raw in f:
            if not raw.endswith(b"\n"):
                break  # an append in progress
            offset += len(raw)
            parsed = parse_candidate(raw.decode("utf-8", "replace"))
            if parsed is None:
                continue
            batch, seq, candidate = parsed
            if seq <= read.batches.get(batch, -1):
                continue
            read.saw(batch, seq, candidate.mission)
            yield candidate
        read.end = offset
        read.tail_sha = _tail_sha(f, offset)


def _tail_sha(f: BinaryIO, end: int) -> str:
    """The hash of the TAIL bytes before `end`: how a later run tells the record it read
    up to `end` has not changed."""
    f.seek(max(0, end - TAIL))
    return sha256(f.read(end - f.tell()))


def covers(record: Path, end: int, tail_sha: str) -> bool:
    """Whether the record still holds what a reader read up to `end`."""
    try:
        with open(record, "rb") as f:
            return os.fstat(f.fileno()).st_size >= end and _tail_sha(f, end) == tail_sha
    except FileNotFoundError:
        return end == 0


def append_locked(identity: Path, staged: Path) -> tuple[int, int, str]:
    """Append the staged lines to the record; the caller holds LOCK. The size before, the
    size after, and the hash of the tail before that end."""
    identity.mkdir(parents=True, exist_ok=True)
    record = identity / RECORD
    before = record.stat().st_size if record.exists() else 0
    with open(staged, "rb") as f:
        append_text(record, iter(lambda: f.read(CHUNK), b""))
    with open(record, "rb") as r:
        end = os.fstat(r.fileno()).st_size
        return before, end, _tail_sha(r, end)


def append_text(path: Path, chunks: Iterable[bytes]) -> None:
    """Append, first ending a line a crashed writer left unfinished; the caller holds a lock.
    A write that fails (a full disk) is cut back off: no half line is left to be read as a
    candidate with half its text."""
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    size = os.fstat(fd).st_size
    try:
        if size and os.pread(fd, 1, size - 1) != b"\n":
            os.write(fd, b"\n")
        for chunk in chunks:
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view):]
        os.fsync(fd)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, size)
        raise named(e, path) from None
    finally:
        os.close(fd)
