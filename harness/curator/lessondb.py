"""The candidate record clustered into lessons, in SQLite: what a pass reads of history.

`<identity>/.candidates.v4-s75.db` (`db_name`; `-rule` added when the second opinion is
off) caches `record`'s log: each lesson's evidence, the phrasings indexed for it, and per
word its count and recent postings (`matching`'s index), with how far into the log it
reaches (offset, a hash of the bytes before it, the batches it remembers). A pass opens it
in one read transaction (WAL: a snapshot that never blocks another mission's curator) and
asks only for the rows its new notes touch: the lessons they join, the words they hold
(`lessonsource`). At its commit it writes back what changed, in one transaction, unless
another curator wrote in between (the generation tells): then it writes nothing, and the
next pass reads the log from the older offset. A pass with no usable database (none yet, a
log that shrank or changed, a damaged file) clusters in memory and writes a whole new
one. It is a cache: the log decides.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import orjson

from harness.curator import record as log
from harness.curator.candidate import PROMOTABLE
from harness.curator.lessonsource import LessonDB
from harness.curator.promotion import Evidence, PromotionTracker
from harness.curator.record import RecordRead
from harness.curator.shortlist import POSTING_CAP
from harness.state.store import hold_lock

# 2: clusters joined by the second opinion (`learned`) too; 3: the shortlist looks under
# technical words first (`shortlist`); 4: phrasings filed under their signature, and
# measurements and runners no longer strict (`text`); 5: a person's note (no run) is no
# worker, occasion or mission of a lesson (`promotion.Evidence`); 6: the rule joins only
# what it is sure of, and the pair model is gone (`matching`). Files of other versions are
# left alone.
VERSION = 6
OLD_DIGEST = ".candidates.digest"  # the cache before this one: removed when a database is made
SCHEMA = """
CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE lesson(id INTEGER PRIMARY KEY, row BLOB NOT NULL);
CREATE TABLE variant(vid INTEGER PRIMARY KEY, role TEXT, kind TEXT, key TEXT, packed TEXT,
                     signature TEXT, lesson INTEGER);
CREATE TABLE word(role TEXT, kind TEXT, word TEXT, df INTEGER, postings BLOB,
                  PRIMARY KEY(role, kind, word)) WITHOUT ROWID;
"""
INDEXES = """
CREATE INDEX variant_key ON variant(role, kind, key);
CREATE INDEX variant_lesson ON variant(lesson);
"""


def db_name(similarity: float) -> str:
    """The database's file name: one per format and match rule (similarity), so that
    missions clustering by other rules, or another version of the harness, never replace a
    database another curator has open (SQLite's WAL files go by the database's path)."""
    return f".candidates.v{VERSION}-s{similarity:g}.db"


def load(identity: Path, similarity: float) -> tuple[PromotionTracker, RecordRead]:
    """A tracker that reads the database's lessons as the pass needs them, and how far the
    database covers the log; an empty tracker when there is no usable database."""
    db = _open(identity, similarity)
    if db is None:
        return PromotionTracker(similarity), RecordRead()
    tracker = PromotionTracker(similarity, source=db)
    tracker.clusters.count = db.first_cluster
    return tracker, db.read


def load_all(identity: Path, similarity: float) -> tuple[PromotionTracker, RecordRead]:
    """Every lesson and phrasing in memory (for `explain`, which lists them)."""
    db = _open(identity, similarity)
    tracker = PromotionTracker(similarity)
    if db is None:
        return tracker, RecordRead()
    with contextlib.closing(db):
        for cid, row in db.conn.execute("SELECT id, row FROM lesson ORDER BY id"):
            tracker.put(cid, Evidence.from_row(orjson.loads(row)))
        add = tracker.clusters.index.add_packed
        for role, kind, key, packed, signature, lesson in db.conn.execute(
                "SELECT role, kind, key, packed, signature, lesson FROM variant ORDER BY vid"):
            add((role, kind), key, packed, lesson, signature)
        tracker.clusters.count = db.first_cluster
        return tracker, db.read


def _open(identity: Path, similarity: float) -> LessonDB | None:
    path = identity / db_name(similarity)
    if not path.exists():
        return None
    conn = None
    try:
        conn = sqlite3.connect(path, isolation_level=None, timeout=30)
        conn.execute("BEGIN")  # one snapshot for the whole pass
        meta = {k: orjson.loads(v) for k, v in conn.execute("SELECT k, v FROM meta")}
        if (meta.get("version") == VERSION and meta.get("similarity") == similarity
                and log.covers(identity / log.RECORD, meta["end"], meta["tail_sha"])):
            return LessonDB(conn, meta)
    except (sqlite3.Error, ValueError, KeyError, TypeError):
        pass  # damaged or foreign: the log will do
    if conn is not None:
        conn.close()
    return None


def append(identity: Path, staged: Path, *, tracker: PromotionTracker | None = None,
           read: RecordRead | None = None, batch: str = "", count: int = 0,
           mission: str = "") -> None:
    """Append the staged candidate lines to the log, as one locked write.

    Given the `tracker` that planned this `batch` of `count` lines and how far it had
    `read` the log, the database is brought up to date under the same lock, covering
    this batch by offset too when nobody appended in between.
    """
    with hold_lock(identity / log.LOCK):
        before, end, tail_sha = log.append_locked(identity, staged)
        if tracker is None or read is None:
            return
        covered = RecordRead(read.end, read.tail_sha, dict(read.batches), dict(read.latest))
        covered.saw(batch, count - 1, mission)
        if before == read.end:  # only this batch since: the database covers it by offset
            covered.end, covered.tail_sha = end, tail_sha
        source = tracker.source
        if isinstance(source, LessonDB):
            _write_changes(source, tracker, covered)
        else:
            _write_whole(identity, tracker, covered)


def _meta_rows(tracker: PromotionTracker, read: RecordRead, generation: int,
               next_vid: int) -> list[tuple[str, bytes]]:
    index = tracker.clusters.index
    meta = {"version": VERSION, "similarity": index.threshold,
            "end": read.end, "tail_sha": read.tail_sha, "batches": read.batches,
            "latest": read.latest,
            "generation": generation, "next_cluster": tracker.clusters.count,
            "next_vid": next_vid}
    return [(k, orjson.dumps(v).decode()) for k, v in meta.items()]


def _write_changes(db: LessonDB, tracker: PromotionTracker, read: RecordRead) -> None:
    """The lessons noted, the phrasings and words added: one transaction, unless another
    curator wrote since this pass's snapshot (then the next pass re-reads the log)."""
    conn = db.conn
    conn.execute("COMMIT")  # the snapshot ends
    conn.execute("BEGIN IMMEDIATE")
    try:
        (gen,), = conn.execute("SELECT v FROM meta WHERE k='generation'")
        if orjson.loads(gen) == db.generation:
            _write_rows(db, tracker, read)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    finally:
        db.close()


