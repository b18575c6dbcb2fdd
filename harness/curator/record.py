"""The candidate record `<identity>/.candidates.log`: the append-only truth of every TRICK, FAIL
or FORGOT note (`lessondb` caches it clustered), each append one write under `.candidates.lock`.
A line's `batch:seq` dedupes: a reader skips a seq at or below the highest seen for its batch, so
a redone batch counts once. Only each mission's latest batch is kept (a mission redoes its
pending batch before it appends another): two states sharing a mission name and identity could,
after a crash, count a redone batch twice (a note count, never missions or runs).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from harness.state.memory import TIME, real_day
from harness.state.store import named, sha256, write_all

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
    """The mission's name as one interned token, whitespace runs made `_`."""
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
        earlier = self.latest.setdefault(mission, batch)
        if earlier != batch:
            self.batches.pop(earlier, None)
            self.latest[mission] = batch
        self.batches[batch] = seq


def read_record(identity: Path, read: RecordRead) -> Iterator[Candidate]:
    """The candidates after `read.end`, each batch's lines once; `read` then covers them."""
    try:  # not exists() first: a person may delete it in between
        f = open(identity / RECORD, "rb")  # noqa: SIM115 - closed by the with below
    except FileNotFoundError:
        return
    with f:
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
        read.end = offset
        read.tail_sha = _tail_sha(f.fileno(), offset)


def _tail_sha(fd: int, end: int) -> str:
    """The hash of the TAIL bytes before `end`: a later pass tells by it the record is as read."""
    start = max(0, end - TAIL)
    return sha256(os.pread(fd, end - start, start))


def covers(record: Path, end: int, tail_sha: str) -> bool:
    """Whether the record still holds what a reader read up to `end`."""
    try:
        with open(record, "rb") as f:
            fd = f.fileno()
            return os.fstat(fd).st_size >= end and _tail_sha(fd, end) == tail_sha
    except FileNotFoundError:
        return end == 0


def append_locked(identity: Path, staged: Path) -> tuple[int, int, str]:
    """Append the staged lines (the caller holds LOCK): the size before, after, its tail hash.
    A crash's half line is ended first; a write that fails (a full disk) is cut back off."""
    identity.mkdir(parents=True, exist_ok=True)
    path = identity / RECORD
    with open(staged, "rb") as f:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        before = os.fstat(fd).st_size
        try:
            if before and os.pread(fd, 1, before - 1) != b"\n":
                os.write(fd, b"\n")
            while chunk := f.read(CHUNK):
                write_all(fd, chunk)
            os.fsync(fd)
            end = os.fstat(fd).st_size
            return before, end, _tail_sha(fd, end)
        except OSError as e:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, before)
            raise named(e, path) from None
        finally:
            os.close(fd)
