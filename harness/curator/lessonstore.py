"""The lessons of earlier passes as a pass reads them from the curator database (`lessondb`
opens and writes it), only as its queries need them: the cron figure rests on it."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson

from harness.curator.record import PROMOTABLE, RecordRead

TextOf = Callable[[Any, str], str | None]  # (bucket, key) -> the text normalised to `key`


def rule(similarity: float) -> str:
    """The match rule the rows were clustered by."""
    return f"s{similarity:g}"


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

    def __init__(self, rule_name: str, conn: sqlite3.Connection | None = None,
                 meta: dict[str, Any] | None = None) -> None:
        self.rule, self.conn, meta = rule_name, conn, meta or {}
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
        if key in b.exact:
            return
        new = [w for w in {*key.split(), signature} if w and w not in b.asked]
        if not new:
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
        if not self.first_vid:
            return []
        return [tuple(r) for r in self._rows("SELECT DISTINCT role, kind FROM variant WHERE "
                                             "rule=?")]

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
