"""The five memory layers on disk: L1 raw.md entries, L2 summary.md, L3 MEMORY.md,
L4 identity/<role>.md, and long-form notes under memory/.

Imported by `note`, which must start fast: keep this module's imports light.
"""

from __future__ import annotations

import re
import sys
import time
from collections import namedtuple
from pathlib import Path

from harness import names
from harness.state.store import append_record, lock_path, read_tail, write_record

KINDS = ("TRICK", "GOTCHA", "DECISION", "FAIL", "FORGOT", "-")
SUMMARY_SECTIONS = ("Lessons", "Decisions (current)", "Avoid")
MEMORY_SECTIONS = ("Decisions", "Context", "History", "Lessons")

NAME = names.ROLE_NAME  # fullmatch: what a raw.md line may hold as its role
SLUG = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
# `[ts] role FEATURE KIND: text`, the text greedy: its optional ` (run RUN_ID)` tail is split
# off after (`parse_fields`), where a lazy text would try the run's pattern at every character.
# Only usable fields parse: a time of day that exists, a role name, a feature id as `names`
# checks it, and text with no control character (a tab aside); a line with anything else is
# kept and archived untouched, like any line that does not parse. The day is checked after.
TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]Z")
ENTRY = re.compile(r"\[(" + TIME.pattern + r")\] "
                   r"([a-z][a-z0-9_-]{0,31}) (F-[0-9]{3,9}|-) ("
                   + "|".join(map(re.escape, KINDS)) + r"): ([^\x00-\x08\x0a-\x1f\x7f-\x9f]*)")
RUN_ID = re.compile(r"[A-Za-z0-9_.-]+")
_DAYS: dict[str, bool] = {}  # day -> whether the calendar has it (few distinct days a log)
_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


class Entry(namedtuple("Entry", "ts role feature kind text run", defaults=(None,))):
    """One L1 line: `[ts] role FEATURE KIND: text (run RUN_ID)`; the run part is optional."""

    __slots__ = ()  # a namedtuple, not a dataclass: `note` must not pay for importing those

    def line(self) -> str:
        """The entry as one raw.md line, without the newline."""
        tail = f" (run {self.run})" if self.run else ""
        return f"[{self.ts}] {self.role} {self.feature} {self.kind}: {self.text}{tail}"


def utc_now() -> str:
    """The current time as ISO-8601 UTC to the second, e.g. 2026-04-24T10:05:12Z."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def fold(text: str) -> str:
    """Text on one line: newlines and runs of whitespace become single spaces."""
    return " ".join(text.split())


def parse_entry(line: str) -> Entry | None:
    """The entry on `line`, or None when the line does not parse (callers keep it as is)."""
    fields = parse_fields(line.rstrip("\n"))
    return None if fields is None else Entry._make(fields)


def parse_fields(line: str) -> tuple[str, str, str, str, str, str | None] | None:
    """An entry's fields (ts, role, feature, kind, text, run) as a plain tuple, or None;
    `line` may end with its newline. Role, feature and kind come interned, since millions
    of entries share a few: the curator's pass over raw.md calls this once per line."""
    end = len(line) - 1 if line[-1:] == "\n" else len(line)
    if line[end - 1:end] == "\r":
        end -= 1  # a line a person saved with a CRLF ending
    m = ENTRY.fullmatch(line, 0, end)
    if m is None:
        return None
    ts, role, feature, kind, text = m.groups()
    if not real_day(ts):
        return None
    run = None
    if text[-1:] == ")":
        i = text.rfind(" (run ")
        # only the last " (run " can be the run: a run id has no space
        if i >= 0 and RUN_ID.fullmatch(text, i + 6, len(text) - 1):
            text, run = text[:i], text[i + 6:-1]
    intern = sys.intern
    return ts, intern(role), intern(feature), intern(kind), text, run


def make_entry(role: str, feature: str | None, kind: str, text: str,
               run: str | None = None, ts: str | None = None) -> Entry:
    """A checked, folded entry, control characters escaped (`names.escape_controls`);
    ValueError names what is wrong."""
    feature = feature or "-"
    if kind not in KINDS:
        raise ValueError(f"unknown note kind {names.shown(kind)}; "
                         f"expected one of {', '.join(KINDS)}")
    names.check_role(role)
    names.check_feature_id(feature, dash=True)
    if run is not None:
        names.check_run_id(run)
    text = unrun(names.escape_controls(fold(text)))
    if not text:
        raise ValueError("empty note text")
    return Entry(ts or utc_now(), role, feature, kind, text, run)


