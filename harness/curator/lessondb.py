"""The candidate record's lessons, cached per match rule in the curator database: a pass reads
only the rows its notes touch, in one WAL snapshot (`LessonStore`): the cron figure rests on it."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from harness.curator import curatordb
from harness.curator import record as log
from harness.curator.curatordb import TextOf
from harness.curator.record import PROMOTABLE, RecordRead
from harness.state.store import hold_lock

VERSION = 6  # of the rows' meaning (6: sure joins only); other rows are made again from the log
POSTING_CAP = 24  # per word, only the most recent variants are looked at, and stored
Tracker = Any  # a `promotion.PromotionTracker`, which imports this module


class Variant(NamedTuple):
    """A phrasing of a lesson: `text.Norm`'s key, packed anchors and signature; its cluster."""

    key: str
    packed: str
    signature: str
    owner: int


@dataclass(slots=True)
class Bucket:
    """One bucket's phrasings: what a pass added, and what it has read of the store."""

    name: Any  # the bucket's key, e.g. (role, kind)
    stored: bool  # whether the store holds (and keeps) this bucket's phrasings
    exact: dict[str, int] = field(default_factory=dict)  # every phrasing seen -> cluster
    variants: dict[int, Variant] = field(default_factory=dict)  # variant id -> the phrasing
    # word, or signature (`text.Norm`), -> the variants filed under it, most recent last
    postings: dict[str, list[int]] = field(default_factory=dict)
    df: dict[str, int] = field(default_factory=dict)  # word -> variants ever filed under it
    asked: set[str] = field(default_factory=set)  # words and " " + key phrasings read


class LessonStore:
    """The rows of one rule in one read transaction; empty, asking nothing, for none usable."""

    def __init__(self, similarity: float, conn: sqlite3.Connection | None = None,
                 meta: dict[str, Any] | None = None) -> None:
        self.rule = f"s{similarity:g}"  # the match rule the rows were clustered by
        self.conn, self.usable, meta = conn, meta is not None, meta or {}
        self.generation: int = meta.get("generation", -1)
        self.first_cluster: int = meta.get("next_cluster", 0)  # below: in the database
        self.first_vid: int = meta.get("next_vid", 0)  # variants below: in the database
        self.read = RecordRead(meta.get("end", 0), meta.get("tail_sha", ""),
                               dict(meta.get("batches", {})), dict(meta.get("latest", {})))

    def covers(self, bucket: Any) -> bool:
        """Whether it keeps `bucket`: a role's lessons of a promotable kind."""
        return bucket[1] in PROMOTABLE

    def _rows(self, sql: str, *args: Any) -> sqlite3.Cursor:
        assert self.conn is not None
        return self.conn.execute(sql, (self.rule, *args))

    def fault(self, b: Bucket, key: str, signature: str) -> None:
        """Bring into `b` a query's exact phrasing `key`, else its words and `signature`."""
        if " " + key not in b.asked:
            b.asked.add(" " + key)
            # a key held twice: its first row (min() or ORDER BY in SQL walks them all by vid)
            rows = self._rows("SELECT vid, lesson FROM variant WHERE rule=? AND role=? AND "
                              "kind=? AND key=?", *b.name, key).fetchall()
            if rows:
                b.exact.setdefault(key, min(rows)[1])
        new = [w for w in {*key.split(), signature} if w and w not in b.asked]
        if key in b.exact or not new:
            return
        b.asked.update(new)
        for word, df, postings in self._rows(
                "SELECT word, df, postings FROM word WHERE rule=? AND role=? AND kind=? AND word "
                "IN (SELECT value FROM json_each(?))", *b.name, orjson.dumps(new).decode()):
            b.df[word], b.postings[word] = df, orjson.loads(postings)

    def fault_variants(self, b: Bucket, vids: list[int] | None) -> None:
        """Bring the phrasings `vids` into `b`, or all of its phrasings (None)."""
        if vids is not None:
            vids = [v for v in vids if v not in b.variants]
            if not vids:
                return
        where, args = (("role=? AND kind=?", b.name) if vids is None else
                       ("vid IN (SELECT value FROM json_each(?))", (orjson.dumps(vids).decode(),)))
        for vid, *variant in self._rows("SELECT vid, key, packed, signature, lesson FROM "
                                        f"variant WHERE rule=? AND {where}", *args):
            b.variants.setdefault(vid, Variant(*variant))

    def variant_count(self, cluster: int) -> int:
        return 0 if cluster >= self.first_cluster else self._rows(
            "SELECT count(*) FROM variant WHERE rule=? AND lesson=?", cluster).fetchone()[0]

    def lesson_row(self, cluster: int) -> list | None:
        """The stored `promotion.Evidence.row` of `cluster`, if any."""
        row = cluster < self.first_cluster and self._rows(
            "SELECT row FROM lesson WHERE rule=? AND id=?", cluster).fetchone()
        return orjson.loads(row[0]) if row else None

    def text_of(self, bucket: Any, key: str) -> str | None:
        """The recorded text the phrasing `key` of `bucket` was normalised from."""
        row = self.first_vid and self._rows(
            "SELECT text FROM variant WHERE rule=? AND role=? AND kind=? AND key=? AND text "
            "IS NOT NULL LIMIT 1", *bucket, key).fetchone()
        return row[0] if row else None

    def buckets(self) -> list[Any]:
        sql = "SELECT DISTINCT role, kind FROM variant WHERE rule=?"
        return [tuple(r) for r in self._rows(sql)] if self.first_vid else []

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


