"""The curator's one database, `<identity>/.curator.db` (SQLite, WAL), shared by an identity's
missions: the record's lessons (`lessondb`) and the judge's answers, a row each: the bucket (kind
`-` for a role's identity file), the two `text.normalize` keys, same lesson or not, when, in which
mission, and the two texts when known. A pass writes answers as a journal step, nothing changes
them after, and passes read them by note."""

from __future__ import annotations

import contextlib
import errno
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.curator.text import NORMALISER_VERSION, normalize

NAME = ".curator.db"
DAMAGED = ".curator.db.damaged"
CACHES = ("lesson", "variant", "word", "lesson_meta")  # made again from the record
Said = list[str] | None  # where a migration or a damaged database says what it could not do
TextOf = Callable[[Any, str], str | None]  # (bucket, key) -> the text normalised to `key`


def _tables(conn: sqlite3.Connection, identity: Path, said: Said) -> list[Path]:
    conn.execute("""CREATE TABLE answer(role TEXT, kind TEXT, key TEXT, other TEXT,
        same INTEGER, ts TEXT, mission TEXT, text TEXT, other_text TEXT,
        PRIMARY KEY(role, kind, key, other)) WITHOUT ROWID""")
    conn.execute("CREATE TABLE lesson_meta(rule TEXT, k TEXT, v TEXT, PRIMARY KEY(rule, k))")
    conn.execute("CREATE TABLE lesson(rule TEXT, id INTEGER, row BLOB, PRIMARY KEY(rule, id))")
    conn.execute("""CREATE TABLE variant(rule TEXT, vid INTEGER, role TEXT, kind TEXT,
        key TEXT, packed TEXT, signature TEXT, lesson INTEGER, text TEXT,
        PRIMARY KEY(rule, vid))""")
    conn.execute("CREATE INDEX variant_key ON variant(rule, role, kind, key)")
    conn.execute("CREATE INDEX variant_lesson ON variant(rule, lesson)")
    conn.execute("""CREATE TABLE word(rule TEXT, role TEXT, kind TEXT, word TEXT, df INTEGER,
        postings BLOB, PRIMARY KEY(rule, role, kind, word)) WITHOUT ROWID""")
    return []


def _import_answers(conn: sqlite3.Connection, identity: Path, said: Said) -> list[Path]:
    """The answers of `.judgments.db` (harness 2026-11), without texts; an unreadable file stays."""
    old = identity / ".judgments.db"
    if not old.is_file():
        return []
    try:
        with contextlib.closing(sqlite3.connect(f"{old.resolve().as_uri()}?mode=ro",
                                                uri=True)) as source:
            rows = source.execute("SELECT role, kind, key, other, same, ts, mission FROM "
                                  "answer").fetchall()
    except sqlite3.Error as e:
        if said is not None:
            said.append(f"{old} could not be read ({e}): its answers were not imported; "
                        "the file is left as it was")
        return []
    conn.executemany("INSERT OR IGNORE INTO answer VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL)", rows)
    return _with_wal(old)


def _drop_old_caches(conn: sqlite3.Connection, identity: Path, said: Said) -> list[Path]:
    """Earlier versions' lesson database and archive index: caches of files that stay."""
    return [path for pattern in (".candidates.v*.db", ".archive.db", ".candidates.digest")
            for found in identity.glob(pattern) for path in _with_wal(found)]


def _drop_archive_index(conn: sqlite3.Connection, identity: Path, said: Said) -> list[Path]:
    """The index of identity/archive/ (harness 2026-11): the archive is read whole now."""
    for table in ("archive_lines", "archive_words", "archive_read"):
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    return []


# each returns the files to delete once it is committed
MIGRATIONS: list[tuple[str, Callable[[sqlite3.Connection, Path, Said], list[Path]]]] = [
    ("1-tables", _tables),
    ("2-import-judgments-db", _import_answers),
    ("3-drop-old-caches", _drop_old_caches),
    ("4-drop-archive-index", _drop_archive_index),
]
SCHEMA_VERSION = len(MIGRATIONS)


def _with_wal(path: Path) -> list[Path]:
    return [path, Path(f"{path}-wal"), Path(f"{path}-shm")]


def connect(identity: Path, *, write: bool = True, said: Said = None) -> sqlite3.Connection | None:
    """The database, migrated, in autocommit; without `write` (a dry run) None unless current.
    Locked past the timeout: sqlite3.OperationalError; not writable (a full disk): OSError."""
    path = identity / NAME
    if not write:
        if not path.is_file():
            return None
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True,
                               isolation_level=None, timeout=30)
        with contextlib.suppress(sqlite3.DatabaseError):
            if _current(conn):
                return conn
        conn.close()
        return None
    identity.mkdir(parents=True, exist_ok=True)
    try:
        return _migrated(path, identity, said)
    except sqlite3.DatabaseError as e:
        if isinstance(e, sqlite3.OperationalError) and not path.is_dir():  # a lock, a full disk
            raise e if "locked" in str(e) else unwritable(identity, e) from None
    set_aside(identity, said)
    return _migrated(path, identity, said)


def unwritable(identity: Path, error: sqlite3.Error) -> OSError:
    """An SQLite error that is no lock and no damage (a full disk) as an OSError naming the file."""
    return OSError(errno.EIO, f"cannot write ({error})", str(identity / NAME))


def _migrated(path: Path, identity: Path, said: Said) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, timeout=30)
    try:
        if not _current(conn):
            _migrate(conn, identity, said)
        return conn
    except BaseException:
        conn.close()
        raise


