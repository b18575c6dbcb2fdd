"""One bucket's phrasings as `matching.LessonIndex` keeps them, and the `Source` that
holds them when they are not all in memory (`lessondb`)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Protocol


class Source(Protocol):
    """Where a bucket's phrasings live when they are not all in memory (`lessondb`): the
    index asks it for what a query needs before the query looks, and keeps the answers."""

    def covers(self, bucket: Any) -> bool: ...
    def fault(self, bucket: Any, b: Bucket, key: str, words: set[str]) -> None: ...
    def fault_variants(self, b: Bucket, vids: list[int]) -> None: ...
    def variant_count(self, cluster: int) -> int | None: ...
    def take_vid(self) -> int: ...


class Bucket:
    """One bucket's phrasings. In memory, variants are list positions; with a `source`,
    the containers are dicts holding the part of the source a run has asked for, variant
    ids are the source's, and `dirty` names the words whose postings changed."""

    __slots__ = ("name", "exact", "keys", "anchors", "strict", "signature", "owner",
                 "postings", "df", "source", "dirty")

    def __init__(self, name: Any = None, source: Source | None = None) -> None:
        self.name = name  # the bucket's key, e.g. (role, kind)
        self.source = source
        self.exact: dict[str, int] = {}  # every phrasing seen -> cluster
        self.keys: Any = [] if source is None else {}  # variant -> normalised text
        # variant -> anchors, strict ones marked "!" (packed)
        self.anchors: Any = [] if source is None else {}
        # variant -> its strict words, one shared tuple per combination (there are few):
        # most shortlisted variants fail on these alone, before their anchors are unpacked
        self.strict: Any = [] if source is None else {}
        # variant -> its signature (`text.Norm`), "" for none: it is filed under it too
        self.signature: Any = [] if source is None else {}
        self.owner: Any = [] if source is None else {}  # variant -> cluster
        # word -> recent variants; signature -> its recent variants as a tuple, and no df:
        # there are about as many signatures as lessons, mostly with one or two phrasings
        # (at 1M entries of bench/curator.py, 6 MiB of the peak less than a list and a df)
        self.postings: defaultdict[str, Any] = defaultdict(list)
        self.df: dict[str, int] = {}  # word -> variants ever indexed under it
        self.dirty: set[str] = set()
