"""The candidate record clustered into lessons (`PromotionTracker`), cached per match rule in
the curator database: lessons, phrasings with texts, word postings, and how far into the log
they reach. A pass reads one WAL snapshot (`lessonstore`: only the rows its notes touch) and at
its commit writes what it added in one transaction, unless another curator wrote since (the
generation tells; the next pass reads on from the older offset). With no usable rows (a changed
log, a new normaliser or rule) it reads the whole log and writes all.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson

from harness.curator import curatordb
from harness.curator import record as log
from harness.curator.clusters import PromotionTracker
from harness.curator.lessonstore import LessonStore, TextOf, rule
from harness.curator.matching import POSTING_CAP
from harness.curator.promotion import Evidence
from harness.curator.record import PROMOTABLE, RecordRead
from harness.state.store import hold_lock

VERSION = 6  # of the rows' meaning (6: sure joins only); other rows are made again from the log


def load(identity: Path, similarity: float, *, write: bool = True,
         said: list[str] | None = None) -> tuple[PromotionTracker, RecordRead]:
    """A tracker over the stored lessons, how far they reach; `write=False` changes nothing."""
    store = _open(identity, rule(similarity), write, said)
    return PromotionTracker(similarity, store), store.read


def _open(identity: Path, rule_name: str, write: bool, said: list[str] | None
          ) -> LessonStore:
    try:
        conn = curatordb.connect(identity, write=write, said=said)
    except sqlite3.OperationalError:  # locked past the timeout: the log will do
        conn = None
    if conn is None:
        return LessonStore(rule_name)
    try:
        conn.execute("BEGIN")  # one snapshot for the whole pass
        meta = {k: orjson.loads(v) for k, v in conn.execute(
            "SELECT k, v FROM lesson_meta WHERE rule=?", (rule_name,))}
        if (meta.get("version") == VERSION
                and log.covers(identity / log.RECORD, meta["end"], meta["tail_sha"])):
            return LessonStore(rule_name, conn, meta)
    except (sqlite3.Error, ValueError, KeyError, TypeError):
        pass  # damaged rows: the log will do, and the pass writes them all again
    conn.close()
    return LessonStore(rule_name)


def stored(identity: Path, similarity: float) -> list[Evidence]:
    """Every lesson the database holds for `similarity`'s rule, in cluster order."""
    store = _open(identity, rule(similarity), False, None)
    try:
        return [Evidence.from_row(row) for cid in range(store.first_cluster)
                if (row := store.lesson_row(cid))]
    finally:
        store.close()


def append(identity: Path, staged: Path, *, tracker: PromotionTracker | None = None,
           read: RecordRead | None = None, batch: str = "", count: int = 0,
           mission: str = "", text_of: TextOf | None = None,
           said: list[str] | None = None) -> None:
    """Append the staged lines to the log under its lock and, given the `tracker` that planned
    this `batch` of `count` lines, write what it added to the database under the same lock."""
    with hold_lock(identity / log.LOCK):
        before, end, tail_sha = log.append_locked(identity, staged)
        if tracker is None or read is None:
            return
        read.saw(batch, count - 1, mission)
        if before == read.end:  # only this batch since: the database covers it by offset
            read.end, read.tail_sha = end, tail_sha
        try:
            _write(identity, tracker, read, text_of or (lambda bucket, key: None))
        except (sqlite3.OperationalError, OSError):
            pass  # locked past the timeout, a full disk: a cache; the next pass reads the log
        except sqlite3.DatabaseError:  # damaged: the next pass makes it again from the log
            curatordb.set_aside(identity, said)


def _write(identity: Path, tracker: PromotionTracker, read: RecordRead,
           text_of: TextOf) -> None:
    """What the pass added, unless another curator wrote since; with no usable store, all."""
    store = tracker.store
    rebuild = store.conn is None
    if store.conn is not None:
        store.conn.execute("COMMIT")  # the snapshot ends
    conn = store.conn or curatordb.connect(identity)
    assert conn is not None
    try:
        with conn:  # commits, or rolls back what raised
            conn.execute("BEGIN IMMEDIATE")
            # a rebuild counts on from every rule's: no pass that read before finds it again
            (generation,), = conn.execute(
                "SELECT coalesce(max(CAST(v AS INTEGER)), -1) FROM lesson_meta WHERE "
                "k='generation' AND rule=coalesce(?, rule)", (None if rebuild else store.rule,))
            if rebuild:
                for table in curatordb.CACHES:
                    conn.execute(f"DELETE FROM {table}")
            if rebuild or generation == store.generation:
                _write_rows(conn, tracker, read, generation + 1, text_of)
    finally:
        if rebuild:
            conn.close()


def _write_rows(conn: sqlite3.Connection, tracker: PromotionTracker, read: RecordRead,
                generation: int, text_of: TextOf) -> None:
    store, index = tracker.store, tracker.clusters.index
    conn.executemany("INSERT OR REPLACE INTO lesson VALUES (?, ?, ?)", (
        (store.rule, cid, orjson.dumps(ev.row())) for cid in sorted(tracker.noted)
        if (ev := tracker.lessons[cid]).kind in PROMOTABLE))
    for b in index.stored_buckets():
        added = [(vid, v) for vid, v in b.variants.items() if vid >= store.first_vid]
        conn.executemany("INSERT INTO variant VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", (
            (store.rule, vid, *b.name, v.key, v.packed, v.signature, v.owner,
             text_of(b.name, v.key)) for vid, v in added))
        # the words and signatures filed under them: those whose postings changed
        filed = {w for _, v in added for w in (*v.key.split(), v.signature) if w}
        conn.executemany("INSERT OR REPLACE INTO word VALUES (?, ?, ?, ?, ?, ?)", (
            (store.rule, *b.name, w, b.df.get(w, 0), orjson.dumps(b.postings[w][-POSTING_CAP:]))
            for w in filed))
    meta = {"version": VERSION, "end": read.end, "tail_sha": read.tail_sha,
            "batches": read.batches, "latest": read.latest, "generation": generation,
            "next_cluster": tracker.clusters.count, "next_vid": index.next_vid}
    conn.executemany("INSERT OR REPLACE INTO lesson_meta VALUES (?, ?, ?)",
                     [(store.rule, k, orjson.dumps(v).decode()) for k, v in meta.items()])
