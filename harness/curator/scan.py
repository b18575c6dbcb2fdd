"""The curator's one pass over raw.md, inline or in a second process.

The pass first reads the candidate record's new lines (those after what the
digest covers, `candidates.read_record`), each with its normalised text, then
streams raw.md from its start to its last complete line and

- finds what the curator archives: the cut (the offset of the `raw_keep`-th
  last entry), where the month of the entries changes, raw.md's first bytes
  (the journal hashes them) and first lines (for `--dry-run`'s diffs);
- parses each line from the cursor's `start` on and hands the entries over in
  order, in batches, each lesson with its normalised text (`matching.normalize`)
  the first time its text goes by, and with the number of that first time after;
  plain notes (kind `-`) go by number only: the curator keeps just the newest
  few, which the pass hands over at the end (`Scan.notes`);
- writes the promotable entries, as candidate record lines, to the staged file.

None of that depends on clustering, which is the part of a curator run that
cannot be split. So for a big log on a machine with two cores or more
(`use_process`), the pass runs in `python -m harness.curator.scan JOB` and sends its
batches down a pipe while the curator clusters the ones before: framed
`marshal` data, one tag byte and a 4-byte length: C record lines, R how far
the record was read, B raw.md entries, D done, E error.
Inline or not, the curator gets the same entries in the same order. A reader
process that fails or dies is a BackendError (exit 6) before the curator has
changed anything.
"""

from __future__ import annotations

import fcntl
import json
import marshal
import os
import queue
import re
import struct
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Generator, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import BinaryIO, TextIO

from harness.agent.procs import die_with_parent
from harness.curator.book import LESSON_KINDS
from harness.curator.commit import HEAD_BYTES
from harness.curator.diffs import DIFF_PREVIEW
from harness.curator.matching import normalize
from harness.curator.promotion import PROMOTABLE, candidate_line
from harness.curator.record import RecordRead, read_record
from harness.errors import BackendError
from harness.state import memory

BATCH = 2000  # entries per batch
PROCESS_MIN_BYTES = 4 << 20  # new bytes below this are read inline: a process costs ~0.1 s
PIPE_BYTES = 1 << 20  # Linux's default pipe-max-size
AHEAD = 8  # batches the reader process may have ready beyond the pipe (a few hundred KiB each)
_FRAME = struct.Struct("<cI")

# memory.ENTRY with a greedy text: the run is split off after (parse_fields)
_ENTRY = re.compile(r"\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)\] (\S+) (\S+) ("
                    + "|".join(map(re.escape, memory.KINDS)) + r"): (.*)")
_RUN_ID = re.compile(r"[A-Za-z0-9_.-]+")

# One entry as handed over: (ts, role, feature, kind, text, run, ref). A lesson's ref is
# what the pass knows of its text, by role and kind (`RawPass._ref`):
# - a tuple, the first time: (key, anchors, strict, packed) of its `matching.Norm`;
# - None, the first time, when the pass left normalising to the curator;
# - an int after that: the number of that first time (0 for the pass's first text, in
#   record lines and raw.md entries alike), so the curator takes the cluster it found then.
# Other entries have None. In raw.md's batches, a run of plain notes is one int instead:
# how many there were.
Record = tuple
# A plain note kept for the end: (number, ts, role, feature, text, run), where the number
# counts raw.md's entries from the cursor's `start`, from 1.
Note = tuple


@dataclass
class ScanJob:
    """What the pass needs; JSON-ready, since it crosses into the reader process."""

    raw: str
    start: int  # lines before this offset were learned by an earlier run
    raw_keep: int
    month: str  # the archive month carried over from the last run
    staged: str | None  # where to write candidate lines; None in a dry run
    batch: str  # candidate lines are tagged batch:seq
    mission: str
    identity: str | None = None  # where the candidate record is, to read it first
    record_start: int = 0  # the record's offset and batches the digest covers already
    record_batches: dict[str, int] = field(default_factory=dict)
    notes_kept: int = 0  # the newest plain notes to hand over (`Scan.notes`)


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


def parse_fields(line: str) -> tuple[str, str, str, str, str, str | None] | None:
    """The fields of `line` (ts, role, feature, kind, text, run) as `memory.parse_entry`
    reads them, or None; `line` may end with its newline. Role, feature and kind come
    interned, since millions of entries share a few.

    One greedy match and a look at the end for the run, where `memory.ENTRY`'s lazy text
    tries the run's pattern at every character: the same fields in half the time.
    """
    m = _ENTRY.fullmatch(line, 0, len(line) - 1 if line[-1:] == "\n" else len(line))
    if m is None:
        return None
    ts, role, feature, kind, text = m.groups()
    run = None
    if text[-1:] == ")":
        i = text.rfind(" (run ")
        # only the last " (run " can be the run: a run id has no space
        if i >= 0 and _RUN_ID.fullmatch(text, i + 6, len(text) - 1):
            text, run = text[:i], text[i + 6:-1]
    intern = sys.intern
    return ts, intern(role), intern(feature), intern(kind), text, run


