"""The raw.md pass (`scan.RawPass`) in a second process, for a big log.

Clustering is the part of a curator run that cannot be split; the pass can. So
for a big log on a machine with two cores or more (`use_process`), the pass runs
in `python -m harness.curator.reader` (the job as JSON on its stdin) and sends its
batches down a pipe while the curator clusters the ones before: framed `marshal`
data, one tag byte and a 4-byte length: C record lines, R how far the record was
read, B raw.md entries, D done, E error. Inline or not, the curator gets the same
entries in the same order. A reader process that fails or dies is a BackendError
(exit 6) before the curator has changed anything.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import marshal
import os
import struct
import subprocess
import sys
from collections.abc import Generator, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import BinaryIO

from harness.curator.record import RecordRead
from harness.curator.scan import RawPass, Record, Scan, ScanJob
from harness.errors import BackendError

# inline at 1M entries: 33.0 s vs 21.2 s with the reader process (median of 3, 2026-11-23)
PROCESS_MIN_BYTES = 4 << 20  # new bytes below this are read inline: a process costs ~0.1 s
PIPE_BYTES = 1 << 20  # Linux's default pipe-max-size
_FRAME = struct.Struct("<cI")


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

    Use as a context manager: leaving it early stops the reader process. Given the fds of
    the curator's locks, the reader process holds the locks too: a curator that dies leaves
    no reader writing the staged file under the next run (it stops at its next batch, the
    pipe gone).
    """

    def __init__(self, job: ScanJob, *, process: bool, lock_fds: tuple[int, ...] = ()) -> None:
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
                [sys.executable, "-m", "harness.curator.reader"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                pass_fds=lock_fds)
            _widen_pipe(self._proc.stdout.fileno())
            # the job on stdin: its batches alone can pass the 128 KiB an argument may hold.
            # The reader reads all of it before it writes, so this cannot block both sides.
            with contextlib.suppress(BrokenPipeError), self._proc.stdin as job_in:
                job_in.write(json.dumps(asdict(job)).encode())  # died: its frames say so

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


def _frames(raw_pass: RawPass) -> Iterator[tuple[bytes, bytes]]:
    """The pass as (tag, payload) frames, in the order the curator takes them."""
    for batch in raw_pass.candidates():
        yield b"C", marshal.dumps(batch)
    yield b"R", marshal.dumps(asdict(raw_pass.record))
    for batch in raw_pass.batches():
        yield b"B", marshal.dumps(batch)
    yield b"D", marshal.dumps(asdict(raw_pass.scan))


def main() -> int:
    """The reader process: run the pass for the JSON job on stdin, frames to stdout."""
    out = sys.stdout.buffer
    try:
        job = ScanJob(**json.load(sys.stdin))
        for tag, payload in _frames(RawPass(job)):
            _write_frame(out, tag, payload)
        out.flush()
    except BrokenPipeError:
        return 1  # the curator stopped reading: it has failed or been stopped
    except OSError as e:
        with contextlib.suppress(OSError):
            _write_frame(out, b"E", str(e).encode())
            out.flush()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
