"""The text editor tool: view, create, str_replace and insert, confined like the agent's shell.

It runs in the harness's process, so it confines itself: every file and folder is opened
beneath the working directory by the kernel (harness/agent/beneath.py), so no symlink, `..`
or rename race leads out of it; and what it opened must not lie in the state directory, the
identity folder or the harness's home, which the sandbox hides from the shell (their env
files, role configs and code). Writes go to a temporary file in the same opened folder,
then a rename there.
"""

from __future__ import annotations

import errno
import re
from pathlib import Path
from typing import Any

from harness.agent.beneath import relative_inside
from harness.agent.output import truncate
from harness.agent.treefile import Refused, TreeFile
from harness.types import ToolResult

EDIT_COMMANDS = ("view", "create", "str_replace", "insert")


def numbered(lines: list[str], first: int = 1) -> str:
    """Lines prefixed with their line numbers, like `cat -n`."""
    return "\n".join(f"{n:6}\t{line}" for n, line in enumerate(lines, first))


def _why(error: Exception) -> str:
    if isinstance(error, OSError) and error.errno in (errno.EXDEV, errno.ELOOP):
        return "it is outside the working directory (it leads out through a symlink); refused"
    return (error.strerror if isinstance(error, OSError) else None) or str(error)


class Editor:
    """The text editor tool, confined to the working directory."""

    def __init__(self, workdir: Path, output_chars: int, hidden: tuple[Path | None, ...] = (),
                 read_only: tuple[Path, ...] = ()):
        self.root = workdir.resolve()
        self.output_chars = output_chars
        # what lies inside the tree but out of reach (./.harness, a harness home in it); the
        # tree itself may lie inside the state (a feature's worktree), as in the sandbox
        inside = (p.resolve() for p in hidden if p is not None)
        self.hidden = tuple(p for p in inside if p != self.root and p.is_relative_to(self.root))
        # what the sandbox shows read-only inside the tree (the person's .git, to a planner)
        self.read_only = tuple(p for p in (r.resolve() for r in read_only)
                               if p.is_relative_to(self.root))

    def run(self, args: dict[str, Any]) -> ToolResult:
        """Dispatch one editor command."""
        command = args.get("command")
        if command not in EDIT_COMMANDS:
            return ToolResult(f"unknown command {command!r}; use one of {', '.join(EDIT_COMMANDS)}",
                              True)
        path = args.get("path")
        if not isinstance(path, str) or not path:
            return ToolResult("missing 'path'", True)
        rel = relative_inside(self.root, path)
        if rel is None:
            return ToolResult(f"{path} is outside the working directory {self.root}; refused",
                              True)
        try:
            check = self.check if command == "view" else self.check_write
            return getattr(self, command)(TreeFile(self.root, rel, check), path, args)
        except Refused as e:
            return ToolResult(f"{path} {e}; refused", True)
        except (OSError, UnicodeDecodeError, ValueError) as e:
            return ToolResult(f"{command} {path}: {_why(e)}", True)

    def check(self, real: Path) -> None:
        """Refused where an opened path really is out of the agent's reach."""
        if not real.is_relative_to(self.root):
            raise Refused(f"is outside the working directory {self.root}")
        if any(real.is_relative_to(h) for h in self.hidden):
            raise Refused("is in the harness's own folders (state, identity or home), which "
                          "the agent reaches only through its tools (note, verdict, plan)")

    def check_write(self, real: Path) -> None:
        """`check`, and Refused where the sandbox shows the path read-only."""
        self.check(real)
        if any(real.is_relative_to(r) for r in self.read_only):
            raise Refused("is read-only to the agent, as its shell sees it")

    def view(self, real: TreeFile, path: str, args: dict[str, Any]) -> ToolResult:
        """A file's lines numbered (or a `view_range` of them), or a folder two levels deep."""
        if real.is_dir():
            entries = sorted(real.listing(depth=2))
            listing = "\n".join(entries) or "(empty)"
            return ToolResult(truncate(f"{path} (2 levels, hidden excluded):\n{listing}",
                                       self.output_chars))
        lines = real.read_text().splitlines()
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

    def create(self, real: TreeFile, path: str, args: dict[str, Any]) -> ToolResult:
        """Write `file_text` to the file, creating or overwriting it."""
        text = args.get("file_text")
        if not isinstance(text, str):
            return ToolResult("create needs 'file_text'", True)
        if real.is_dir():
            return ToolResult(f"{path} is a directory", True)
        existed = real.exists()
        real.write_text(text)
        return ToolResult(f"{'overwrote' if existed else 'created'} {path}")

    def str_replace(self, real: TreeFile, path: str, args: dict[str, Any]) -> ToolResult:
        """Replace `old_str`, which must occur exactly once, with `new_str`."""
        old, new = args.get("old_str"), args.get("new_str") or ""
        if not isinstance(old, str) or not old:
            return ToolResult("str_replace needs a non-empty 'old_str'", True)
        content = real.read_text()
        count = content.count(old)
        if count != 1:
            where = "" if count == 0 else " (at lines " + ", ".join(
                str(content.count("\n", 0, m.start()) + 1)
                for m in re.finditer(re.escape(old), content)) + ")"
            return ToolResult(f"old_str matches {count} times in {path}{where}; it must match "
                              "exactly once: include more surrounding lines", True)
        real.write_text(content.replace(old, new))
        first = content[: content.index(old)].count("\n") + 1
        return ToolResult(f"edited {path}:\n{self._snippet(real, first, new.count(chr(10)) + 1)}")

    def insert(self, real: TreeFile, path: str, args: dict[str, Any]) -> ToolResult:
        """Insert `insert_text` after line `insert_line` (0: at the top)."""
        after, text = args.get("insert_line"), args.get("insert_text")
        if not isinstance(after, int) or not isinstance(text, str):
            return ToolResult("insert needs 'insert_line' (a number) and 'insert_text'", True)
        lines = real.read_text().splitlines(keepends=True)
        if not 0 <= after <= len(lines):
            return ToolResult(f"insert_line {after} is outside 0..{len(lines)} for {path}", True)
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        new = text if text.endswith("\n") else text + "\n"
        real.write_text("".join(lines[:after]) + new + "".join(lines[after:]))
        return ToolResult(f"inserted after line {after} of {path}:\n"
                          f"{self._snippet(real, after + 1, new.count(chr(10)))}")

    def _snippet(self, real: TreeFile, first: int, count: int, context: int = 3) -> str:
        lines = real.read_text().splitlines()
        start = max(1, first - context)
        return truncate(numbered(lines[start - 1:first + count - 1 + context], start),
                        self.output_chars)
