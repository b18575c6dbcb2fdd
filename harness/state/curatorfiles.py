"""The curator's own state files, `curator/cursor.json` and `curator/journal.json`, checked
before the curator trusts them (issue 31): a hand-edited or damaged one is exit 2 naming the
file and the key, never a traceback, and no name in it leads a write out of its folder."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.errors import UsageError

Check = Callable[[Any], bool]
MONTH = re.compile(r"\d{4}-\d{2}|unparsed")  # an archive file's name: archive/<month>.md
ARCHIVE_FILE = re.compile(r"(\d{4}-\d{2}|unparsed|memory-history)\.md")
MEMORY_FILES = {"summary.md", "MEMORY.md"}  # all a journal may rewrite


def count(value: Any) -> bool:
    """A byte offset, size or id: a non-negative JSON integer a file can hold."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 62


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _month(value: Any) -> bool:
    return isinstance(value, str) and MONTH.fullmatch(value) is not None


def _dict_of(keys: Check, values: Check) -> Check:
    return lambda v: isinstance(v, dict) and all(keys(k) and values(x) for k, x in v.items())


def _list_of(items: Check) -> Check:
    return lambda v: isinstance(v, list) and all(items(x) for x in v)


def _month_start(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and count(value[0]) and _month(value[1])


CURSOR: dict[str, Check] = {"processed": count, "next_ids": _dict_of(_text, count),
                            "last_month": _month}
RAW: dict[str, Check] = {"end": count, "cut": count, "inode": count, "head_sha": _text,
                         "months": _list_of(_month_start)}
JOURNAL: dict[str, Check] = {
    "files": _dict_of(MEMORY_FILES.__contains__, _text),
    "candidates": count, "promotions": count,
    "identity_sizes": _dict_of(_text, count),
    "memory_archive": _list_of(_text),
    "archive_sizes": _dict_of(lambda k: isinstance(k, str) and bool(ARCHIVE_FILE.fullmatch(k)),
                              lambda v: v is None or count(v)),
    "raw": lambda v: isinstance(v, dict) and _fits(v, RAW, required=True) is None,
    "cursor": lambda v: isinstance(v, dict) and _fits(v, CURSOR, required=False) is None,
    "judgments": lambda v: v is None or isinstance(v, list),
}
JOURNAL_OPTIONAL = {"judgments"}


def _fits(data: dict, shape: dict[str, Check], required: bool,
          optional: frozenset[str] | set[str] = frozenset()) -> str | None:
    """The first key of `shape` that `data` lacks (when `required`) or holds wrongly."""
    for key, check in shape.items():
        if key not in data:
            if required and key not in optional:
                return key
        elif not check(data[key]):
            return key
    return None


def check(path: Path, data: dict) -> dict:
    """`data`, the cursor or journal read from `path`; UsageError naming the file and the key
    when it is not of the shape the curator writes."""
    journal = path.name == "journal.json"
    key = (_fits(data, JOURNAL, True, JOURNAL_OPTIONAL) if journal
           else _fits(data, CURSOR, False))
    if key is None:
        return data
    fix = ("move it away and the next pass plans again from curator/cursor.json" if journal
           else "restore it, or move it away and the next pass reads raw.md from its start")
    raise UsageError(f"{path}: key '{key}' is missing or not what the curator writes; {fix}")
