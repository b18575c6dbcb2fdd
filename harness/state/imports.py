"""`run.sh import-notes FILE`: what other agents already wrote, as raw.md notes.

Two shapes are read. Ralph's `progress.txt`: the bullets of its `## Codebase Patterns`
section and of each iteration's "Learnings for future iterations" list. A memory file
(Claude Code's or Codex's CLAUDE.md / AGENTS.md, a `~/.claude` memory file): its bullets,
or the body under a memory file's front matter when it has none; fenced code and the
harness's own managed block (harness/run/export.py) are skipped.

Each bullet is one note of the person (role `user`, no run: it names no run of the
harness), its text ending in `[from NAME line N]`. Ralph's learnings are TRICKs and a
memory file's bullets plain notes (`-`); either is a GOTCHA where it says so (under a
"Gotchas" heading or bullet, or beginning "Gotcha", "Avoid", "Don't", "Never").
Importing is idempotent: `<state>/imported-notes` keeps a hash of each note imported (kind
and text, not where it was), so the same file imported twice, or grown, adds only what is
new, whatever the curator has archived since.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from harness.errors import UsageError
from harness.state.locks import hold_lock, lock_path
from harness.state.memory import make_entry, raw_lock, raw_path
from harness.state.reading import decode, read_bytes
from harness.state.store import append_record, sha256

LEARNINGS = "learnings for future iterations"
PATTERNS = re.compile(r"^#{1,6}\s*codebase patterns\b", re.I)
HEADING = re.compile(r"^#{1,6}\s+(.*)")
BULLET = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?(.*)")
GOTCHA = re.compile(r"^(?:\W*)(?:gotchas?\b|avoid\b|don'?t\b|do not\b|never\b|watch out\b)",
                    re.I)
MARKS = ("<!-- autonomous-harness:identity start -->", "<!-- autonomous-harness:identity end -->")
PLACEHOLDER = re.compile(r"\(add [^()]*\)", re.I)  # Ralph's "(add reusable patterns here)"
NOTE_CHARS = 2000  # a bullet longer than this is cut: a note is a line, not a document


@dataclass(frozen=True)
class Found:
    """One bullet found: its line number, kind and text."""

    line: int
    kind: str
    text: str


def read_text(path: Path) -> str:
    """The file's text; UsageError naming the file (and line) when it is no UTF-8 text."""
    if path.is_dir():
        raise UsageError(f"{path}: is a directory, not a notes file")
    if path.exists() and not path.is_file():  # a fifo waits, /dev/zero never ends
        raise UsageError(f"{path}: not a regular file (a fifo or a device), not notes")
    try:
        data = read_bytes(path)
    except FileNotFoundError:
        raise UsageError(f"{path}: file not found") from None
    if b"\0" in data:
        line = data.count(b"\n", 0, data.index(b"\0")) + 1
        raise UsageError(f"{path} line {line}: a binary file (a NUL byte), not notes")
    return decode(data, path).removeprefix("\ufeff")


def _clean(text: str) -> str:
    text = " ".join(text.split()).strip()
    return re.sub(r"^\*\*(.+?)\*\*:?\s*", r"\1: ", text).rstrip(": ").strip()


def _kind(text: str, hint: str, default: str) -> str:
    return "GOTCHA" if GOTCHA.match(text) or GOTCHA.match(hint) else default


def group_bullets(items: list[tuple[int, int, str]], hint: str, default: str,
                  headings: set[int] | None = None) -> list[Found]:
    """Notes from bullets (line, indent, text): a bullet with deeper bullets under it is
    their heading ("Gotchas encountered"), which says their kind, not a note; where the
    lines that read as headings are given (a memory file's), only those are."""
    found, heads = [], []  # heads: (indent, text) of the bullets enclosing the next one
    for i, (line, indent, text) in enumerate(items):
        while heads and heads[-1][0] >= indent:
            heads.pop()
        if i + 1 < len(items) and items[i + 1][1] > indent:
            heads.append((indent, text))
            if headings is None or line in headings:
                continue
        if text and not PLACEHOLDER.fullmatch(text):
            kind = _kind(text, " ".join(h for _, h in heads) or hint, default)
            found.append(Found(line, kind, text[:NOTE_CHARS]))
    return found


