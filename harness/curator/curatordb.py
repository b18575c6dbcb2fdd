"""The curator's one database: `<identity>/.curator.db` (SQLite, WAL).

It holds, beside the identity files and shared by their missions:

- `answer`: the judge's answers (`verdicts`), keyed by `text.normalize` keys, with the
  two texts each was about, so that a new normaliser re-keys them;
- `lesson`, `variant`, `word`, `lesson_meta`: the candidate record clustered into
  lessons (`lessondb`) by one similarity (another's are made anew); a cache of
  `.candidates.log`.

Its schema grows by named MIGRATIONS, applied in order, each once, in one transaction;
`migration` records which ran, `PRAGMA user_version` how many. `setting` holds the
normaliser's version (`text.NORMALISER_VERSION`): when it changes, the answers are keyed
again from their texts and the caches emptied, to be made again from the files they
cache. A damaged database is set aside as `.curator.db.damaged` (its answers may still
be read from it) and made anew, with a message.
"""

from __future__ import annotations

import errno
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

from harness.curator.text import NORMALISER_VERSION, normalize

NAME = ".curator.db"
DAMAGED = ".curator.db.damaged"
OLD_CACHES = (".candidates.v*.db", ".archive.db", ".candidates.digest")


def _tables(conn: sqlite3.Connection, identity: Path, said: list[str] | None) -> list[Path]:
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


def _import_answers(conn: sqlite3.Connection, identity: Path,
                    said: list[str] | None) -> list[Path]:
    """The answers of `.judgments.db` (harness 2026-11), without their texts: they keep
    their keys until the normaliser changes. A file that cannot be read stays, said so."""
    old = identity / ".judgments.db"
    if not old.is_file():
        return []
    try:
        source = sqlite3.connect(f"{old.resolve().as_uri()}?mode=ro", uri=True)
        try:
            rows = source.execute("SELECT role, kind, key, other, same, ts, mission FROM "
                                  "answer").fetchall()
        finally:
            source.close()
    except sqlite3.Error as e:
        if said is not None:
            said.append(f"{old} could not be read ({e}): its answers were not imported; "
                        "the file is left as it was")
        return []
    conn.executemany("INSERT OR IGNORE INTO answer VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL)",
                     rows)
    return [old, Path(f"{old}-wal"), Path(f"{old}-shm")]


def _drop_old_caches(conn: sqlite3.Connection, identity: Path,
                     said: list[str] | None) -> list[Path]:
    """The lesson database and archive index of earlier versions: caches of files that
    stay, made again in this database by the passes to come."""
    return [path for pattern in OLD_CACHES for found in identity.glob(pattern)
            for path in (found, Path(f"{found}-wal"), Path(f"{found}-shm"))]


def _drop_archive_index(conn: sqlite3.Connection, identity: Path,
                        said: list[str] | None) -> list[Path]:
    """The index of identity/archive/ that databases made before this migration have
    (harness 2026-11): the archive is read whole now."""
    for table in ("archive_lines", "archive_words", "archive_read"):
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    return []


# (name, migration): each returns the files to delete once it is committed, and may say
# what it could not do
Migration = Callable[[sqlite3.Connection, Path, list[str] | None], list[Path]]
MIGRATIONS: list[tuple[str, Migration]] = [
    ("1-tables", _tables),
    ("2-import-judgments-db", _import_answers),
    ("3-drop-old-caches", _drop_old_caches),
    ("4-drop-archive-index", _drop_archive_index),
]
SCHEMA_VERSION = len(MIGRATIONS)


def connect(identity: Path, *, write: bool = True,
            said: list[str] | None = None) -> sqlite3.Connection | None:
    """The database, migrated and keyed by this normaliser (autocommit; the caller begins
    its transactions). Without `write` (a dry run), None unless it is already so: nothing
    is made or changed. What a migration or a repair did is added to `said`. Locked past
    its timeout: sqlite3.OperationalError; not writable (a full disk): OSError."""
    path = identity / NAME
    if not write:
        return _read_only(path)
    identity.mkdir(parents=True, exist_ok=True)
    try:
        return _migrated(path, identity, said)
    except sqlite3.OperationalError as e:
        if "locked" in str(e):
            raise
        if not path.is_dir():  # a full disk, say: not damage
            raise unwritable(identity, e) from None
    except sqlite3.DatabaseError:
        pass
    set_aside(identity, said)
    return _migrated(path, identity, said)