class RawPass:
    """The pass itself: iterate `candidates()` then `batches()`, then read `record` and `scan`."""

    def __init__(self, job: ScanJob) -> None:
        self.job = job
        self.scan = Scan(months=[(0, 0, job.month)])
        self.record = RecordRead(job.record_start, "", dict(job.record_batches))
        # hash of (role, kind, text) -> its number: 64 bits, so the odds of two texts
        # taken for one are below one in ten million for a million distinct texts
        self._texts: dict[int, int] = {}
        self.normalizing = True

    def candidates(self) -> Iterator[list[Record]]:
        """The candidate record's new lines (`candidates.read_record`), in batches of
        (*Candidate, ref) (see `Record`); then `record` says how far they go."""
        if self.job.identity is None:
            return
        batch: list[Record] = []
        for c in read_record(Path(self.job.identity), self.record):
            batch.append((*c, self._ref((c.role, c.kind), c.text)))
            if len(batch) >= BATCH:
                yield batch
                batch = []
        if batch:
            yield batch

    def batches(self) -> Iterator[list[Record | int]]:
        job, scan = self.job, self.scan
        keep: deque[tuple[int, int]] = deque(maxlen=max(job.raw_keep, 0))
        notes: deque[Note] = deque(maxlen=max(job.notes_kept, 0))
        head = bytearray()
        month, start = job.month, job.start
        offset = lineno = entries = 0
        batch: list[Record | int] = []
        try:
            f = open(job.raw, "rb")
        except FileNotFoundError:
            return
        staged = open(job.staged if job.staged else os.devnull, "w", encoding="utf-8")
        with f, staged:
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
                if fields:
                    if fields[0][:7] != month:
                        month = fields[0][:7]
                        scan.months.append((offset, lineno, month))
                    keep.append((offset, lineno))
                    if offset >= start:
                        entries += 1
                        if fields[3] == "-":
                            notes.append((entries, *fields[:3], *fields[4:]))
                            if batch and type(batch[-1]) is int:
                                batch[-1] += 1
                            else:
                                batch.append(1)
                        else:
                            batch.append(self._record(fields, staged))
                            if len(batch) >= BATCH:
                                yield batch
                                batch = []
                elif offset >= start:
                    scan.unparsed += 1
                if offset >= start:
                    scan.processed += 1
                offset += len(raw_line)
                lineno += 1
            if batch:
                yield batch
            if job.staged:
                staged.flush()
                os.fsync(staged.fileno())
        scan.end, scan.head, scan.notes = offset, bytes(head), list(notes)
        if job.raw_keep <= 0 or not keep:
            scan.cut, scan.cut_line = offset, lineno
        else:
            scan.cut, scan.cut_line = keep[0]

    def _record(self, fields: tuple, staged: TextIO) -> Record:
        ts, role, feature, kind, text, run = fields
        if kind not in LESSON_KINDS:
            return (ts, role, feature, kind, text, run, None)
        ref = self._ref((role, kind), text)
        if kind in PROMOTABLE:
            scan = self.scan
            line = candidate_line(f"{self.job.batch}:{scan.staged}", ts, self.job.mission, role,
                                  kind, feature, run, text) + "\n"
            staged.write(line)
            if scan.staged < DIFF_PREVIEW:
                scan.staged_preview.append(line)
            scan.staged += 1
        return (ts, role, feature, kind, text, run, ref)

    def _ref(self, bucket: tuple[str, str], text: str) -> int | tuple[str, str, str, str] | None:
        texts = self._texts
        h = hash((bucket, text))
        seen = texts.get(h)
        if seen is not None:
            return seen
        texts[h] = len(texts)
        if not self.normalizing:
            return None
        n = normalize(text)
        return (n.key, n.anchors, n.strict, n.packed)


def use_process(job: ScanJob) -> bool:
    """Whether the pass is worth a second process: enough new bytes and a second core."""
    if (os.cpu_count() or 1) < 2:
        return False
    try:
        return os.path.getsize(job.raw) - job.start >= PROCESS_MIN_BYTES
    except OSError:
        return False