def _current(conn: sqlite3.Connection) -> bool:
    (version,), = conn.execute("PRAGMA user_version")
    return version == SCHEMA_VERSION and conn.execute(
        "SELECT v FROM setting WHERE k='normaliser'").fetchone() == (str(NORMALISER_VERSION),)


def _migrate(conn: sqlite3.Connection, identity: Path, said: Said) -> None:
    """Migrate and re-key in one transaction: two curators starting at once migrate once."""
    conn.execute("PRAGMA journal_mode=WAL")
    gone: list[Path] = []
    with conn:  # commits, or rolls back what raised
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("CREATE TABLE IF NOT EXISTS migration(name TEXT PRIMARY KEY)")
        conn.execute("CREATE TABLE IF NOT EXISTS setting(k TEXT PRIMARY KEY, v TEXT)")
        done = {name for (name,) in conn.execute("SELECT name FROM migration")}
        for name, migration in MIGRATIONS:
            if name not in done:
                gone += migration(conn, identity, said)
                conn.execute("INSERT INTO migration VALUES (?)", (name,))
        (old,), = conn.execute("SELECT max(v) FROM setting WHERE k='normaliser'")
        if old is not None and old != str(NORMALISER_VERSION):
            kept = _rekey(conn)
            conn.execute("INSERT OR IGNORE INTO migration VALUES (?)",
                         (f"rekey-normaliser-{old}-to-{NORMALISER_VERSION}",))
            if said is not None and kept:
                said.append(f"{kept} recorded answers have no texts to key again by the new "
                            "normaliser: kept under their old keys")
        conn.execute("INSERT OR REPLACE INTO setting VALUES ('normaliser', ?)",
                     (str(NORMALISER_VERSION),))
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    for path in gone:
        path.unlink(missing_ok=True)


def _rekey(conn: sqlite3.Connection) -> int:
    """Key the answers again from their texts, empty the caches; how many had no texts."""
    rows = conn.execute("SELECT * FROM answer").fetchall()
    conn.execute("DELETE FROM answer")
    for role, kind, key, other, same, ts, mission, text, other_text in rows:
        if text is not None and other_text is not None:
            key, other = normalize(text).key, normalize(other_text).key
        conn.execute("INSERT OR IGNORE INTO answer VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     (role, kind, key, other, same, ts, mission, text, other_text))
    for table in CACHES:
        conn.execute(f"DELETE FROM {table}")
    return sum(text is None or other_text is None for *_, text, other_text in rows)


def set_aside(identity: Path, said: Said) -> None:
    """Move a damaged database out of the way, in place of the one set aside before."""
    path, damaged = identity / NAME, identity / DAMAGED
    shutil.rmtree(damaged, ignore_errors=True)  # a folder (never a link's target)
    damaged.unlink(missing_ok=True)  # a file or a link
    path.replace(damaged)
    for extra in _with_wal(path)[1:]:
        extra.unlink(missing_ok=True)
    if said is not None:
        said.append(f"{path} could not be read: set aside as {damaged.name} and made anew "
                    "from the candidate record and the identity archive; the judge's "
                    "answers recorded in it are not carried over")


Answers = dict[tuple[Any, str, str], bool]
AnswersAbout = Callable[[Any, str], dict[str, bool]]


def recorded_answers(conn: sqlite3.Connection | None) -> AnswersAbout | None:
    """The recorded answers about a note (bucket, key): other key -> same; None for none."""
    if conn is None or conn.execute("SELECT 1 FROM answer LIMIT 1").fetchone() is None:
        return None
    return lambda bucket, key: {other: bool(same) for other, same in conn.execute(
        "SELECT other, same FROM answer WHERE role=? AND kind=? AND key=?",
        (*_columns(bucket), key))}


def answer_rows(answers: Answers, ts: str, mission: str,
                text_of: TextOf = lambda bucket, key: None) -> list[list]:
    """`answers` as the journal holds them, with the texts `text_of` knows."""
    return [[*_columns(bucket), key, other, int(same), ts, mission, text_of(bucket, key),
             text_of(bucket, other)] for (bucket, key, other), same in answers.items()]


def append_answers(identity: Path, new_rows: list[list], said: Said = None) -> None:
    """Record `new_rows` in one transaction (an answer recorded before stands), past damage."""
    new_rows = [[*row, None, None][:9] for row in new_rows]  # an older journal's: no texts
    for attempt in range(2):
        try:
            with contextlib.closing(connect(identity, said=said)) as conn, conn:  # type: ignore
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany("INSERT OR IGNORE INTO answer VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                 new_rows)
                return
        except sqlite3.OperationalError as e:  # the journal step is redone by the next run
            raise e if "locked" in str(e) else unwritable(identity, e) from None
        except sqlite3.DatabaseError:
            if attempt:
                raise
        set_aside(identity, said)


def read_answers(identity: Path) -> Answers:
    """Every recorded answer, (bucket, key, other) -> same."""
    conn = connect(identity, write=False)
    if conn is None:
        return {}
    with contextlib.closing(conn):
        return {(role if kind == "-" else (role, kind), key, other): bool(same)
                for role, kind, key, other, same in conn.execute(
                    "SELECT role, kind, key, other, same FROM answer")}


def _columns(bucket: Any) -> tuple[str, str]:
    return (bucket, "-") if isinstance(bucket, str) else bucket  # a role: its identity file