def ralph_notes(lines: list[str]) -> list[Found]:
    """The bullets of Codebase Patterns and of each "Learnings for future iterations"."""
    found: list[Found] = []
    items: list[tuple[int, int, str]] = []
    where, base = None, -1  # "patterns", "learnings" or None; the learnings line's indent
    level = 0  # of the Codebase Patterns heading: a deeper one (### Database) is inside it
    for n, line in enumerate(lines, 1):
        heading, bullet = HEADING.match(line), BULLET.match(line)
        learnings = LEARNINGS in line.lower()
        inside = where == "patterns" and _level(line) > level
        if (heading and not inside) or line.strip() == "---" or learnings or (
                where == "learnings" and bullet and len(bullet[1]) <= base):
            found += group_bullets(items, "", "TRICK")
            items, where = [], None
        if heading and PATTERNS.match(line):
            where, level = "patterns", _level(line)
        elif learnings:
            where, base = "learnings", len(line) - len(line.lstrip())
            if inline := _clean(line[line.lower().index(LEARNINGS) + len(LEARNINGS):]
                                .strip().lstrip("*:")):
                items.append((n, base + 1, inline))  # "Learnings ...: use X" on one line
        elif where and bullet:
            items.append((n, len(bullet[1]), _clean(bullet[2])))
        elif where and items and line.strip() and not heading:
            last = items[-1]
            items[-1] = (last[0], last[1], _clean(f"{last[2]} {line}"))
    return found + group_bullets(items, "", "TRICK")


def _level(line: str) -> int:
    """A heading's level (the number of its #s); 0 for a line that is none."""
    return len(line) - len(line.lstrip("#")) if HEADING.match(line) else 0


def memory_notes(lines: list[str]) -> list[Found]:
    """A memory file's bullets (or, with none, the body under its front matter)."""
    found: list[Found] = []
    items: list[tuple[int, int, str]] = []
    start = _front_matter_end(lines)
    fenced = managed = False
    hint, heads = "", set()
    body: list[tuple[int, str]] = []
    for n, line in enumerate(lines[start:], start + 1):
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
        if stripped in MARKS:
            managed = stripped == MARKS[0]
        if fenced or managed or stripped.startswith(("```", "~~~")) or stripped in MARKS:
            continue
        if heading := HEADING.match(line):
            found += group_bullets(items, hint, "-", heads)
            items, hint = [], heading[1]
        elif bullet := BULLET.match(line):
            items.append(_item(n, bullet, heads))
        elif stripped and items and line[:1].isspace():
            items[-1] = (items[-1][0], items[-1][1], _clean(f"{items[-1][2]} {line}"))
        elif stripped:
            body.append((n, stripped))
    found += group_bullets(items, hint, "-", heads)
    if not found and start and body:
        text = _clean(" ".join(t for _, t in body))
        found.append(Found(body[0][0], _kind(text, "", "-"), text[:NOTE_CHARS]))
    return found


def _item(n: int, bullet: re.Match, heads: set[int]) -> tuple[int, int, str]:
    """A memory file's bullet as (line, indent, text); its line goes to `heads` when it
    reads as a heading ("Testing:" over its bullets is theirs, not a note)."""
    text = _clean(bullet[2])
    if bullet[2].rstrip(" *").endswith(":") or len(text.split()) <= 3:
        heads.add(n)
    return n, len(bullet[1]), text


def _front_matter_end(lines: list[str]) -> int:
    """How many lines a memory file's YAML front matter (`---` ... `---`) takes; 0: none."""
    if not lines or lines[0].strip() != "---":
        return 0
    for n, line in enumerate(lines[1:], 2):
        if line.strip() == "---":
            return n
    return 0


def find_notes(path: Path) -> list[Found]:
    """The notes in `path`; UsageError naming the file and line for what is not notes."""
    lines = read_text(path).splitlines()
    ralph = any(PATTERNS.match(ln) or LEARNINGS in ln.lower() for ln in lines)
    found = ralph_notes(lines) if ralph else memory_notes(lines)
    if not ralph and not found:
        raise UsageError(
            f"{path} line 1: no recognisable section: neither Ralph's progress.txt "
            "(\"## Codebase Patterns\", \"Learnings for future iterations\") nor a memory "
            "file's bullet list")
    return found


def import_notes(state: Path, path: Path) -> tuple[int, int]:
    """Append `path`'s notes to raw.md as the person's; (new, already imported)."""
    found = find_notes(path)
    entries = [(f, make_entry("user", None, f.kind, f"{f.text} [from {path.name} line "
                                                   f"{f.line}]")) for f in found]
    seen_file = state / "imported-notes"
    with hold_lock(lock_path(state, "imported-notes"), what="import-notes"):
        try:
            seen = set(seen_file.read_text(encoding="utf-8").split())
        except FileNotFoundError:
            seen = set()
        new, lines, hashes = 0, [], []
        for f, entry in entries:
            digest = sha256(f"{entry.kind}\t{' '.join(f.text.split())}")
            if digest in seen:
                continue
            seen.add(digest)
            lines.append(entry.line() + "\n")
            hashes.append(digest + "\n")
            new += 1
        if lines:  # the notes first: a crash between the two may repeat them, never lose them
            append_record(raw_path(state), "".join(lines), raw_lock(state))
            append_record(seen_file, "".join(hashes), None)
    return new, len(entries) - new
