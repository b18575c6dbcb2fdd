"""Phase two of a curator pass: carry out the journal, every step safe to redo after a kill.
The journal is the commit point: nothing visible changes before it, and a run that finds one
carries it out again from the first step. Judge answers and candidate lines (`batch:seq`) go
where a reader skips what it holds; a role file changed since the plan is checked again; the
archive files are cut back to their planned sizes before the appends; raw.md loses its head
under the raw lock, skipped by a redo that finds it rewritten; the cursor comes last.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import orjson

from harness.curator import curatordb, lessondb
from harness.curator import record as candidates
from harness.curator.identity import IdentityIndex
from harness.curator.promotion import Promotion
from harness.errors import UsageError
from harness.state import curatorfiles, memory, reading
from harness.state.store import append_lines, atomic_write, hold_lock, read_head, sha256, write_json

FORMAT_VERSION = 1
STAGED_ROWS = 1000  # promotions per staged line: all in one line peaked 11 MiB higher at 300k


class CuratorPaths:
    """Where a curator run reads and writes."""

    def __init__(self, state: Path, identity: Path) -> None:
        self.state, self.identity = state, identity
        self.raw, self.archive = memory.raw_path(state), state / "archive"
        self.own = state / "curator"  # the run's journal, cursor and staged files
        self.journal, self.cursor = self.own / "journal.json", self.own / "cursor.json"
        self.staged_candidates = self.own / "candidates.pending"
        self.staged_promotions = self.own / "promotions.pending"
        self.record = identity / candidates.RECORD
        self.identity_lock = identity / ".identity.lock"

    def role_file(self, role: str) -> Path:
        return self.identity / f"{role}.md"


def cursor_start(paths: CuratorPaths, cursor: dict) -> tuple[int | None, list[list[str]]]:
    """Where the last run left raw.md (0: none did), or None, with the `note_keys` it counted,
    when raw.md no longer starts with the bytes the cursor hashed."""
    start = int(cursor.get("processed", 0))
    head = read_head(paths.raw, start) or b""
    if not start or (len(head) == start and sha256(head) == cursor.get("head_sha")):
        return start, []
    counted = cursor.get("counted")  # a hand-edited cursor's keys not of that shape: none
    pairs = counted if isinstance(counted, list) else []
    return None, [pair for pair in pairs if isinstance(pair, list) and len(pair) == 2
                  and all(isinstance(key, str) for key in pair)]


def apply_journal(paths: CuratorPaths, journal: dict, similarity: float,
                  digest: dict[str, Any]) -> set[int]:
    """Carry out `journal`; the indexes of staged promotions identity turned out to hold.
    `digest`: `lessondb.append`'s arguments (a redo's has only `said`: the database stays)."""
    said = digest["said"]
    for name, text in journal["files"].items():
        atomic_write(paths.state / name, text)
    if journal.get("judgments"):  # before the candidates: whatever clusters them reads these
        curatordb.append_answers(paths.identity, journal["judgments"], said)
    # staged files gone are a person's doing: carry out the rest rather than wedge every run
    gone = [path for path, count in ((paths.staged_candidates, journal["candidates"]),
                                     (paths.staged_promotions, journal["promotions"]))
            if count and not path.exists()]
    if gone:
        said.append(f"the interrupted run's staged {' and '.join(p.name for p in gone)} were "
                    f"gone from {paths.own}: carried out without them")
    if journal["candidates"] and paths.staged_candidates not in gone:
        lessondb.append(paths.identity, paths.staged_candidates, **digest)
    skipped = (_promote(paths, journal["identity_sizes"], similarity)
               if journal["promotions"] and paths.staged_promotions not in gone else set())
    raw = journal["raw"]
    if not raw["cut"] or _raw_untouched(paths, raw):  # else a redo finds raw.md cut: both done
        _archive(paths, journal)
        _rewrite_raw(paths, raw)
    processed = raw["end"] - raw["cut"]
    write_json(paths.cursor, {**journal["cursor"], "processed": processed,
                              "head_sha": sha256(read_head(paths.raw, processed) or b"")})
    for done in (paths.journal, paths.staged_candidates, paths.staged_promotions):
        done.unlink(missing_ok=True)
    return skipped


def read_json(path: Path) -> dict:
    """A curator state file, checked for its format version; {} when there is none."""
    data = reading.read_json_object(path)
    if data is not None and data.get("version") != FORMAT_VERSION:
        raise UsageError(f"{path}: unknown format; expected version {FORMAT_VERSION}")
    return curatorfiles.check(path, data) if data else {}


def read_text(path: Path) -> str:
    """The file's text, or '' when it does not exist (a damaged one: `reading.read_text`)."""
    with suppress(FileNotFoundError):
        return reading.read_text(path)
    return ""


