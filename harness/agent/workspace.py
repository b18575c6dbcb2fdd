"""The two tools that touch the working directory: a persistent bash shell and the text
editor. Both stay inside the session's working directory; the shell runs with secrets
removed from its environment and dies with the harness.
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from harness.agent.procs import die_with_parent
from harness.state.store import atomic_write
from harness.types import ToolResult

EDIT_COMMANDS = ("view", "create", "str_replace", "insert")



def truncate(text: str, limit: int, dropped: int = 0) -> str:
    """`text` cut to `limit` characters around a visible marker, keeping head and tail."""
    if len(text) <= limit and not dropped:
        return text
    head, tail = limit // 2, limit - limit // 2
    cut = len(text) - head - tail + dropped
    return f"{text[:head]}\n[... {cut} characters truncated ...]\n{text[len(text) - tail:]}"


def numbered(lines: list[str], first: int = 1) -> str:
    """Lines prefixed with their line numbers, like `cat -n`."""
    return "\n".join(f"{n:6}\t{line}" for n, line in enumerate(lines, first))


class Shell:
    """One persistent bash process: `cd` and `export` carry over from one command to the next."""

    def __init__(self, workdir: Path, timeout: float, output_chars: int,
                 environment: Callable[[], dict[str, str]]):
        self.workdir, self.timeout, self.output_chars = workdir, timeout, output_chars
        self.environment = environment  # read at each (re)start, like a fresh login
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
        self.proc = subprocess.Popen(
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
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
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


class Editor:
    """The text editor tool, confined to the working directory."""

    def __init__(self, workdir: Path, output_chars: int):
        self.root = workdir.resolve()
        self.output_chars = output_chars

    def run(self, args: dict[str, Any]) -> ToolResult:
        """Dispatch one editor command."""
        command = args.get("command")
        if command not in EDIT_COMMANDS:
            return ToolResult(f"unknown command {command!r}; use one of {', '.join(EDIT_COMMANDS)}",
                              True)
        path = args.get("path")
        if not isinstance(path, str) or not path:
            return ToolResult("missing 'path'", True)
        try:
            real = Path(os.path.realpath(self.root / path))
            if not real.is_relative_to(self.root):
                return ToolResult(f"{path} is outside the working directory {self.root}; refused",
                                  True)
            return getattr(self, command)(real, path, args)
        except (OSError, UnicodeDecodeError, ValueError) as e:
            return ToolResult(f"{command} {path}: {e}", True)

    def view(self, real: Path, path: str, args: dict[str, Any]) -> ToolResult:
        if real.is_dir():
            entries = sorted(str(p.relative_to(real)) + ("/" if p.is_dir() else "")
                             for p in self._walk(real, depth=2))
            listing = "\n".join(entries) or "(empty)"
            return ToolResult(truncate(f"{path} (2 levels, hidden excluded):\n{listing}",
                                       self.output_chars))
        lines = real.read_text(encoding="utf-8").splitlines()
        start, end = 1, len(lines)
        if (view_range := args.get("view_range")) is not None:
            if not (isinstance(view_range, list) and len(view_range) == 2
                    and all(isinstance(n, int) for n in view_range)):
                return ToolResult("view_range must be [start, end] (end -1 means to the end)", True)
            start, end = view_range[0], len(lines) if view_range[1] == -1 else view_range[1]
            if not 1 <= start <= max(len(lines), 1) or not start <= end <= len(lines):
                return ToolResult(f"view_range {view_range} is outside {path}'s "
                                  f"{len(lines)} lines", True)
        if not lines:
            return ToolResult(f"{path} is empty")
        return ToolResult(truncate(numbered(lines[start - 1:end], start), self.output_chars))

    def _walk(self, folder: Path, depth: int) -> list[Path]:
        found = []
        for child in folder.iterdir():
            if child.name.startswith("."):
                continue
            found.append(child)
            if depth > 1 and child.is_dir() and not child.is_symlink():
                found.extend(self._walk(child, depth - 1))
        return found

    def create(self, real: Path, path: str, args: dict[str, Any]) -> ToolResult:
        text = args.get("file_text")
        if not isinstance(text, str):
            return ToolResult("create needs 'file_text'", True)
        if real.is_dir():
            return ToolResult(f"{path} is a directory", True)
        existed = real.exists()
        atomic_write(real, text)
        return ToolResult(f"{'overwrote' if existed else 'created'} {path}")

    def str_replace(self, real: Path, path: str, args: dict[str, Any]) -> ToolResult:
        old, new = args.get("old_str"), args.get("new_str") or ""
        if not isinstance(old, str) or not old:
            return ToolResult("str_replace needs a non-empty 'old_str'", True)
        content = real.read_text(encoding="utf-8")
        count = content.count(old)
        if count != 1:
            where = "" if count == 0 else " (at lines " + ", ".join(
                str(content.count("\n", 0, m.start()) + 1)
                for m in re.finditer(re.escape(old), content)) + ")"
            return ToolResult(f"old_str matches {count} times in {path}{where}; it must match "
                              "exactly once: include more surrounding lines", True)
        atomic_write(real, content.replace(old, new))
        first = content[: content.index(old)].count("\n") + 1
        return ToolResult(f"edited {path}:\n{self._snippet(real, first, new.count(chr(10)) + 1)}")

    def insert(self, real: Path, path: str, args: dict[str, Any]) -> ToolResult:
        after, text = args.get("insert_line"), args.get("insert_text")
        if not isinstance(after, int) or not isinstance(text, str):
            return ToolResult("insert needs 'insert_line' (a number) and 'insert_text'", True)
        lines = real.read_text(encoding="utf-8").splitlines(keepends=True)
        if not 0 <= after <= len(lines):
            return ToolResult(f"insert_line {after} is outside 0..{len(lines)} for {path}", True)
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        new = text if text.endswith("\n") else text + "\n"
        atomic_write(real, "".join(lines[:after]) + new + "".join(lines[after:]))
        return ToolResult(f"inserted after line {after} of {path}:\n"
                          f"{self._snippet(real, after + 1, new.count(chr(10)))}")

    def _snippet(self, real: Path, first: int, count: int, context: int = 3) -> str:
        lines = real.read_text(encoding="utf-8").splitlines()
        start = max(1, first - context)
        return truncate(numbered(lines[start - 1:first + count - 1 + context], start),
                        self.output_chars)