def _write_rows(db: LessonDB, tracker: PromotionTracker, read: RecordRead) -> None:
    conn = db.conn
    conn.executemany("INSERT OR REPLACE INTO lesson VALUES (?, ?)",
                     _lesson_rows(tracker, sorted(tracker.noted)))
    index = tracker.clusters.index
    for bucket in index.buckets():
        b = index.bucket_state(bucket)
        if b.source is not db:
            continue
        role, kind = bucket
        conn.executemany("INSERT INTO variant VALUES (?, ?, ?, ?, ?, ?, ?)", [
            (vid, role, kind, key, b.anchors[vid], b.signature[vid], b.owner[vid])
            for vid, key in b.keys.items() if vid >= db.first_vid])
        conn.executemany("INSERT OR REPLACE INTO word VALUES (?, ?, ?, ?, ?)", [
            (role, kind, w, b.df.get(w, 0), orjson.dumps(b.postings[w][-POSTING_CAP:]))
            for w in b.dirty])
    conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                     _meta_rows(tracker, read, db.generation + 1, db.next_vid))


def _lesson_rows(tracker: PromotionTracker, clusters: Any) -> Any:
    lessons = tracker.lessons
    for cid in clusters:
        ev = lessons[cid] if cid < len(lessons) else None
        if ev is not None and ev.kind in PROMOTABLE:
            yield cid, orjson.dumps(ev.row())


def _write_whole(identity: Path, tracker: PromotionTracker, read: RecordRead) -> None:
    """A new database of everything in memory, put in place of any old one."""
    name = db_name(tracker.clusters.index.threshold)
    fd, tmp = tempfile.mkstemp(dir=identity, prefix=f"{name}.", suffix=".tmp")
    os.close(fd)
    try:
        conn = sqlite3.connect(tmp, isolation_level=None)
        with contextlib.closing(conn):
            # nothing to protect until it is in place: no journal while it is filled
            conn.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + SCHEMA)
            conn.execute("BEGIN")
            conn.executemany("INSERT INTO lesson VALUES (?, ?)",
                             _lesson_rows(tracker, range(len(tracker.lessons))))
            next_vid = _insert_index(conn, tracker)
            conn.executemany("INSERT INTO meta VALUES (?, ?)",
                             _meta_rows(tracker, read, 0, next_vid))
            conn.execute("COMMIT")
            conn.executescript(INDEXES)
            conn.execute("PRAGMA journal_mode=WAL")
        db = identity / name
        # we hold the lock: no writer. A database is replaced in place only when the log
        # it covered changed (a hand edit), the one case two curators can share its name.
        for leftover in (f"{name}-wal", f"{name}-shm", f"{name}-journal", OLD_DIGEST):
            (identity / leftover).unlink(missing_ok=True)
        os.replace(tmp, db)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _insert_index(conn: sqlite3.Connection, tracker: PromotionTracker) -> int:
    """The index's phrasings of lessons with evidence, and its words; the next vid."""
    index, lessons = tracker.clusters.index, tracker.lessons
    base = 0
    for bucket in index.buckets():
        if bucket[1] not in PROMOTABLE:
            continue
        role, kind = bucket
        b = index.bucket_state(bucket)
        kept = [cid < len(lessons) and lessons[cid] is not None for cid in b.owner]
        conn.executemany("INSERT INTO variant VALUES (?, ?, ?, ?, ?, ?, ?)", (
            (base + vid, role, kind, b.keys[vid], b.anchors[vid], b.signature[vid],
             b.owner[vid])
            for vid in range(len(b.keys)) if kept[vid]))
        conn.executemany("INSERT INTO word VALUES (?, ?, ?, ?, ?)", (
            (role, kind, w, b.df.get(w, 0),
             orjson.dumps([base + v for v in plist[-POSTING_CAP:] if kept[v]]))
            for w, plist in b.postings.items()))
        base += len(b.keys)
    return base