def unwritable(identity: Path, error: sqlite3.Error) -> OSError:
    """An SQLite error that is no lock and no damage (a full disk) as an OSError naming the
    database: the command line says which file, with exit 2."""
    return OSError(errno.EIO, f"cannot write ({error})", str(identity / NAME))


def _migrated(path: Path, identity: Path, said: list[str] | None) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, timeout=30)
    try:
        if not _current(conn):
            _migrate(conn, identity, said)
    except BaseException:
        conn.close()
        raise
    return conn


def _read_only(path: Path) -> sqlite3.Connection | None:
    if not path.is_file():
        return None
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True,
                           isolation_level=None, timeout=30)
    try:
        if _current(conn):
            return conn
    except sqlite3.DatabaseError:
        pass
    conn.close()
    return None


def _current(conn: sqlite3.Connection) -> bool:
    """Whether every migration ran and the answers are keyed by this normaliser."""
    (version,), = conn.execute("PRAGMA user_version")
    if version != SCHEMA_VERSION:
        return False
    row = conn.execute("SELECT v FROM setting WHERE k='normaliser'").fetchone()
    return row is not None and row[0] == str(NORMALISER_VERSION)


def _migrate(conn: sqlite3.Connection, identity: Path, said: list[str] | None) -> None:
    """Apply the migrations not recorded yet, and re-key for a new normaliser; one
    transaction, so two curators starting at once migrate once."""
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("BEGIN IMMEDIATE")  # outside the try: no ROLLBACK without a transaction
    try:
        conn.execute("CREATE TABLE IF NOT EXISTS migration(name TEXT PRIMARY KEY)")
        conn.execute("CREATE TABLE IF NOT EXISTS setting(k TEXT PRIMARY KEY, v TEXT)")
        done = {name for (name,) in conn.execute("SELECT name FROM migration")}
        gone: list[Path] = []
        for name, migration in MIGRATIONS:
            if name not in done:
                gone += migration(conn, identity, said)
                conn.execute("INSERT INTO migration VALUES (?)", (name,))
        row = conn.execute("SELECT v FROM setting WHERE k='normaliser'").fetchone()
        if row is not None and row[0] != str(NORMALISER_VERSION):
            kept = rekey(conn)
            conn.execute("INSERT OR IGNORE INTO migration VALUES (?)",
                         (f"rekey-normaliser-{row[0]}-to-{NORMALISER_VERSION}",))
            if said is not None and kept:
                said.append(f"{kept} recorded answers have no texts to key again by the new "
                            "normaliser: kept under their old keys")
        conn.execute("INSERT OR REPLACE INTO setting VALUES ('normaliser', ?)",
                     (str(NORMALISER_VERSION),))
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    for path in gone:
        path.unlink(missing_ok=True)


def rekey(conn: sqlite3.Connection) -> int:
    """Key every answer with both its texts by this normaliser, and empty the caches (the
    passes to come make them again); the number of answers left under their old keys."""
    rows = conn.execute("SELECT role, kind, key, other, same, ts, mission, text, other_text "
                        "FROM answer").fetchall()
    kept = 0
    conn.execute("DELETE FROM answer")
    for role, kind, key, other, same, ts, mission, text, other_text in rows:
        if text is None or other_text is None:
            kept += 1
        else:
            key, other = normalize(text).key, normalize(other_text).key
        conn.execute("INSERT OR IGNORE INTO answer VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     (role, kind, key, other, same, ts, mission, text, other_text))
    for table in ("lesson_meta", "lesson", "variant", "word"):
        conn.execute(f"DELETE FROM {table}")
    return kept


def set_aside(identity: Path, said: list[str] | None) -> None:
    """Move a damaged database out of the way, in place of the one set aside before: the
    next connect makes a new one, and the caches are made again from their files."""
    path, damaged = identity / NAME, identity / DAMAGED
    if damaged.is_dir() and not damaged.is_symlink():
        shutil.rmtree(damaged)
    else:
        damaged.unlink(missing_ok=True)
    path.replace(damaged)
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    if said is not None:
        said.append(f"{path} could not be read: set aside as {damaged.name} and made anew "
                    "from the candidate record and the identity archive; the judge's "
                    "answers recorded in it are not carried over")
