"""Identity files bounded to what a prompt shows: `identity/<role>.md` holds at most
`bound` characters, and every prompt of the role shows all of it.

When promotions would pass the bound, the promoted lines rank by their evidence (the
missions, then the distinct workers (features) and the notes behind them, then how
recently the lesson was seen, from the provenance each line carries); the weakest move,
verbatim, to `identity/archive/<role>.md`, and come back if the lesson recurs (a due
lesson that identity does not hold is promoted again, its evidence merged). Lines a
person wrote (no `[promoted ...]` provenance) never move. Nothing is lost: a line leaves
the role file only once it is in the archive.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from harness.state.store import atomic_write

ARCHIVE = "archive"
_PROMOTED = re.compile(
    r"^- [A-Z]+: .* \[promoted \d{4}-\d\d-\d\d; seen (?P<count>\d+)x (?:\d{4}-\d\d-\d\d\.\.)?"
    r"(?P<last>\d{4}-\d\d-\d\d); missions: (?P<missions>[^;\]]*); "
    r"features: (?P<features>[^;\]]*)(?:; runs: [^\]]*)?\]$")


def strength(line: str) -> tuple[int, int, int, str] | None:
    """How much evidence a promoted line carries (missions, features, notes, last seen), or
    None for a line a person wrote. A list cut short (`, ...`) counts one more."""
    m = _PROMOTED.match(line.rstrip("\n"))
    if m is None:
        return None

    def listed(field: str) -> int:
        values = m[field].split(", ")
        return len([v for v in values if v and v != "..."]) + ("..." in values)

    return listed("missions"), listed("features"), int(m["count"]), m["last"]


def split_to_bound(text: str, bound: int) -> tuple[str, list[str]]:
    """The file's text within `bound` characters, and the promoted lines that must leave it
    (the weakest first to go; ties: the older line goes). Hand-written lines all stay."""
    if len(text) <= bound:
        return text, []
    lines = text.splitlines(keepends=True)
    ranked = sorted(((s, -i) for i, line in enumerate(lines)
                     if (s := strength(line)) is not None), reverse=True)
    room = bound - sum(len(line) for line in lines if strength(line) is None)
    keep: set[int] = set()
    for _, neg_i in ranked:
        if len(lines[-neg_i]) <= room:
            room -= len(lines[-neg_i])
            keep.add(-neg_i)
    kept = "".join(line for i, line in enumerate(lines) if strength(line) is None or i in keep)
    moved = [line.rstrip("\n") for i, line in enumerate(lines)
             if strength(line) is not None and i not in keep]
    return kept, moved


def archive_path(identity: Path, role: str) -> Path:
    return identity / ARCHIVE / f"{role}.md"


def bound_role_file(identity: Path, role: str, bound: int) -> int:
    """Keep `identity/<role>.md` within `bound`, the weakest lines moved to the archive;
    how many moved. Safe to redo: a line already in the archive is not written twice."""
    path = identity / f"{role}.md"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return 0
    kept, moved = split_to_bound(text, bound)
    if not moved:
        return 0
    archive = archive_path(identity, role)
    archive.parent.mkdir(parents=True, exist_ok=True)
    try:
        there = set(archive.read_text(encoding="utf-8").splitlines())
    except FileNotFoundError:
        there = set()
    new = [line for line in moved if line not in there]
    if new:
        with open(archive, "a", encoding="utf-8") as out:
            if not there:
                out.write(f"# {role}: lessons moved out of identity/{role}.md for room\n\n")
            out.write("".join(line + "\n" for line in new))
            out.flush()
            os.fsync(out.fileno())
    atomic_write(path, kept)
    return len(moved)
