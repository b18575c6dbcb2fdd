"""The text editor tool: view, create, str_replace and insert, confined to the session's
working directory; a path that resolves outside it is refused.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from harness.agent.output import truncate
from harness.state.store import atomic_write
from harness.types import ToolResult

EDIT_COMMANDS = ("view", "create", "str_replace", "insert")


def numbered(lines: list[str], first: int = 1) -> str:
    """Lines prefixed with their line numbers, like `cat -n`."""
    return "\n".join(f"{n:6}\t{line}" for n, line in enumerate(lines, first))


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
        """A file's lines numbered (or a `view_range` of them), or a folder two levels deep."""
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
        """Write `file_text` to the file, creating or overwriting it."""
        text = args.get("file_text")
        if not isinstance(text, str):
            return ToolResult("create needs 'file_text'", True)
        if real.is_dir():
            return ToolResult(f"{path} is a directory", True)
        existed = real.exists()
        atomic_write(real, text)
        return ToolResult(f"{'overwrote' if existed else 'created'} {path}")

    def str_replace(self, real: Path, path: str, args: dict[str, Any]) -> ToolResult:
        """Replace `old_str`, which must occur exactly once, with `new_str`."""
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
        """Insert `insert_text` after line `insert_line` (0: at the top)."""
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
