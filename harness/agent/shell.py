"""The bash tool: one persistent shell in the session's working directory, run with secrets
removed from its environment, in its own process group, confined as the role says (bwrap or
the keeper, harness/agent/sandbox.py), and dying with the harness with all it started.
"""

from __future__ import annotations

import os
import re
import select
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO

from harness.agent.output import truncate
from harness.agent.procs import die_with_parent, stop_tree
from harness.types import ToolResult


class Shell:
    """One persistent bash process: `cd` and `export` carry over from one command to the next."""

    def __init__(self, workdir: Path, timeout: float, output_chars: int,
                 environment: Callable[[], dict[str, str]],
                 start: Callable[..., subprocess.Popen] = subprocess.Popen):
        self.workdir, self.timeout, self.output_chars = workdir, timeout, output_chars
        self.environment = environment  # read at each (re)start, like a fresh login
        self.start = start  # Popen, in the sandbox or under the keeper (sandbox.start)
        self.proc: subprocess.Popen[bytes] | None = None
        self.script: IO[bytes] | None = None  # the command file, unlinked

    def run(self, command: str) -> ToolResult:
        """Run one command; output is stdout and stderr merged, then the exit code."""
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        assert self.proc and self.proc.stdin and self.script is not None
        # The command goes through a file so that unbalanced quotes or a heredoc in it
        # cannot swallow the sentinel line; stdin is /dev/null so it cannot read ours either.
        # The file is unlinked and reaches bash as an inherited descriptor: a harness
        # killed with SIGKILL leaves nothing behind in the temp dir.
        script = self.script
        script.seek(0)
        script.truncate()
        script.write((command + "\n").encode())
        script.flush()
        script.seek(0)  # where /dev/fd/N shares our offset (macOS), bash reads from the start
        marker = f"__HARNESS_DONE_{uuid.uuid4().hex}__"
        line = f"source /dev/fd/{script.fileno()} </dev/null; printf '%s:%s\\n' {marker} \"$?\"\n"
        try:
            self.proc.stdin.write(line.encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            self.stop()
            return ToolResult("the shell had exited; call bash again to get a new one", True)
        return self._collect(re.compile(re.escape(marker.encode()) + rb":(\d+)\n"))

    def _start(self) -> None:
        if self.script is None:
            self.script = tempfile.TemporaryFile(prefix="harness-bash-")
        self.proc = self.start(
            ["bash", "--noprofile", "--norc"],
            cwd=self.workdir,
            env=self.environment(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so a timeout can kill it all
            preexec_fn=die_with_parent,
            pass_fds=(self.script.fileno(),),
        )

    def _collect(self, sentinel: re.Pattern[bytes]) -> ToolResult:
        assert self.proc and self.proc.stdout
        fd, deadline = self.proc.stdout.fileno(), time.monotonic() + self.timeout
        keep = max(4 * self.output_chars, 65536)  # bytes kept at each end while reading
        buf, dropped = bytearray(), 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self.stop()
                note = (f"[timed out after {self.timeout:g}s: the command and its shell were "
                        "killed; a new shell (back in the working directory) starts next call]")
                return ToolResult(self._text(bytes(buf), dropped, note), is_error=True)
            chunk = os.read(fd, 65536)
            if not chunk:
                code = self.proc.wait()
                self.stop()
                note = f"[the shell exited with code {code}; a new shell starts on the next call]"
                return ToolResult(self._text(bytes(buf), dropped, note), is_error=True)
            start = max(0, len(buf) - 80)
            buf += chunk
            if m := sentinel.search(buf, start):
                return ToolResult(self._text(bytes(buf[: m.start()]), dropped,
                                             f"[exit code {int(m[1])}]"))
            if len(buf) > 3 * keep:  # drop the middle so `yes` cannot fill memory
                dropped += len(buf) - 2 * keep
                buf = buf[:keep] + buf[-keep:]

    def _text(self, output: bytes, dropped: int, note: str) -> str:
        text = truncate(output.decode(errors="replace"), self.output_chars, dropped)
        return f"{text}\n{note}" if text and not text.endswith("\n") else f"{text}{note}"

    def stop(self) -> None:
        """Kill the shell and everything it started."""
        if self.proc is None:
            return
        stop_tree(self.proc)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream:
                try:
                    stream.close()
                except BrokenPipeError:
                    pass
        self.proc = None

    def close(self) -> None:
        """Stop the shell and close its command file."""
        self.stop()
        if self.script is not None:
            self.script.close()
            self.script = None