def _promote(paths: CuratorPaths, sizes: dict[str, int], similarity: float) -> set[int]:
    """Append the staged promotions, a write per role file; one changed since the plan (another
    mission's curator, this step half done) is checked again for what it holds."""
    skipped: set[int] = set()
    added: dict[str, list[str]] = {}
    recheck = IdentityIndex(similarity)  # the role files changed since the plan
    with hold_lock(paths.identity_lock):
        with open(paths.staged_promotions, encoding="utf-8") as staged:
            for n, (role, _, text, line) in enumerate(_staged_rows(staged)):
                if role not in added:
                    current = read_text(paths.role_file(role))
                    if len(current.encode()) != sizes.get(role):
                        recheck.add_text(role, current)
                    # a newline to end the file's last line: append_lines writes it
                    added[role] = [opening(current, role).lstrip("\n")]
                if recheck.knows(role, text):
                    skipped.add(n)
                else:
                    added[role].append(line + "\n")
        for role, lines in added.items():
            append_lines(paths.role_file(role), ["".join(lines).encode()], sync=True)
    return skipped


def opening(current: str, role: str) -> str:
    """What goes before the first line appended to a role file holding `current`."""
    if current.endswith("\n"):
        return ""
    return "\n" if current else f"# {role}\n\n"


def stage_promotions(path: Path, promotions: list[Promotion]) -> None:
    """Write the plan's promotions to `path`, STAGED_ROWS rows a line, for `_promote`."""
    if promotions:
        with open(path, "wb") as out:
            for first in range(0, len(promotions), STAGED_ROWS):
                out.write(orjson.dumps([(p.role, p.kind, p.text, p.line)
                                        for p in promotions[first:first + STAGED_ROWS]]) + b"\n")
            out.flush()
            os.fsync(out.fileno())


def _staged_rows(staged: Iterable[str]) -> Iterator[list[str]]:
    # a line of one row is how an earlier version staged them (a run crashed before an upgrade)
    for chunk in staged:
        rows = orjson.loads(chunk)
        yield from [rows] if rows and isinstance(rows[0], str) else rows


def archive_sizes(archive: Path, months: list[str], memory_lines: bool) -> dict[str, int | None]:
    """The sizes of the archive files a run will append to (None: not there yet)."""
    names = {f"{month}.md" for month in months} | ({"memory-history.md"} if memory_lines else set())
    return {name: (archive / name).stat().st_size if (archive / name).exists() else None
            for name in sorted(names)}


def _archive(paths: CuratorPaths, journal: dict) -> None:
    raw = journal["raw"]
    for name, size in journal["archive_sizes"].items():
        with suppress(FileNotFoundError):
            os.truncate(paths.archive / name, size or 0)  # None: made since the plan
    if journal["archive_sizes"]:  # the files appended to below, if any
        paths.archive.mkdir(parents=True, exist_ok=True)
    # raw.md's bytes before the cut, by the month changes in them (none at cut 0)
    stops = [offset for offset, _ in raw["months"][1:]] + [raw["cut"]]
    for (offset, month), stop in zip(raw["months"], stops, strict=False):
        append_lines(paths.archive / f"{month}.md", read_span(paths.raw, offset, stop), sync=True)
    if journal["memory_archive"]:
        append_lines(paths.archive / "memory-history.md",
                     ["".join(line + "\n" for line in journal["memory_archive"]).encode()],
                     sync=True)


def read_span(path: Path, start: int, stop: int) -> Iterator[bytes]:
    with open(path, "rb") as f:
        f.seek(start)
        while chunk := f.read(min(candidates.CHUNK, stop - f.tell())):
            yield chunk


def _raw_untouched(paths: CuratorPaths, raw: dict) -> bool:
    with suppress(FileNotFoundError), open(paths.raw, "rb") as f:
        return (os.fstat(f.fileno()).st_ino == raw["inode"]
                and sha256(f.read(min(raw["cut"], candidates.HEAD_BYTES))) == raw["head_sha"])
    return False


def _rewrite_raw(paths: CuratorPaths, raw: dict) -> None:
    if not raw["cut"]:
        return
    with hold_lock(memory.raw_lock(paths.state)):
        if not _raw_untouched(paths, raw):
            return
        stat = paths.raw.stat()
        atomic_write(paths.raw, b"".join(read_span(paths.raw, raw["cut"], stat.st_size)))
        os.chmod(paths.raw, stat.st_mode & 0o777)
