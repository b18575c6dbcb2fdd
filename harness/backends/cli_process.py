"""A running agent CLI: its output drained on threads, its process group stopped at the
end (`command`'s process side)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

KEEP_BYTES = 1 << 20  # stdout kept for parsing; every line also goes to the transcript
LINE_BYTES = 16 << 20  # a longer line (no JSON event of a CLI is) is read in pieces
STDERR_BYTES = 16 << 10  # stderr tail kept and recorded
# what a run's CLI output may take in its transcript: past it (a CLI printing without end
# for its whole wall-clock cap), only the events that report progress are recorded
TRANSCRIPT_BYTES = 64 << 20


def wait_and_stop(proc: subprocess.Popen, wall: float | None, grace: float) -> bool:
    """Wait for the CLI, stopping its process group at the wall-clock cap; True if it hit."""
    try:
        proc.wait(timeout=wall)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
    # After a normal exit too: what is left of the group would hold the output pipes open.
    if _signal_group(proc.pid, signal.SIGTERM):
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and _signal_group(proc.pid, 0):
            if proc.poll() is not None:  # reap the leader, or the group never looks empty
                _reap_group(proc.pid)
            time.sleep(0.05)
        _signal_group(proc.pid, signal.SIGKILL)
    proc.wait()
    return timed_out


def _reap_group(pgid: int) -> None:
    """Reap the group's members that have become our children and died. Under run.sh (a
    child subreaper) what the CLI leaves behind is handed to us; dead and unreaped, it
    would keep the group looking alive until the grace ran out."""
    try:
        while os.waitpid(-pgid, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass  # none of the group is our child


def _signal_group(pgid: int, sig: int) -> bool:
    """Send `sig` to a process group; False when nothing is left in it."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


class Output:
    """Feeds the prompt and drains stdout and stderr on threads, keeping bounded tails."""

    def __init__(self, proc: subprocess.Popen, prompt: bytes, record: Callable, on_event):
        self._lines: deque[bytes] = deque()
        self._size = self._recorded = 0
        self._err = bytearray()
        self.error: Exception | None = None  # raised while reading; run() re-raises it
        self._threads = [
            threading.Thread(target=self._write, args=(proc.stdin, prompt), daemon=True),
            threading.Thread(target=self._read, args=(proc.stdout, record, on_event), daemon=True),
            threading.Thread(target=self._read_err, args=(proc.stderr,), daemon=True),
        ]
        for t in self._threads:
            t.start()

    @staticmethod
    def _write(stdin, prompt: bytes) -> None:
        try:
            stdin.write(prompt)
            stdin.close()
        except OSError:
            pass  # the CLI exited or closed stdin before reading all of it

    def _read(self, stdout, record: Callable, on_event) -> None:
        try:
            self._read_lines(stdout, record, on_event)
        except Exception as e:
            self.error = e
            for _ in iter(lambda: stdout.read1(65536), b""):
                pass  # keep draining, or a CLI blocked on a full pipe outlives the run

    def _read_lines(self, stdout, record: Callable, on_event) -> None:
        for raw in _whole_lines(stdout):
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            try:
                event = json.loads(line)
            except ValueError:
                event = None
            progress = on_event(event) if isinstance(event, dict) else None
            self._record(raw, event, line, progress, record)
            self._lines.append(raw)
            self._size += len(raw)
            while self._size > KEEP_BYTES and len(self._lines) > 1:
                self._size -= len(self._lines.popleft())

    def _record(self, raw: bytes, event: Any, line: str, progress: Any,
                record: Callable) -> None:
        """One line of output into the transcript, within TRANSCRIPT_BYTES."""
        before, self._recorded = self._recorded, self._recorded + len(raw)
        if self._recorded > TRANSCRIPT_BYTES:
            if before <= TRANSCRIPT_BYTES:
                record({"type": "cli_output", "text": f"[the CLI's output passed "
                        f"{TRANSCRIPT_BYTES >> 20} MiB: the rest is not recorded, only "
                        "its progress]"})
            if progress:
                record({"type": "cli_event", "event": {"type": event.get("type")},
                        "so_far": progress})
        elif isinstance(event, dict):
            record({"type": "cli_event", "event": event,
                    **({"so_far": progress} if progress else {})})
        elif line.strip():
            record({"type": "cli_output", "text": line})

    def _read_err(self, stderr) -> None:
        for chunk in iter(lambda: stderr.read1(65536), b""):
            self._err += chunk
            del self._err[:-STDERR_BYTES]

    def join(self) -> None:
        for t in self._threads:
            t.join(timeout=5)  # a process that left the group may still hold a pipe

    def stdout(self) -> str:
        return b"".join(self._lines).decode("utf-8", "replace")

    def stderr(self) -> str:
        return self._err.decode("utf-8", "replace")


def _whole_lines(stdout) -> Iterator[bytes]:
    """stdout's lines, each whole up to LINE_BYTES: a result line longer than what is kept
    for parsing must still be one line to parse."""
    parts: list[bytes] = []
    size = 0
    for chunk in iter(lambda: stdout.readline(KEEP_BYTES), b""):
        parts.append(chunk)
        size += len(chunk)
        if chunk.endswith(b"\n") or size >= LINE_BYTES:
            yield b"".join(parts)
            parts, size = [], 0
    if parts:
        yield b"".join(parts)
