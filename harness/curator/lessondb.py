"""The candidate record clustered into lessons, in the curator database (`curatordb`):
what a pass reads of history.

Its tables cache `record`'s log, one set per match rule (`rule`: similarity, and the
second opinion or not): each lesson's evidence, the phrasings indexed for it (with the text
each was normalised from), and per word its count and recent postings (`matching`'s index),
with how far into the log it reaches (offset, a hash of the bytes before it, the batches it
remembers). A pass opens it in one read transaction (WAL: a snapshot that never blocks
another mission's curator) and asks only for the rows its new notes touch: the lessons
they join, the words they hold (`lessonsource`). At its commit it writes back what
changed, in one transaction, unless another curator wrote in between (the generation
tells): then it writes nothing, and the next pass reads the log from the older offset. A
pass with no usable rows (none yet, a log that shrank or changed, a new normaliser)
clusters in memory and writes them all again. It is a cache: the log decides.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson

from harness.curator import curatordb
from harness.curator import record as log
from harness.curator.candidate import PROMOTABLE
from harness.curator.lessonsource import LessonDB
from harness.curator.promotion import Evidence, PromotionTracker
from harness.curator.record import RecordRead
from harness.curator.shortlist import POSTING_CAP
from harness.state.store import hold_lock

# 5: a person's note (no run) is no worker, occasion or mission of a lesson
# (`promotion.Evidence`); 6: the rule joins only what it is sure of, and the pair model is
# gone (`matching`). Rows of another version are made again from the log.
VERSION = 6
# (bucket, key) -> the text a pass normalised to `key`, for the phrasings it adds
TextOf = Any


def rule(similarity: float) -> str:
    """The match rule the rows were clustered by: missions clustering by other rules keep
    rows of their own."""
    return f"s{similarity:g}"


def load(identity: Path, similarity: float, *, write: bool = True,
         said: list[str] | None = None
         ) -> tuple[PromotionTracker, RecordRead]:
    """A tracker that reads the database's lessons as the pass needs them, and how far the
    database covers the log; an empty tracker when there is no usable database. Without
    `write` (a dry run) the database is not made or migrated; `said` gets what was."""
    db = _open(identity, rule(similarity), write, said)
    if db is None:
        return PromotionTracker(similarity), RecordRead()
    tracker = PromotionTracker(similarity, source=db)
    tracker.clusters.count = db.first_cluster
    return tracker, db.read


def forget(identity: Path) -> None:
    """Drop every rule's lessons: the next pass clusters the whole record again."""
    conn = curatordb.connect(identity)
    assert conn is not None
    try:
        for table in ("lesson_meta", "lesson", "variant", "word"):
            conn.execute(f"DELETE FROM {table}")
    finally:
        conn.close()


def load_all(identity: Path, similarity: float) -> tuple[PromotionTracker, RecordRead]:
    """Every lesson and phrasing in memory (for `explain`, which lists them)."""
    db = _open(identity, rule(similarity), False, None)
    tracker = PromotionTracker(similarity)
    if db is None:
        return tracker, RecordRead()
    try:
        for cid, row in db.conn.execute("SELECT id, row FROM lesson WHERE rule=? ORDER BY id",
                                        (db.rule,)):
            tracker.put(cid, Evidence.from_row(orjson.loads(row)))
        add = tracker.clusters.index.add_packed
        for role, kind, key, packed, signature, lesson in db.conn.execute(
                "SELECT role, kind, key, packed, signature, lesson FROM variant WHERE rule=? "
                "ORDER BY vid", (db.rule,)):
            add((role, kind), key, packed, lesson, signature)
        tracker.clusters.count = db.first_cluster
        return tracker, db.read
    finally:
        db.close()


def _open(identity: Path, rule_name: str, write: bool, said: list[str] | None
          ) -> LessonDB | None:
    """The rows of `rule_name` in one read transaction, if they cover the log."""
    try:
        conn = curatordb.connect(identity, write=write, said=said)
    except sqlite3.OperationalError:  # locked past the timeout: the log will do
        return None
    if conn is None:
        return None
    try:
        conn.execute("BEGIN")  # one snapshot for the whole pass
        meta = {k: orjson.loads(v) for k, v in conn.execute(
            "SELECT k, v FROM lesson_meta WHERE rule=?", (rule_name,))}
        if (meta.get("version") == VERSION
                and log.covers(identity / log.RECORD, meta["end"], meta["tail_sha"])):
            return LessonDB(conn, meta, rule_name)
    except (sqlite3.Error, ValueError, KeyError, TypeError):
        pass  # damaged rows: the log will do, and the pass writes them all again
    conn.close()
    return None


def append(identity: Path, staged: Path, *, tracker: PromotionTracker | None = None,
           read: RecordRead | None = None, batch: str = "", count: int = 0,
           mission: str = "", text_of: TextOf = None, said: list[str] | None = None) -> None:
    """Append the staged candidate lines to the log, as one locked write.

    Given the `tracker` that planned this `batch` of `count` lines and how far it had
    `read` the log, the database is brought up to date under the same lock, covering
    this batch by offset too when nobody appended in between; `text_of` gives the texts
    of the phrasings it adds.
    """
    with hold_lock(identity / log.LOCK):
        before, end, tail_sha = log.append_locked(identity, staged)
        if tracker is None or read is None:
            return
        covered = RecordRead(read.end, read.tail_sha, dict(read.batches), dict(read.latest))
        covered.saw(batch, count - 1, mission)
        if before == read.end:  # only this batch since: the database covers it by offset
            covered.end, covered.tail_sha = end, tail_sha
        text_of = text_of or (lambda bucket, key: None)
        source = tracker.source
        try:
            if isinstance(source, LessonDB):
                _write_changes(source, tracker, covered, text_of)
            else:
                _write_whole(identity, tracker, covered, text_of)
        except (sqlite3.OperationalError, OSError):
            pass  # locked past the timeout, a full disk: a cache; the next pass reads the log
        except sqlite3.DatabaseError:  # damaged: the next pass makes it again from the log
            curatordb.set_aside(identity, said)


