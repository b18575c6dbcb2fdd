"""Unified diffs of what a curator run changes, cheap even for a million archived lines.

Small files get a real `difflib` diff. A bulk move (raw.md's head to the
archive, lines appended to the archive, the candidate record or an identity
file) is one hunk whose header carries the true line counts while its body
shows the first DIFF_PREVIEW lines, then a `\\ ... N more lines not shown` line.
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


def drop_head_diff(path: Path, shown: list[str], total: int) -> str:
    """A diff removing the first `total` lines of `path`; `shown` are the first of them."""
    body = [f"--- {path}\n", f"+++ {path}\n", f"@@ -1,{total} +0,0 @@\n"]
    body += ["-" + _nl(line) for line in shown]
    if total > len(shown):
        body.append(f"\\ ... {total - len(shown)} more lines not shown\n")
    return "".join(body)


def append_diff(path: Path, shown: list[str], total: int) -> str:
    """A diff appending `total` lines to `path`; `shown` are the first of them."""
    before = count_lines(path)
    shown = shown[:DIFF_PREVIEW]
    body = [f"--- {path}\n", f"+++ {path}\n", f"@@ -{before},0 +{before + 1},{total} @@\n"]
    body += ["+" + _nl(line) for line in shown]
    if total > len(shown):
        body.append(f"\\ ... {total - len(shown)} more lines not shown\n")
    return "".join(body)


def _nl(line: str) -> str:
    """`line` as a diff shows it on a terminal: control characters escaped (a hand-written
    ESC in raw.md must not drive the terminal of `curator --dry-run`), one newline."""
    return escape_controls(line.removesuffix("\n")) + "\n"
