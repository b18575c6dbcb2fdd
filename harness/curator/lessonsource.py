"""The lesson database (`lessondb`) as the index's and the tracker's source: the rows of
one match rule a pass asks for, as its queries need them, in the read transaction
`lessondb` opened."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from harness.curator.candidate import PROMOTABLE
from harness.curator.promotion import Evidence
from harness.curator.record import RecordRead

QUERY_WORDS = 500  # words per query: SQLite caps the parameters of one statement


class LessonDB:
    """An open database as the index's and the tracker's source (`promotion.LessonSource`)."""

    def __init__(self, conn: sqlite3.Connection, meta: dict[str, Any], rule: str) -> None:
        self.conn, self.rule = conn, rule
        self.generation: int = meta["generation"]
        self.first_cluster: int = meta["next_cluster"]  # clusters below are in the database
        self.first_vid = self.next_vid = meta["next_vid"]
        self.read = RecordRead(meta["end"], meta["tail_sha"], dict(meta["batches"]),
                               dict(meta.get("latest", {})))
        self._asked: dict[Any, set] = {}  # bucket -> keys and words looked up
        self._fetched: dict[Any, dict[str, int | None]] = {}  # bucket -> key -> its lesson

    def covers(self, bucket: Any) -> bool:
        return bucket[1] in PROMOTABLE

    def prefetch(self, bucket: Any, keys: Iterable[str]) -> None:
        """Look up the exact phrasings `keys` of `bucket` at once, for the faults to come
        (MEMORY.md's lessons one query each: 4 ms of a pass at 1M entries)."""
        if not self.covers(bucket):
            return
        asked, fetched = self._asked.get(bucket, ()), self._fetched.setdefault(bucket, {})
        new = [k for k in dict.fromkeys(keys) if (" ", k) not in asked and k not in fetched]
        fetched.update(dict.fromkeys(new))
        # a key held twice takes its first row, the one a single seek finds (sorted here:
        # an ORDER BY makes SQLite walk every phrasing of the rule in vid order)
        first: dict[str, int] = {}
        for key, lesson, vid in self._rows_in("key, lesson, vid FROM variant", "key", bucket,
                                              new):
            if vid < first.get(key, vid + 1):
                first[key], fetched[key] = vid, lesson

    def fault(self, bucket: Any, b: Any, key: str, words: set[str]) -> None:
        """Bring into `b` what a query of `key` needs: its exact phrasing, and its words
        unless that phrasing is known (the words at 1M entries: 8 ms of a 60 ms pass)."""
        asked = self._asked.setdefault(bucket, set())
        if (" ", key) not in asked:
            if key not in self._fetched.get(bucket, ()):
                self.prefetch(bucket, (key,))
            asked.add((" ", key))
            hit = self._fetched[bucket].pop(key)
            if hit is not None and key not in b.exact:
                b.exact[key] = hit
        if key in b.exact:
            return  # a query stops at its exact phrasing and `add` skips it: no words needed
        new = [w for w in words if w not in asked]
        asked.update(new)
        for word, df, postings in self._rows_in("word, df, postings FROM word", "word",
                                                bucket, new):
            if word[0] == "=":  # a signature (`text.Norm`): no df, a tuple (`Bucket.postings`)
                b.postings[word] = tuple(orjson.loads(postings))
            else:
                b.df[word] = df
                b.postings[word] = orjson.loads(postings)

    def _rows_in(self, select: str, column: str, bucket: Any, values: list[str]
                 ) -> Iterator[tuple]:
        """SELECT `select` of `bucket`'s rows whose `column` is one of `values`, QUERY_WORDS
        values to a query."""
        for first in range(0, len(values), QUERY_WORDS):
            chunk = values[first:first + QUERY_WORDS]
            yield from self.conn.execute(
                f"SELECT {select} WHERE rule=? AND role=? AND kind=? AND {column} IN "
                f"({','.join('?' * len(chunk))})", (self.rule, *bucket, *chunk))

    def fault_variants(self, b: Any, vids: list[int]) -> None:
        """Bring the phrasings `vids` into `b`."""
        missing = [v for v in vids if v not in b.keys]
        if not missing:
            return
        marks = ",".join("?" * len(missing))
        for vid, key, packed, signature, lesson in self.conn.execute(
                "SELECT vid, key, packed, signature, lesson FROM variant WHERE rule=? AND vid IN "
                f"({marks})", (self.rule, *missing)):
            b.keys[vid], b.anchors[vid], b.owner[vid] = key, packed, lesson
            b.signature[vid] = signature
            b.strict[vid] = tuple(w[1:] for w in packed.split() if w[0] == "!")

    def variant_count(self, cluster: int) -> int | None:
        if cluster >= self.first_cluster:
            return None
        return self.conn.execute("SELECT count(*) FROM variant WHERE rule=? AND lesson=?",
                                 (self.rule, cluster)).fetchone()[0]

    def text_of(self, bucket: Any, key: str) -> str | None:
        """The text a phrasing `key` of `bucket` was normalised from, if recorded."""
        row = self.conn.execute("SELECT text FROM variant WHERE rule=? AND role=? AND kind=? "
                                "AND key=? AND text IS NOT NULL LIMIT 1",
                                (self.rule, *bucket, key)).fetchone()
        return None if row is None else row[0]

    def take_vid(self) -> int:
        self.next_vid += 1
        return self.next_vid - 1

    def lesson(self, cluster: int) -> Evidence | None:
        """The evidence the database holds for `cluster`, or None."""
        if cluster >= self.first_cluster:
            return None
        row = self.conn.execute("SELECT row FROM lesson WHERE rule=? AND id=?",
                                (self.rule, cluster)).fetchone()
        return None if row is None else Evidence.from_row(orjson.loads(row[0]))

    def close(self) -> None:
        self.conn.close()
