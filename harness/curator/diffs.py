"""Unified diffs of what a curator run changes, cheap even for a million archived lines.

Small files get a real `difflib` diff. A bulk move (raw.md's head to the archive, lines
appended to the archive, the candidate record or an identity file) is one hunk whose
header carries the true line counts while its body shows the first DIFF_PREVIEW lines,
then a `\\ ... N more lines not shown` line.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from harness.names import escape_controls
from harness.state.store import count_lines

DIFF_PREVIEW = 200


def rewrite_diff(path: Path, old: str, new: str) -> str:
    """A unified diff of a small file rewritten."""
    return "".join(map(_nl, difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                                 str(path), str(path))))


def bulk_diff(path: Path, shown: list[str], total: int, *, drop: bool = False) -> str:
    """A diff appending `total` lines to `path` (or, with `drop`, removing its first
    `total`); `shown` are the first of them."""
    if drop:
        hunk, sign = f"-1,{total} +0,0", "-"
    else:
        before = count_lines(path)
        hunk, sign = f"-{before},0 +{before + 1},{total}", "+"
    shown = shown[:DIFF_PREVIEW]
    body = [f"--- {path}\n", f"+++ {path}\n", f"@@ {hunk} @@\n"]
    body += [sign + _nl(line) for line in shown]
    if total > len(shown):
        body.append(f"\\ ... {total - len(shown)} more lines not shown\n")
    return "".join(body)


def lines_between(path: Path, start: int, stop: int) -> tuple[list[str], int]:
    """The first DIFF_PREVIEW lines of `path`'s bytes from `start` to `stop` (both at line
    starts), and how many lines there are in all."""
    shown: list[str] = []
    total = 0
    with open(path, "rb") as f:
        f.seek(start)
        for line in f:
            if start >= stop:
                break
            start, total = start + len(line), total + 1
            if total <= DIFF_PREVIEW:
                shown.append(line.decode("utf-8", "replace"))
    return shown, total


def _nl(line: str) -> str:
    """`line` as a diff shows it on a terminal: control characters escaped (a hand-written
    ESC in raw.md must not drive the terminal of `curator --dry-run`), one newline."""
    return escape_controls(line.removesuffix("\n")) + "\n"