def _meta_rows(rule_name: str, tracker: PromotionTracker, read: RecordRead, generation: int,
               next_vid: int) -> list[tuple[str, str, str]]:
    meta = {"version": VERSION, "end": read.end, "tail_sha": read.tail_sha,
            "batches": read.batches, "latest": read.latest, "generation": generation,
            "next_cluster": tracker.clusters.count, "next_vid": next_vid}
    return [(rule_name, k, orjson.dumps(v).decode()) for k, v in meta.items()]


def _write_changes(db: LessonDB, tracker: PromotionTracker, read: RecordRead,
                   text_of: TextOf) -> None:
    """The lessons noted, the phrasings and words added: one transaction, unless another
    curator wrote since this pass's snapshot (then the next pass re-reads the log)."""
    conn = db.conn
    conn.execute("COMMIT")  # the snapshot ends
    conn.execute("BEGIN IMMEDIATE")
    try:
        if _generation(conn, db.rule) == db.generation:
            _write_rows(db, tracker, read, text_of)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    finally:
        db.close()


def _generation(conn: sqlite3.Connection, rule_name: str) -> int:
    row = conn.execute("SELECT v FROM lesson_meta WHERE rule=? AND k='generation'",
                       (rule_name,)).fetchone()
    return -1 if row is None else orjson.loads(row[0])


def _write_rows(db: LessonDB, tracker: PromotionTracker, read: RecordRead,
                text_of: TextOf) -> None:
    conn, name = db.conn, db.rule
    conn.executemany("INSERT OR REPLACE INTO lesson VALUES (?, ?, ?)",
                     _lesson_rows(name, tracker, sorted(tracker.noted)))
    index = tracker.clusters.index
    for bucket in index.buckets():
        b = index.bucket_state(bucket)
        if b.source is not db:
            continue
        role, kind = bucket
        conn.executemany("INSERT INTO variant VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", [
            (name, vid, role, kind, key, b.anchors[vid], b.signature[vid], b.owner[vid],
             text_of(bucket, key)) for vid, key in b.keys.items() if vid >= db.first_vid])
        conn.executemany("INSERT OR REPLACE INTO word VALUES (?, ?, ?, ?, ?, ?)", [
            (name, role, kind, w, b.df.get(w, 0), orjson.dumps(b.postings[w][-POSTING_CAP:]))
            for w in b.dirty])
    conn.executemany("INSERT OR REPLACE INTO lesson_meta VALUES (?, ?, ?)",
                     _meta_rows(name, tracker, read, db.generation + 1, db.next_vid))


def _lesson_rows(rule_name: str, tracker: PromotionTracker, clusters: Any) -> Any:
    lessons = tracker.lessons
    for cid in clusters:
        ev = lessons[cid] if cid < len(lessons) else None
        if ev is not None and ev.kind in PROMOTABLE:
            yield rule_name, cid, orjson.dumps(ev.row())


def _write_whole(identity: Path, tracker: PromotionTracker, read: RecordRead,
                 text_of: TextOf) -> None:
    """Every lesson and phrasing in memory, in place of the rule's rows, in one
    transaction; a new generation, so a pass that read the old rows writes nothing."""
    index = tracker.clusters.index
    name = rule(index.threshold)
    conn = curatordb.connect(identity)
    assert conn is not None
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            generation = _generation(conn, name) + 1
            for table in ("lesson", "variant", "word", "lesson_meta"):
                conn.execute(f"DELETE FROM {table} WHERE rule=?", (name,))
            conn.executemany("INSERT INTO lesson VALUES (?, ?, ?)",
                             _lesson_rows(name, tracker, range(len(tracker.lessons))))
            next_vid = _insert_index(conn, name, tracker, text_of)
            conn.executemany("INSERT INTO lesson_meta VALUES (?, ?, ?)",
                             _meta_rows(name, tracker, read, generation, next_vid))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    finally:
        conn.close()


def _insert_index(conn: sqlite3.Connection, rule_name: str, tracker: PromotionTracker,
                  text_of: TextOf) -> int:
    """The index's phrasings of lessons with evidence, and its words; the next vid."""
    index, lessons = tracker.clusters.index, tracker.lessons
    base = 0
    for bucket in index.buckets():
        if bucket[1] not in PROMOTABLE:
            continue
        role, kind = bucket
        b = index.bucket_state(bucket)
        kept = [cid < len(lessons) and lessons[cid] is not None for cid in b.owner]
        conn.executemany("INSERT INTO variant VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", (
            (rule_name, base + vid, role, kind, b.keys[vid], b.anchors[vid], b.signature[vid],
             b.owner[vid], text_of(bucket, b.keys[vid]))
            for vid in range(len(b.keys)) if kept[vid]))
        conn.executemany("INSERT INTO word VALUES (?, ?, ?, ?, ?, ?)", (
            (rule_name, role, kind, w, b.df.get(w, 0),
             orjson.dumps([base + v for v in plist[-POSTING_CAP:] if kept[v]]))
            for w, plist in b.postings.items()))
        base += len(b.keys)
    return base