def unrun(text: str) -> str:
    """`text` with any ` (run ` in it written ` (run: `, so that no text can end in what the
    parser takes for the run that wrote it: only the harness appends that."""
    return text.replace(" (run ", " (run: ") if " (run " in text else text


def real_day(ts: str) -> bool:
    """Whether the day `ts` starts with (YYYY-MM-DD, digits) is in the calendar: no month
    13, no February 30, no year 0."""
    day = ts[:10]
    known = _DAYS.get(day)
    if known is None:
        if len(_DAYS) > 4096:
            _DAYS.clear()
        known = _DAYS[day] = _calendar_has(day)
    return known


def _calendar_has(day: str) -> bool:
    year, month, date = int(day[:4]), int(day[5:7]), int(day[8:10])
    if year < 1 or not 1 <= month <= 12 or date < 1:
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return date <= (28 if month == 2 and not leap else _MONTH_DAYS[month - 1])


def raw_path(state: Path) -> Path:
    return state / "raw.md"


def raw_lock(state: Path) -> Path:
    """The lock every raw.md writer holds: appenders and the curator's rewrite alike."""
    return lock_path(state, "raw")


def append_entry(state: Path, entry: Entry) -> None:
    """Append one entry to raw.md as a single locked write."""
    append_record(raw_path(state), entry.line() + "\n", raw_lock(state))


def tail_entries(state: Path, n: int) -> list[str]:
    """The last `n` raw.md lines as they are, parseable or not."""
    return read_tail(raw_path(state), n)


def write_long_note(state: Path, role: str, slug: str, body: str, day: str | None = None) -> Path:
    """Write `memory/YYYY-MM-DD-<role>-<slug>.md`; refuses to overwrite an existing note."""
    if not SLUG.fullmatch(slug):
        raise ValueError(f"bad slug {names.shown(slug)}; use lower-case letters, digits and "
                         "dashes, at most 64")
    names.check_role(role)
    # lines and tabs stay: a long note is markdown; other control characters are escaped
    body = "\n".join(names.escape_controls(line.replace("\t", "    ").rstrip("\r"))
                     for line in body.strip().split("\n"))
    if not body:
        raise ValueError("empty note body")
    day = day or utc_now()[:10]
    path = state / "memory" / f"{day}-{role}-{slug}.md"
    if path.exists():
        raise ValueError(f"{path} already exists; choose another slug")
    write_record(path, body + "\n")
    return path


def long_note_titles(state: Path, cap: int) -> list[dict[str, str]]:
    """Newest first, at most `cap`: each note's file name and title (its first line)."""
    folder = state / "memory"
    if not folder.is_dir():
        return []
    names = sorted((p.name for p in folder.glob("*.md")), reverse=True)[:cap]
    notes = []
    for name in names:
        with open(folder / name, encoding="utf-8", errors="replace") as f:
            first = f.readline(300).strip().lstrip("#").strip()
        notes.append({"file": f"memory/{name}", "title": first or name})
    return notes


def parse_sections(text: str) -> dict[str, list[str]]:
    """`## Heading` sections of a markdown file; lines before the first heading go under ''."""
    sections: dict[str, list[str]] = {"": []}
    current = ""
    for line in text.splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            sections.setdefault(current, [])
        else:
            sections[current].append(line)
    return sections


def render_sections(title: str, sections: dict[str, list[str]], order: tuple[str, ...]) -> str:
    """A markdown file with `# title` and the `order`ed `## ` sections, no trailing blanks."""
    out = [f"# {title}", ""]
    for name in order:
        out.append(f"## {name}")
        out.extend(line for line in sections.get(name, []) if line.strip())
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def estimate_tokens(text: str) -> int:
    """Token estimate: one per 4 characters, rounded up (close to Claude's tokenizer on English)."""
    return (len(text) + 3) // 4
