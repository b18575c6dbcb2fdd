"""The curator's one pass over raw.md, to its last complete line: the entries from `start` on,
the promotable ones staged as candidate lines, the archive cut with its months, the head."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from hashlib import blake2b
from pathlib import Path

from harness.curator.record import PROMOTABLE, Candidate
from harness.state.memory import parse_fields

HEAD_BYTES = 65536  # how much of raw.md's head identifies it before the rewrite


@dataclass
class Scan:
    """What the pass found besides the entries."""

    end: int = 0  # offset after the last complete line
    cut: int = 0  # raw.md's bytes before this go to the archive
    cut_line: int = 0
    inode: int = 0
    head: bytearray = field(default_factory=bytearray)  # raw.md's first HEAD_BYTES
    months: list[tuple[int, str]] = field(default_factory=list)  # (offset, month) before cut
    processed: int = 0  # lines from `start` on
    unparsed: int = 0  # of those, lines that did not parse
    n_staged: int = 0  # candidate lines written
    counted: list[list[str]] = field(default_factory=list)  # `note_keys` of the cut on
    recounted: int = 0  # entries not handed over again: counted by an earlier run


class RawPass:
    """Iterate `entries()`, then read `scan`. Candidate lines (`batch:seq`) go to `staged` (None:
    nowhere); the entries of `counted` (`note_keys`), an earlier run's, are not handed over."""

    def __init__(self, raw: Path, start: int = 0, *, raw_keep: int = 0, month: str = "",
                 staged: Path | None = None, batch: str = "", mission: str = "",
                 counted: list[list[str]] | None = None) -> None:
        self.raw, self.start, self.raw_keep, self.month = raw, start, raw_keep, month
        self.staged, self.batch, self.mission = staged, batch, mission
        self.counted = counted or []
        self.scan = Scan()

    def entries(self) -> Iterator[tuple]:
        """raw.md's entries from `start` on, as (ts, role, feature, kind, text, run)."""
        try:
            f = open(self.raw, "rb")
        except FileNotFoundError:
            return
        scan = self.scan
        with f, open(self.staged or os.devnull, "w", encoding="utf-8") as staged:
            scan.inode = os.fstat(f.fileno()).st_ino
            for fields in self._entries(f):
                ts, role, feature, kind, text, run = fields
                if kind in PROMOTABLE:
                    staged.write(Candidate(ts, self.mission, role, kind, feature, run, text)
                                 .line(f"{self.batch}:{scan.n_staged}") + "\n")
                    scan.n_staged += 1
                yield fields
            if self.staged:
                staged.flush()
                os.fsync(staged.fileno())

    def _entries(self, f: Iterator[bytes]) -> Iterator[tuple]:
        scan, start, months = self.scan, self.start, [(0, self.month)]
        keep: deque[tuple[int, int, tuple]] = deque(maxlen=max(self.raw_keep, 0))
        counted = Counted(self.counted)
        offset = lineno = 0
        for raw_line in f:
            if not raw_line.endswith(b"\n"):
                break  # an append in progress: the next run takes it
            if offset < HEAD_BYTES:
                scan.head += raw_line[: HEAD_BYTES - offset]
            fields = parse_fields(raw_line.decode("utf-8", "replace"))
            if fields is not None:
                if fields[0][:7] != months[-1][1]:
                    if months[-1][0] == offset:  # an entry at 0 overrides the month carried
                        months.pop()
                    months.append((offset, fields[0][:7]))
                keep.append((offset, lineno, fields))
            if offset >= start:
                if fields is None:
                    scan.unparsed += 1
                elif counted.by_key and counted.take(fields):
                    scan.recounted += 1
                else:
                    scan.processed += 1
                    yield fields
            offset += len(raw_line)
            lineno += 1
        # the cut: where the `raw_keep`-th last entry starts; with none to keep, the end
        scan.end, (scan.cut, scan.cut_line) = offset, keep[0][:2] if keep else (offset, lineno)
        scan.months = [m for m in months if m[0] < scan.cut]
        scan.processed += scan.unparsed
        scan.counted = [note_keys(fields) for _, _, fields in keep]


def note_keys(fields: tuple) -> list[str]:
    """Two keys of a counted entry: its time with role, feature, kind and run; its time with
    its text. A person's edit of raw.md changes one at most, so either finds the entry."""
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
        for n in (n for key in note_keys(fields) for n in self.by_key.get(key, ())):
            if n not in self.taken:
                self.taken.add(n)
                return True
        return False
