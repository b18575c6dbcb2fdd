"""The judge's answers on disk: `<identity>/.judgments.db`, SQLite (see `judge`).

One row per answer: the bucket (role and kind; kind `-` for a question about what a
role's identity file already says), the two `text.normalize` keys, whether they say one
lesson, and when and in which mission it was answered. The pass that got the answers
writes them as a journal step (INSERT OR IGNORE: a redone step adds nothing twice), and
nothing changes them after. Shared by the missions of one identity folder, like the
candidate record. A pass asks only about the notes it is unsure of, by key, so its cost
does not grow with the answers of all earlier passes; without the file it asks nothing.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from harness.curator.judge import about_identity

DB = ".judgments.db"
SCHEMA = """CREATE TABLE IF NOT EXISTS answer(
    role TEXT, kind TEXT, key TEXT, other TEXT, same INTEGER, ts TEXT, mission TEXT,
    PRIMARY KEY(role, kind, key, other)) WITHOUT ROWID"""
Answers = dict[tuple[Any, str, str], bool]


class Recorded:
    """The recorded answers, read by the note they are about."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def about(self, bucket: Any, key: str) -> dict[str, bool]:
        """The answers about the note `key` in `bucket`: other key -> same lesson."""
        role, kind = _columns(bucket)
        return {other: bool(same) for other, same in self.conn.execute(
            "SELECT other, same FROM answer WHERE role=? AND kind=? AND key=?",
            (role, kind, key))}

    def close(self) -> None:
        self.conn.close()


def open_recorded(identity: Path) -> Recorded | None:
    """The recorded answers, or None when none were ever recorded."""
    path = identity / DB
    if not path.exists():
        return None
    return Recorded(sqlite3.connect(path, isolation_level=None, timeout=30))


def rows(answers: Answers, ts: str, mission: str) -> list[list]:
    """`answers` as the journal holds them, one row each (see `append`)."""
    return [[*_columns(bucket), key, other, int(same), ts, mission]
            for (bucket, key, other), same in answers.items()]


def append(identity: Path, new_rows: list[list]) -> None:
    """Record `rows`' answers, in one transaction; an answer recorded before stands."""
    identity.mkdir(parents=True, exist_ok=True)  # a shared folder nothing has written yet
    conn = sqlite3.connect(identity / DB, isolation_level=None, timeout=30)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(SCHEMA)
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("INSERT OR IGNORE INTO answer VALUES (?, ?, ?, ?, ?, ?, ?)", new_rows)
        conn.execute("COMMIT")
    finally:
        conn.close()


def read_all(identity: Path) -> Answers:
    """Every recorded answer, (bucket, key, other) -> same."""
    recorded = open_recorded(identity)
    if recorded is None:
        return {}
    try:
        return {(role if kind == "-" else (role, kind), key, other): bool(same)
                for role, kind, key, other, same in recorded.conn.execute(
                    "SELECT role, kind, key, other, same FROM answer")}
    finally:
        recorded.close()


def _columns(bucket: Any) -> tuple[str, str]:
    return (bucket, "-") if about_identity(bucket) else bucket