class RawReader:
    """The pass's batches and its `scan`, from this process or a reader process.

    Use as a context manager: leaving it early stops the reader process.
    """

    def __init__(self, job: ScanJob, *, process: bool) -> None:
        self.job = job
        self.scan: Scan | None = None
        self.record: RecordRead | None = None
        self._pass = None if process else RawPass(job)
        self._proc: subprocess.Popen | None = None
        if process:
            package_root = str(Path(__file__).resolve().parents[2])
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(
                [package_root, *filter(None, [os.environ.get("PYTHONPATH")])])}
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "harness.curator.scan", json.dumps(asdict(job))],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, env=env,
                preexec_fn=die_with_parent)
            _widen_pipe(self._proc.stdout.fileno())

    def __enter__(self) -> RawReader:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait()
            self._proc.stdout.close()

    def candidates(self) -> Iterator[list[Record]]:
        """The candidate record's new lines (see `RawPass.candidates`); take them first."""
        if self._pass is not None:
            yield from self._pass.candidates()
            self.record = self._pass.record
            return
        self.record = RecordRead(**(yield from self._framed(b"C")))

    def __iter__(self) -> Iterator[list[Record | int]]:
        if self.record is None and any(True for _ in self.candidates()):
            raise RuntimeError("take the record's candidates() before raw.md's entries")
        if self._pass is not None:
            yield from self._pass.batches()
            self.scan = self._pass.scan
            return
        self.scan = Scan(**(yield from self._framed(b"B")))
        self.scan.months = [tuple(m) for m in self.scan.months]
        self._proc.wait()  # it has sent all it had: it exits

    def _framed(self, tag: bytes) -> Generator[list[Record], None, dict]:
        """The batches in the frames tagged `tag`; returns what the frame after them holds."""
        while True:
            found, payload = self._frame()
            data = marshal.loads(payload)
            if found != tag:
                return data
            yield data

    def _frame(self) -> tuple[bytes, bytes]:
        """The next frame from the reader process; its failure as a BackendError."""
        assert self._proc is not None and self._proc.stdout is not None
        tag, payload = _read_frame(self._proc.stdout, self._proc)
        if tag == b"E":
            raise BackendError("the raw.md reader process failed: "
                               + payload.decode("utf-8", "replace"))
        return tag, payload


def _widen_pipe(fd: int) -> None:
    # A batch is a few hundred KiB and the default pipe holds 64 KiB: with a wider one
    # the reader can run a few batches ahead instead of waiting for each to be taken.
    if hasattr(fcntl, "F_SETPIPE_SZ"):
        try:
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        except OSError:
            pass  # above the system's pipe-max-size: the default works, a little slower


def _read_frame(stdout: BinaryIO, proc: subprocess.Popen) -> tuple[bytes, bytes]:
    header = stdout.read(_FRAME.size)
    if len(header) == _FRAME.size:
        tag, size = _FRAME.unpack(header)
        payload = stdout.read(size)
        if len(payload) == size:
            return tag, payload
    raise BackendError(f"the raw.md reader process ended early (exit {proc.wait()})")


def _write_frame(out: BinaryIO, tag: bytes, payload: bytes) -> None:
    out.write(_FRAME.pack(tag, len(payload)))
    out.write(payload)


class _FrameWriter(threading.Thread):
    """Writes the reader's frames from a queue, so that the pass runs up to AHEAD frames
    ahead of a curator that is busy (clustering the candidate record, say) instead of
    stopping whenever the pipe is full. A pipe the curator closed is drained to nowhere."""

    def __init__(self, out: BinaryIO) -> None:
        super().__init__(name="rawscan-writer", daemon=True)
        self.out = out
        self.frames: queue.Queue[tuple[bytes, bytes] | None] = queue.Queue(maxsize=AHEAD)
        self.broken = False

    def run(self) -> None:
        while (frame := self.frames.get()) is not None:
            if not self.broken:
                try:
                    _write_frame(self.out, *frame)
                except OSError:
                    self.broken = True  # the curator stopped reading
        if not self.broken:
            try:
                self.out.flush()
            except OSError:
                self.broken = True

    def send(self, tag: bytes, payload: bytes) -> bool:
        """Queue a frame; False once the curator has stopped reading."""
        self.frames.put((tag, payload))
        return not self.broken

    def ahead(self) -> bool:
        """Whether, besides the frame just sent, one waits for the pipe: the curator is
        behind, so this process normalises texts for it; when not, it leaves them to the
        curator and catches up (the same clusters either way: `normalize` is pure)."""
        return self.frames.qsize() > 1

    def finish(self) -> bool:
        """Write what is queued; whether it all reached the pipe."""
        self.frames.put(None)
        self.join()
        return not self.broken


def _send_batches(writer: _FrameWriter, raw_pass: RawPass, tag: bytes,
                  batches: Iterator[list[Record]] | Iterator[list[Record | int]]) -> bool:
    """Frame each batch as `tag`, normalising only while the curator is behind (see
    `_FrameWriter.ahead`); False once the curator has stopped reading."""
    for batch in batches:
        if not writer.send(tag, marshal.dumps(batch)):
            return False
        raw_pass.normalizing = writer.ahead()
    return True


def main(argv: list[str]) -> int:
    """The reader process: run the pass for the JSON job in argv, frames to stdout."""
    job = ScanJob(**json.loads(argv[0]))
    raw_pass = RawPass(job)
    writer = _FrameWriter(sys.stdout.buffer)
    writer.start()
    try:
        # False: the curator stopped reading, it has failed or been stopped
        if not _send_batches(writer, raw_pass, b"C", raw_pass.candidates()):
            return 1
        writer.send(b"R", marshal.dumps(asdict(raw_pass.record)))
        if not _send_batches(writer, raw_pass, b"B", raw_pass.batches()):
            return 1
        writer.send(b"D", marshal.dumps(asdict(raw_pass.scan)))
    except OSError as e:
        writer.send(b"E", str(e).encode())
        writer.finish()
        return 1
    return 0 if writer.finish() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
