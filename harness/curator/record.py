"""The candidate record beside the identity files, and its digest.

`<identity>/.candidates.log` is append-only: one line per TRICK, FAIL or FORGOT
note any mission's curator has seen (`promotion.Candidate.line`), each append a
single write under `<identity>/.candidates.lock`. Lines carry `batch:seq`; a
batch appended twice (a crashed run redone) is counted once, because a reader
skips every seq at or below the highest it has seen for that batch.

`<identity>/.candidates.digest` saves re-reading the whole record on every run:
a header (format, similarity threshold, the record offset it covers with a hash
of the 4 KiB before it, the highest seq per batch) and the record clustered
into lessons: each lesson's evidence, then the phrasings indexed for it, as
JSON lines of up to DIGEST_ROWS rows each (`["E", row, ...]`, `["P", row, ...]`).
A run loads it and reads only the record after that offset. It is a cache: missing,
stale or doubtful (another threshold, a record that shrank or changed), the
record is read from the start.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import orjson

from harness.curator.promotion import Candidate, Evidence, PromotionTracker, parse_candidate
from harness.state.store import hold_lock, sha256

RECORD = ".candidates.log"
DIGEST = ".candidates.digest"
LOCK = ".candidates.lock"
DIGEST_VERSION = 3  # 3: a TRICK's worker is its feature (echoes), so v2's evidence is re-read
DIGEST_ROWS = 1000  # rows per digest line: one JSON call each, not one per row
TAIL = 4096
CHUNK = 1 << 20


@dataclass
class RecordRead:
    """How far a run read the record, and the batches it saw (for dedupe and the digest)."""

    end: int = 0
    tail_sha: str = ""
    batches: dict[str, int] = field(default_factory=dict)


def load_digest(identity: Path, similarity: float) -> tuple[PromotionTracker, RecordRead]:
    """The lessons the digest holds and how far it read the record; none if it does not hold.
    `read_record` gives what follows."""
    return _load_digest(identity, similarity) or (PromotionTracker(similarity), RecordRead())


def read_record(identity: Path, read: RecordRead) -> Iterator[Candidate]:
    """The record's candidates after `read.end`, each batch's lines once; when they are all
    taken, `read` covers them (end, tail hash, highest seq per batch)."""
    try:
        f = open(identity / RECORD, "rb")
    except FileNotFoundError:
        return
    with f:
        f.seek(read.end)
        offset = read.end
        for raw in f:
            if not raw.endswith(b"\n"):
                break  # an append in progress
            offset += len(raw)
            parsed = parse_candidate(raw.decode("utf-8", "replace"))
            if parsed is None:
                continue
            batch, seq, candidate = parsed
            if seq <= read.batches.get(batch, -1):
                continue
            read.batches[batch] = seq
            yield candidate
        read.end = offset
        read.tail_sha = _tail_sha(f, offset)


def _load_digest(identity: Path, similarity: float) -> tuple[PromotionTracker, RecordRead] | None:
    try:
        f = open(identity / DIGEST, "rb")
    except FileNotFoundError:
        return None
    tracker = PromotionTracker(similarity)
    clusters = tracker.clusters
    with f:
        try:
            head = orjson.loads(f.readline())
            if (head.get("version") != DIGEST_VERSION or head.get("similarity") != similarity
                    or not _covers(identity / RECORD, head["end"], head["tail_sha"])):
                return None
            local: list[int] = []
            for line in f:
                tag, *rows = orjson.loads(line)
                if tag == "E":
                    for row in rows:
                        cid = clusters.new_id()
                        tracker.put(cid, Evidence.from_row(row))
                        local.append(cid)
                else:
                    add = clusters.index.add_packed
                    for n, key, packed in rows:
                        ev = tracker.lessons[local[n]]
                        add((ev.role, ev.kind), key, packed, local[n])
            read = RecordRead(head["end"], head["tail_sha"], dict(head["batches"]))
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            return None  # a damaged cache: the record itself will do
    return tracker, read


def _tail_sha(f: BinaryIO, end: int) -> str:
    """The hash of the TAIL bytes before `end`: how a later run tells the record it read
    up to `end` has not changed."""
    f.seek(max(0, end - TAIL))
    return sha256(f.read(end - max(0, end - TAIL)))


def _covers(record: Path, end: int, tail_sha: str) -> bool:
    try:
        with open(record, "rb") as f:
            if os.fstat(f.fileno()).st_size < end:
                return False
            return _tail_sha(f, end) == tail_sha
    except FileNotFoundError:
        return end == 0


def append(identity: Path, staged: Path, *, tracker: PromotionTracker | None = None,
           read: RecordRead | None = None, batch: str = "", count: int = 0) -> None:
    """Append the staged candidate lines to the record, as one locked write.

    Given the `tracker` that planned this `batch` of `count` lines and how far it
    had `read` the record, the digest is written under the same lock, covering
    this batch by offset too when nobody appended in between.
    """
    identity.mkdir(parents=True, exist_ok=True)
    record = identity / RECORD
    with open(staged, "rb") as f, hold_lock(identity / LOCK):
        before = record.stat().st_size if record.exists() else 0
        append_text(record, iter(lambda: f.read(CHUNK), b""))
        if tracker is None or read is None:
            return
        batches = dict(read.batches)
        batches[batch] = count - 1
        end, tail_sha = read.end, read.tail_sha
        if before == read.end:  # only this batch since: the digest covers it by offset
            end = record.stat().st_size
            with open(record, "rb") as r:
                tail_sha = _tail_sha(r, end)
        _write_digest(identity, tracker, RecordRead(end, tail_sha, batches))


def _write_digest(identity: Path, tracker: PromotionTracker, read: RecordRead) -> None:
    head = {"version": DIGEST_VERSION, "similarity": tracker.clusters.index.threshold,
            "end": read.end, "tail_sha": read.tail_sha, "batches": read.batches}
    local: dict[int, int] = {}  # cluster id -> its number in the digest
    fd, tmp = tempfile.mkstemp(dir=identity, prefix=f".{DIGEST}.", suffix=".tmp")
    try:
        # orjson: a big digest is a few hundred thousand rows, 2-3 s with the json module
        with os.fdopen(fd, "wb") as out:
            out.write(orjson.dumps(head) + b"\n")
            _write_rows(out, "E", _evidence_rows(tracker, local))
            _write_rows(out, "P", _phrasing_rows(tracker, local))
        # no fsync: a digest torn by a power cut fails to load and is rebuilt
        os.replace(tmp, identity / DIGEST)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _evidence_rows(tracker: PromotionTracker, local: dict[int, int]) -> Iterator[list]:
    """Each lesson's evidence row, numbering its cluster in `local` as it goes."""
    for cid, ev in enumerate(tracker.lessons):
        if ev is not None:
            local[cid] = len(local)
            yield ev.row()


def _phrasing_rows(tracker: PromotionTracker, local: dict[int, int]) -> Iterator[tuple]:
    """(lesson number, key, packed anchors) of each phrasing indexed for a lesson."""
    index = tracker.clusters.index
    for bucket in index.buckets():
        for cid, key, packed in index.phrasings(bucket):
            if cid in local:
                yield local[cid], key, packed


def _write_rows(out: BinaryIO, tag: str, rows: Iterable) -> None:
    """`rows` as JSON lines of up to DIGEST_ROWS each, `tag` first on each line."""
    line: list = [tag]
    for row in rows:
        line.append(row)
        if len(line) > DIGEST_ROWS:
            out.write(orjson.dumps(line) + b"\n")
            line = [tag]
    if len(line) > 1:
        out.write(orjson.dumps(line) + b"\n")


def append_text(path: Path, chunks: Iterable[bytes]) -> None:
    """Append, first ending a line a crashed writer left unfinished; the caller holds a lock."""
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            os.write(fd, b"\n")
        for chunk in chunks:
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
