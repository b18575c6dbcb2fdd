"""The judge's answers: the `answer` table of the curator database (`curatordb`), a row each:
the bucket (kind `-` for a role's identity file), the two `text.normalize` keys, same lesson or
not, when, in which mission, and the two texts when known (a new normaliser keys it again from
them). A pass writes them as a journal step (INSERT OR IGNORE: a redo adds nothing twice) and
nothing changes them after. Passes read them by note: the cost does not grow with their number."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from harness.curator import curatordb
from harness.curator.identity import archive_bucket, identity_lessons
from harness.curator.judge import about_identity
from harness.curator.lessondb import TextOf
from harness.curator.text import normalize

Answers = dict[tuple[Any, str, str], bool]


class Recorded:
    """The recorded answers, read by the note they are about."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn, self.close = conn, conn.close

    def about(self, bucket: Any, key: str) -> dict[str, bool]:
        """The answers about the note `key` in `bucket`: other key -> same lesson."""
        return {other: bool(same) for other, same in self.conn.execute(
            "SELECT other, same FROM answer WHERE role=? AND kind=? AND key=?",
            (*_columns(bucket), key))}


def open_recorded(identity: Path, *, write: bool = False) -> Recorded | None:
    """The recorded answers, or None for none. A writing pass opens them read-write: a read-only
    connection closing last leaves SQLite's WAL file behind for every later open to read."""
    conn = curatordb.connect(identity, write=write)
    if conn is not None and conn.execute("SELECT 1 FROM answer LIMIT 1").fetchone() is None:
        conn.close()
        conn = None
    return None if conn is None else Recorded(conn)


def rows(answers: Answers, ts: str, mission: str, text_of: TextOf | None = None) -> list[list]:
    """`answers` as the journal holds them, with the texts `text_of` knows."""
    text = text_of or (lambda bucket, key: None)
    return [[*_columns(bucket), key, other, int(same), ts, mission, text(bucket, key),
             text(bucket, other)] for (bucket, key, other), same in answers.items()]


def identity_texts(bucket: str, due: list[Any], identity: dict[str, str]) -> dict[str, str]:
    """key -> text of the due lessons and identity lines a question in `bucket` may be about."""
    texts = [ev.text for ev in due if bucket in (ev.role, archive_bucket(ev.role, ev.kind))]
    texts += identity_lessons(identity.get(bucket, ""))
    return {normalize(text).key: text for text in reversed(texts)}


def append(identity: Path, new_rows: list[list], said: list[str] | None = None) -> None:
    """Record `new_rows` in one transaction (an answer recorded before stands), past damage."""
    new_rows = [[*row, None, None][:9] for row in new_rows]  # an older journal's: no texts
    for attempt in range(2):
        try:
            with closing(curatordb.connect(identity, said=said)) as conn:  # type: ignore[arg-type]
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany("INSERT OR IGNORE INTO answer VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                 new_rows)
                conn.execute("COMMIT")
                return
        except sqlite3.OperationalError as e:  # the journal step is redone by the next run
            raise e if "locked" in str(e) else curatordb.unwritable(identity, e) from None
        except sqlite3.DatabaseError:
            if attempt:
                raise
        curatordb.set_aside(identity, said)


def read_all(identity: Path) -> Answers:
    """Every recorded answer, (bucket, key, other) -> same."""
    recorded = open_recorded(identity)
    if recorded is None:
        return {}
    with closing(recorded):
        return {(role if kind == "-" else (role, kind), key, other): bool(same)
                for role, kind, key, other, same in recorded.conn.execute(
                    "SELECT role, kind, key, other, same FROM answer")}


def _columns(bucket: Any) -> tuple[str, str]:
    return (bucket, "-") if about_identity(bucket) else bucket