def open_store(identity: Path, similarity: float, *, write: bool = True,
               said: list[str] | None = None) -> LessonStore:
    """The stored lessons of `similarity`'s rule in one snapshot, none when they do not cover
    the log (its connection kept: the judge's answers); `write=False` changes nothing."""
    conn = curatordb.connect(identity, write=write, said=said)
    store = LessonStore(similarity, conn)
    if conn is None:
        return store
    conn.execute("BEGIN")  # one snapshot for the whole pass
    rows = conn.execute("SELECT k, v FROM lesson_meta WHERE rule=?", (store.rule,)).fetchall()
    try:
        meta = {k: orjson.loads(v) for k, v in rows}
        if (meta.get("version") == VERSION
                and log.covers(identity / log.RECORD, meta["end"], meta["tail_sha"])):
            return LessonStore(similarity, conn, meta)
    except (ValueError, KeyError, TypeError):
        pass  # rows a hand damaged: the log will do, and the pass writes them all again
    return store


def append(identity: Path, staged: Path, *, tracker: Tracker | None = None, batch: str = "",
           count: int = 0, mission: str = "", text_of: TextOf | None = None,
           said: list[str] | None = None) -> None:
    """Append the staged lines to the log under its lock and, given the `tracker` that planned
    this `batch` of `count` lines, write what it added to the database under the same lock."""
    with hold_lock(identity / log.LOCK):
        before, end, tail_sha = log.append_locked(identity, staged)
        if tracker is None:
            return
        read = tracker.store.read
        read.saw(batch, count - 1, mission)
        if before == read.end:  # only this batch since: the database covers it by offset
            read.end, read.tail_sha = end, tail_sha
        try:
            _write(identity, tracker, text_of or (lambda bucket, key: None))
        except (sqlite3.OperationalError, OSError):
            pass  # locked past the timeout, a full disk: a cache; the next pass reads the log
        except sqlite3.DatabaseError:  # damaged: the next pass makes it again from the log
            tracker.store.close()  # before its files move
            curatordb.set_aside(identity, said)


def _write(identity: Path, tracker: Tracker, text_of: TextOf) -> None:
    """What the pass added, unless another curator wrote since; with no usable store, all."""
    store, index, read = tracker.store, tracker.index, tracker.store.read
    rebuild = not store.usable
    if store.conn is None:
        store.conn = curatordb.connect(identity)  # closed with the store
    else:
        store.conn.execute("COMMIT")  # the snapshot ends
    with store.conn as conn:  # commits, or rolls back what raised
        conn.execute("BEGIN IMMEDIATE")
        # a rebuild counts on from every rule's: no pass that read before finds it again
        (generation,), = conn.execute(
            "SELECT coalesce(max(CAST(v AS INTEGER)), -1) FROM lesson_meta WHERE "
            "k='generation' AND rule=coalesce(?, rule)", (None if rebuild else store.rule,))
        if rebuild:
            for table in curatordb.CACHES:
                conn.execute(f"DELETE FROM {table}")
        elif generation != store.generation:
            return  # another curator wrote since: the next pass reads on from the older offset
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
                (store.rule, *b.name, w, b.df.get(w, 0),
                 orjson.dumps(b.postings[w][-POSTING_CAP:])) for w in filed))
        meta = {"version": VERSION, "end": read.end, "tail_sha": read.tail_sha,
                "batches": read.batches, "latest": read.latest, "generation": generation + 1,
                "next_cluster": tracker.count, "next_vid": index.next_vid}
        conn.executemany("INSERT OR REPLACE INTO lesson_meta VALUES (?, ?, ?)",
                         [(store.rule, k, orjson.dumps(v).decode()) for k, v in meta.items()])
