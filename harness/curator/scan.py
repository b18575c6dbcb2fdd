"""The curator's one pass over raw.md (`RawPass`).

The pass first reads the candidate record's new lines (those after what the
lesson database covers, `record.read_record`), then streams raw.md from its start
to its last complete line and

- finds what the curator archives: the cut (the offset of the `raw_keep`-th
  last entry), where the month of the entries changes, raw.md's first bytes
  (the journal hashes them) and first lines (for `--dry-run`'s diffs);
- parses each line from the cursor's `start` on and hands the entries over in
  order; plain notes (kind `-`) go by as None: the curator keeps just the newest
  few, which the pass hands over at the end (`Scan.notes`);
- writes the promotable entries, as candidate record lines, to the staged file.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from hashlib import blake2b
from pathlib import Path
from typing import BinaryIO, TextIO

from harness.curator.candidate import PROMOTABLE, Candidate, candidate_line
from harness.curator.diffs import DIFF_PREVIEW
from harness.curator.record import RecordRead, read_record
from harness.state.memory import parse_fields

HEAD_BYTES = 65536  # how much of raw.md's head identifies it before the rewrite

# A plain note kept for the end: (number, ts, role, feature, text, run), where the number
# counts raw.md's entries from the cursor's `start`, from 1.
Note = tuple


@dataclass
class ScanJob:
    """What the pass needs."""

    raw: str
    start: int  # lines before this offset were learned by an earlier run
    raw_keep: int
    month: str  # the archive month carried over from the last run
    staged: str | None  # where to write candidate lines; None in a dry run
    batch: str  # candidate lines are tagged batch:seq
    mission: str
    identity: str | None = None  # where the candidate record is, to read it first
    # how far the lesson database covers the record already; read on from there
    record: RecordRead = field(default_factory=RecordRead)
    notes_kept: int = 0  # the newest plain notes to hand over (`Scan.notes`)
    # raw.md read from its start again (a hand edit before the cursor): the keys of the
    # entries the last run counted and kept (`note_keys`); those are not handed over again
    counted: list[list[str]] = field(default_factory=list)


@dataclass
class Scan:
    """What the pass found besides the entries."""

    end: int = 0  # offset after the last complete line
    cut: int = 0  # raw.md's bytes before this go to the archive
    cut_line: int = 0
    inode: int = 0
    head: bytes = b""
    # where the archive month changes: (offset, line number, month)
    months: list[tuple[int, int, str]] = field(default_factory=list)
    preview: list[str] = field(default_factory=list)  # raw.md's first DIFF_PREVIEW lines
    processed: int = 0  # lines from `start` on
    unparsed: int = 0  # of those, lines that did not parse
    staged: int = 0  # candidate lines written
    staged_preview: list[str] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)  # the newest `notes_kept` plain notes
    counted: list[list[str]] = field(default_factory=list)  # `note_keys` of the cut on
    recounted: int = 0  # entries not handed over again: counted by an earlier run


class RawPass:
    """The pass itself: iterate `candidates()` then `entries()`, then read `record` and
    `scan`."""

    def __init__(self, job: ScanJob) -> None:
        self.job = job
        self.scan = Scan(months=[(0, 0, job.month)])
        read = job.record
        self.record = RecordRead(read.end, read.tail_sha, dict(read.batches), dict(read.latest))

    def candidates(self) -> Iterator[Candidate]:
        """The candidate record's new lines (`record.read_record`); then `record` says how
        far they go."""
        if self.job.identity is not None:
            yield from read_record(Path(self.job.identity), self.record)

    def entries(self) -> Iterator[tuple | None]:
        """raw.md's entries from the cursor's `start` on, as (ts, role, feature, kind,
        text, run), a plain note as None; then `scan` holds what else the pass found."""
        try:
            f = open(self.job.raw, "rb")
        except FileNotFoundError:
            return
        notes: deque[Note] = deque(maxlen=max(self.job.notes_kept, 0))
        staged_path = self.job.staged
        with f, open(staged_path or os.devnull, "w", encoding="utf-8") as staged:
            number = 0  # entries from `start` on, from 1
            for number, fields in enumerate(self._entries(f), 1):
                if fields[3] == "-":
                    notes.append((number, *fields[:3], *fields[4:]))
                    yield None
                    continue
                if fields[3] in PROMOTABLE:
                    self._stage(fields, staged)
                yield fields
            if staged_path:
                staged.flush()
                os.fsync(staged.fileno())
        self.scan.notes = list(notes)
        self.scan.processed = number + self.scan.unparsed

    def _entries(self, f: BinaryIO) -> Iterator[tuple]:
        """The fields of each entry from `start` on (`memory.parse_fields`); on the way, the
        head, the preview, the month changes, the lines that do not parse, and the cut."""
        scan, start, month = self.scan, self.job.start, self.job.month
        keep: deque[tuple[int, int, tuple]] = deque(maxlen=max(self.job.raw_keep, 0))
        counted = Counted(self.job.counted) if self.job.counted else None
        head = bytearray()
        offset = lineno = unparsed = 0
        scan.inode = os.fstat(f.fileno()).st_ino
        for raw_line in f:
            if not raw_line.endswith(b"\n"):
                break  # an append in progress: the next run takes it
            if offset < HEAD_BYTES:
                head += raw_line[: HEAD_BYTES - offset]
            line = raw_line.decode("utf-8", "replace")
            if lineno < DIFF_PREVIEW:
                scan.preview.append(line)
            fields = parse_fields(line)
            if fields is None:
                if offset >= start:
                    unparsed += 1
            else:
                if fields[0][:7] != month:
                    month = fields[0][:7]
                    scan.months.append((offset, lineno, month))
                keep.append((offset, lineno, fields))
                if offset < start:
                    pass
                elif counted is not None and counted.take(fields):
                    scan.recounted += 1
                else:
                    yield fields
            offset += len(raw_line)
            lineno += 1
        scan.end, scan.head, scan.unparsed = offset, bytes(head), unparsed
        # the cut: where the `raw_keep`-th last entry starts; with none to keep, the end
        scan.cut, scan.cut_line = keep[0][:2] if keep else (offset, lineno)
        scan.counted = [note_keys(fields) for _, _, fields in keep]

    def _stage(self, fields: tuple, staged: TextIO) -> None:
        """Write a promotable entry to the staged file as a candidate record line."""
        ts, role, feature, kind, text, run = fields
        scan = self.scan
        line = candidate_line(f"{self.job.batch}:{scan.staged}", ts, self.job.mission, role,
                              kind, feature, run, text) + "\n"
        staged.write(line)
        if scan.staged < DIFF_PREVIEW:
            scan.staged_preview.append(line)
        scan.staged += 1


def note_keys(fields: tuple) -> list[str]:
    """Two keys of a raw.md entry (`memory.parse_fields`) that a run counted: its time with
    its role, feature, kind and run, and its time with its text. A person's edit of raw.md
    changes one at most, so a run reading raw.md from its start after an edit tells the
    entries counted before from new ones (each note counts once)."""
    ts, role, feature, kind, text, run = fields
    return [blake2b(f"{ts} {role} {feature} {kind} {run}".encode(), digest_size=8).hexdigest(),
            blake2b(f"{ts} {text}".encode(), digest_size=8).hexdigest()]


class Counted:
    """The entries an earlier run counted, by `note_keys`; each is taken once."""

    def __init__(self, keys: list[list[str]]) -> None:
        self.by_key: dict[str, list[int]] = {}
        for n, pair in enumerate(keys):
            for key in pair:
                self.by_key.setdefault(key, []).append(n)
        self.taken: set[int] = set()

    def take(self, fields: tuple) -> bool:
        """Whether the entry was counted before (and, if so, it is taken)."""
        for key in note_keys(fields):
            for n in self.by_key.get(key, ()):
                if n not in self.taken:
                    self.taken.add(n)
                    return True
        return False

def months_before(months: list[tuple[int, int, str]], cut: int) -> list[tuple[int, int, str]]:
    """The month changes that apply to raw.md's bytes before `cut`."""
    out = [m for m in months if m[0] < cut]
    # an entry at offset 0 overrides the month carried over from the last run
    while len(out) > 1 and out[1][0] == out[0][0]:
        out.pop(0)
    return out


def checked_keys(counted: object) -> list[list[str]]:
    """The cursor's `counted` keys (`scan.note_keys`) if they have that shape, else none."""
    if not isinstance(counted, list):
        return []
    return [pair for pair in counted if isinstance(pair, list) and len(pair) == 2
            and all(isinstance(key, str) for key in pair)]
