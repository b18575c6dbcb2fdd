"""The curator run: the I/O edge around the pure rules in `curator` and `promotion`.

A run takes `<state>/locks/curator.lock` without waiting (a second curator gets
BusyError, exit 3) and works in two phases.

Plan: no raw lock, no visible write. Load the candidate record (`candidates`:
its digest, then the lines after it), then stream raw.md once up to its last
complete line (`end`); `rawscan` reads both, in a second process for a big
backlog, and the curator clusters what it hands over. Lines before the cursor's
`processed` offset were learned by an earlier run and are only counted; newer
lines feed MEMORY.md and the candidate record. The cut is the offset of the
`raw_keep`-th last entry; everything before it goes to the archive. The long
work happens here, while workers keep appending: their lines land after `end`
and wait for the next run. The new candidate lines and the promotions are
staged in `<state>/curator/*.pending`.

Commit: the plan is written as `<state>/curator/journal.json` (atomically);
that write is the commit point. Before it nothing visible has changed (a run
that finds no journal ignores and replaces staged files). After it, each step
is carried out (`curate_commit`), marked done in the journal, and redone by
the next run if the journal is still there; each step is safe to redo:

1. summary.md and MEMORY.md: atomic writes of texts held in the journal.
2. candidates: the staged lines are appended to `<identity>/.candidates.log`
   under its lock. Lines carry `batch:seq` and a reader skips a seq it has
   seen, so a redone append counts nothing twice.
3. identity: under `<identity>/.identity.lock`, the staged promotions are
   appended; a role file that changed since the plan (a half-done first
   attempt, another mission's curator) is checked again, so no lesson goes in
   twice, in any words.
4. archive: the sizes of the target files are recorded in the journal first; a
   redo truncates back to them, then appends raw.md's bytes before the cut to
   `archive/YYYY-MM.md` (by entry time; a line that does not parse goes with
   the entry before it, or to `archive/unparsed.md` when none came before) and
   the lines that left MEMORY.md to `archive/memory-history.md`.
5. raw.md: under the raw lock, held only for this short copy, raw.md is
   replaced by its bytes from the cut on (the kept entries plus whatever was
   appended meanwhile). A redo sees a new inode or head and skips it.
6. cursor: `curator/cursor.json` gets the new `processed` offset (end - cut)
   and a hash of those bytes; then the journal goes.

So after any run, or any crash followed by a run, archive plus raw.md hold
every line ever appended exactly once, and no note is counted twice. A dry run
plans, fills the diffs and writes nothing.
"""

from __future__ import annotations

import gc
import os
import secrets
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import orjson

from harness.curator import record as candidates
from harness.curator.book import LESSON_KINDS, Bounds, MemoryBook, ModelResult, check_model_result
from harness.curator.commit import (
    FORMAT_VERSION,
    HEAD_BYTES,
    CuratorPaths,
    apply_journal,
    archive_sizes,
    read_head,
    read_json,
    read_text,
    write_journal,
)
from harness.curator.diffs import DIFF_PREVIEW, append_diff, drop_head_diff, rewrite_diff
from harness.curator.matching import Norm, normalize
from harness.curator.promotion import (
    PROMOTABLE,
    Candidate,
    IdentityIndex,
    Promotion,
    PromotionTracker,
    mission_name,
    plan_promotions,
)
from harness.curator.scan import RawReader, Record, Scan, ScanJob, use_process
from harness.errors import UsageError
from harness.state import memory
from harness.state.store import hold_lock, lock_path, sha256


@dataclass
class CuratorSettings:
    """Curator knobs. `similarity` is the rapidfuzz score (0-100) at which two notes are
    one lesson: 75 merges the paraphrases of the labelled corpus and keeps every near miss
    apart (70 merges near misses, 80 loses paraphrases; tests/test_curate.py measures it).
    `topic_similarity` decides when a decision without a `topic:` prefix replaces an
    earlier one."""

    similarity: float = 75.0
    raw_keep: int = 10
    summary_max_lines: int = 40
    summary_max_tokens: int = 800
    memory_max_lines: int = 200
    topic_similarity: float = 70.0
    reader: str = "auto"  # raw.md's pass: "inline", "process", or "auto" (rawscan.use_process)

    def bounds(self) -> Bounds:
        return Bounds(self.summary_max_lines, self.summary_max_tokens, self.memory_max_lines)


# A line appended (or, in a dry run, to be appended) to identity/<role>.md: role, kind,
# text, the line itself and the evidence behind it.
PromotedLine = Promotion


@dataclass
class CuratorReport:
    """What a curator run did, or in a dry run would do."""

    processed: int = 0  # new raw.md lines read
    archived: int = 0  # raw.md lines moved to the archive
    unparsed: int = 0  # new lines that did not parse (moved like any other)
    promoted: list[PromotedLine] = field(default_factory=list)
    memory_archived: int = 0  # MEMORY.md lines moved to the archive
    diffs: dict[str, str] = field(default_factory=dict)  # path -> unified diff
    changes: list[str] = field(default_factory=list)
    dry_run: bool = False
    resumed: bool = False  # an interrupted run was finished first
    model: str = ""  # with a model: "accepted", or why its answer was rejected

    def describe(self) -> str:
        """A few human lines on what changed."""
        verb = "would " if self.dry_run else ""
        lines = [f"curator: {self.processed} new lines, {self.unparsed} unparsed; "
                 f"{verb}archive {self.archived} raw lines and {self.memory_archived} "
                 f"MEMORY.md lines; {verb}promote {len(self.promoted)}"]
        if self.resumed:
            lines.append("finished an interrupted curator run first")
        if self.model:
            lines.append(f"model's rewrite: {self.model}")
        lines += self.changes
        shown = self.promoted[:PROMOTIONS_SHOWN]
        lines += [f"{verb}promote to identity/{p.role}.md: {p.kind}: {p.text}" for p in shown]
        if len(self.promoted) > len(shown):
            lines.append(f"... and {len(self.promoted) - len(shown)} more promotions")
        return "\n".join(lines)


PROMOTIONS_SHOWN = 50  # a first run over a long history may promote thousands
STAGED_ROWS = 1000  # staged promotions per line: a JSON call per line, not per promotion


Refine = Callable[[str, str, list[Promotion]], ModelResult | None]


def curate(state: Path, identity_dir: Path, mission: str, settings: CuratorSettings, *,
           dry_run: bool = False, now: str | None = None,
           refine: Refine | None = None) -> CuratorReport:
    """Run the curator over one state directory (see the module docstring).

    `refine`, when given, is shown the rules' summary.md, MEMORY.md and promotions and may
    answer with a rewritten summary.md and MEMORY.md and new words for the promotions; the
    answer stands only if it passes `curator.check_model_result`, else the rules' texts are
    written (report.model says why).
    """
    paths = CuratorPaths(Path(state), Path(identity_dir))
    today = (now or memory.utc_now())[:10]
    with hold_lock(lock_path(paths.state, "curator"), wait=False, what="the curator"), \
            _no_cyclic_gc():
        resumed = paths.journal.exists()
        if resumed:
            if dry_run:
                raise UsageError("an interrupted curator run is pending; run the curator "
                                 "without --dry-run to finish it first")
            apply_journal(paths, read_json(paths.journal), settings.similarity)
        planner = _Planner(paths, mission, settings, today, dry_run, refine)
        journal = planner.plan()
        report = planner.report
        report.resumed = resumed
        if journal is not None:
            write_journal(paths, journal)
            skipped = apply_journal(paths, journal, settings.similarity, {
                "tracker": planner.tracker, "read": planner.record, "batch": planner.batch,
                "count": planner.n_staged})
            report.promoted = [p for n, p in enumerate(report.promoted) if n not in skipped]
        # freed while the cycle collector is still off: its first pass after would walk them
        del planner, journal
        return report


@contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    # A big run builds millions of small objects and no cycles; the cycle collector would
    # walk them all again and again for nothing. Reference counting still frees memory.
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class _Planner:
    """Phase one: read everything and decide everything; stage, but change nothing."""

    def __init__(self, paths: CuratorPaths, mission: str, settings: CuratorSettings,
                 today: str, dry_run: bool, refine: Refine | None = None) -> None:
        self.paths, self.settings, self.refine = paths, settings, refine
        self.mission = mission_name(mission)
        self.today, self.dry_run = today, dry_run
        self.batch = secrets.token_hex(6)
        self.report = CuratorReport(dry_run=dry_run)
        self.preview: list[str] = []  # the first staged candidate lines, for the diff
        self.n_staged = 0
        self.tracker: PromotionTracker | None = None
        self.record: candidates.RecordRead | None = None
        self._text_clusters: list[int] = []  # the pass's text number -> cluster

    def plan(self) -> dict | None:
        """The journal of what to change, or None when nothing would (or in a dry run)."""
        paths = self.paths
        cursor = read_json(paths.cursor) if paths.cursor.exists() else {}
        start = self._checked_start(cursor)
        old = {name: read_text(paths.state / name) for name in ("summary.md", "MEMORY.md")}
        scan, book = self._read(start, cursor.get("last_month", "unparsed"), old["MEMORY.md"],
                                cursor.get("next_ids"))
        compacted = book.compact()
        promotions = self._promotions()
        self.report.promoted = promotions
        self.report.memory_archived = len(compacted.archived)
        files = {"summary.md": compacted.summary, "MEMORY.md": compacted.memory}
        if self.refine is not None and not self.dry_run:
            files, promotions = self._refined(files, promotions)
            self.report.promoted = promotions
        changed = {name: text for name, text in files.items() if text != old[name]}
        months = _months_before(scan.months, scan.cut)
        self._diffs(scan, months, changed, old, compacted.archived, promotions)
        if self.dry_run or not (changed or self.n_staged or promotions or compacted.archived
                                or scan.cut or scan.end != start
                                or cursor.get("next_ids") != compacted.next_ids):
            self._discard_staged()
            return None
        self._stage_promotions(promotions)
        last_month = months[-1][2] if months else cursor.get("last_month", "unparsed")
        return {
            "version": FORMAT_VERSION, "batch": self.batch,
            "files": changed, "candidates": self.n_staged, "promotions": len(promotions),
            "identity_sizes": self.identity_sizes, "memory_archive": compacted.archived,
            "archive_sizes": archive_sizes(paths.archive, [m for _, _, m in months],
                                           bool(compacted.archived)),
            "raw": {"end": scan.end, "cut": scan.cut, "inode": scan.inode,
                    "head_sha": sha256(scan.head[: min(scan.cut, HEAD_BYTES)]),
                    "months": [[off, month] for off, _, month in months]},
            "cursor": {"version": FORMAT_VERSION, "last_month": last_month,
                       "next_ids": compacted.next_ids},
        }

    def _refined(self, files: dict[str, str], promotions: list[Promotion]
                 ) -> tuple[dict[str, str], list[Promotion]]:
        """The model's files and promotion words if they pass every check, else the rules'."""
        assert self.refine is not None
        answer = self.refine(files["summary.md"], files["MEMORY.md"], promotions)
        if answer is None:
            self.report.model = "rejected: the model gave no answer"
            return files, promotions
        problems = check_model_result(
            answer, rules_memory=files["MEMORY.md"], rules_promotions=promotions,
            identity=self.identity_texts, bounds=self.settings.bounds(),
            similarity=self.settings.similarity)
        if problems:
            self.report.model = "rejected: " + "; ".join(problems[:5])
            return files, promotions
        self.report.model = "accepted"
        if answer.promotions is not None:
            words = {p.number: p.words for p in answer.promotions}
            promotions = [replace(p, text=words[n]) for n, p in enumerate(promotions, 1)]
        return {"summary.md": answer.summary, "MEMORY.md": answer.memory}, promotions

    def _checked_start(self, cursor: dict) -> int:
        """The cursor's offset if raw.md still starts with what it hashed, else 0."""
        start = int(cursor.get("processed", 0))
        if not start:
            return 0
        head = read_head(self.paths.raw, start)
        if len(head) == start and sha256(head) == cursor.get("head_sha"):
            return start
        self.report.changes.append("raw.md does not start where the last run left it; "
                                   "reading it from the start")
        return 0

    def _read(self, start: int, month: str, old_memory: str, next_ids: dict | None
              ) -> tuple[Scan, MemoryBook]:
        """Stream raw.md (see `rawscan`) into a MemoryBook and the promotion tracker."""
        paths, settings = self.paths, self.settings
        if not self.dry_run:
            paths.own.mkdir(parents=True, exist_ok=True)
        # the digest first: the reader takes the candidate record from where it ends
        self.tracker, digest_read = candidates.load_digest(paths.identity, settings.similarity)
        job = ScanJob(str(paths.raw), start, settings.raw_keep, month,
                      None if self.dry_run else str(paths.staged_candidates), self.batch,
                      self.mission, str(paths.identity), digest_read.end, digest_read.batches,
                      settings.bounds().notes_kept())
        process = settings.reader == "process" or (
            settings.reader == "auto" and use_process(job))
        with RawReader(job, process=process) as reader:
            add, cluster_of = self.tracker.add, self._cluster_of
            for batch in reader.candidates():
                for *fields, ref in batch:
                    c = Candidate(*fields)
                    add(c, cluster=cluster_of((c.role, c.kind), c.text, ref))
            self.record = reader.record
            book = MemoryBook(old_memory, settings.bounds(), similarity=settings.similarity,
                              topic_similarity=settings.topic_similarity,
                              next_ids=next_ids, clusters=self.tracker.clusters)
            for batch in reader:
                self._learn(batch, book)
            scan = reader.scan
        assert scan is not None
        book.keep_notes((n, memory.Entry(ts, role, feature, "-", text, run))
                        for n, ts, role, feature, text, run in scan.notes)
        self.report.processed, self.report.unparsed = scan.processed, scan.unparsed
        self.report.archived = scan.cut_line
        self.n_staged, self.preview = scan.staged, scan.staged_preview
        return scan, book

    def _cluster_of(self, bucket: tuple[str, str], text: str,
                    ref: int | tuple[str, str, str, str] | None) -> int:
        """The cluster of a text the pass handed over with `ref` (see `rawscan.Record`)."""
        if type(ref) is int:
            return self._text_clusters[ref]
        cid = self.tracker.clusters.assign(bucket, Norm(*ref) if ref else normalize(text))
        self._text_clusters.append(cid)
        return cid

    def _learn(self, batch: list[Record | int], book: MemoryBook) -> None:
        # Runs once per note of a big log: no Entry or Candidate is built for a lesson, and
        # role, feature and kind come interned (rawscan.parse_fields; marshal keeps that).
        tracker, mission, intern = self.tracker, self.mission, sys.intern
        known, cluster_of = self._text_clusters, self._cluster_of
        note_lesson, note_candidate = book.note_lesson, tracker.note
        for record in batch:
            if type(record) is int:  # plain notes: the pass hands the newest over at the end
                book.count_notes(record)
                continue
            ts, role, feature, kind, text, run, ref = record
            if kind not in LESSON_KINDS:
                book.add(memory.Entry(ts, role, feature, kind, text, run))
                continue
            # most notes repeat a text the pass has numbered: one list lookup
            cid = known[ref] if type(ref) is int else cluster_of((role, kind), text, ref)
            day = intern(ts[:10])
            note_lesson(cid, role, kind, text, day, run or feature)
            if kind in PROMOTABLE:
                note_candidate(cid, role, kind, text, day, ts, mission, feature, run)

    def _discard_staged(self) -> None:
        if not self.dry_run:
            self.paths.staged_candidates.unlink(missing_ok=True)

    def _promotions(self) -> list[Promotion]:
        due = [ev for ev in self.tracker.due() if memory.NAME.match(ev.role)]
        identity = IdentityIndex(self.settings.similarity)
        self.identity_sizes: dict[str, int] = {}  # role file sizes the plan was checked on
        self.identity_texts: dict[str, str] = {}
        for role in sorted({ev.role for ev in due}):
            text = self.identity_texts[role] = read_text(self.paths.role_file(role))
            self.identity_sizes[role] = len(text.encode())
            identity.add_text(role, text)
        return plan_promotions(due, identity, self.today)

    def _stage_promotions(self, promotions: list[Promotion]) -> None:
        if not promotions:
            return
        with open(self.paths.staged_promotions, "wb") as out:
            for first in range(0, len(promotions), STAGED_ROWS):
                rows = [(p.role, p.kind, p.text, p.line)
                        for p in promotions[first:first + STAGED_ROWS]]
                out.write(orjson.dumps(rows) + b"\n")
            out.flush()
            os.fsync(out.fileno())

    def _diffs(self, scan: Scan, months: list[tuple[int, int, str]], changed: dict[str, str],
               old: dict[str, str], memory_archived: list[str],
               promotions: list[Promotion]) -> None:
        report, paths = self.report, self.paths
        for name, text in changed.items():
            path = paths.state / name
            report.diffs[str(path)] = rewrite_diff(path, old[name], text)
            report.changes.append(f"{'would rewrite' if self.dry_run else 'rewrote'} {path}")
        if scan.cut_line:
            report.diffs[str(paths.raw)] = drop_head_diff(
                paths.raw, scan.preview[: scan.cut_line], scan.cut_line)
            shown: dict[str, list[str]] = {}
            counts: dict[str, int] = {}
            for i, (_, line, month) in enumerate(months):
                stop = months[i + 1][1] if i + 1 < len(months) else scan.cut_line
                shown.setdefault(month, []).extend(scan.preview[line:stop])
                counts[month] = counts.get(month, 0) + stop - line
            for month, lines in shown.items():
                path = paths.archive / f"{month}.md"
                report.diffs[str(path)] = append_diff(path, lines, counts[month])
        if memory_archived:
            path = paths.archive / "memory-history.md"
            report.diffs[str(path)] = append_diff(
                path, [line + "\n" for line in memory_archived], len(memory_archived))
        if self.n_staged:
            report.diffs[str(paths.record)] = append_diff(paths.record, self.preview,
                                                           self.n_staged)
        shown_lines: dict[str, list[str]] = {}  # only what the diff shows: there may be many
        per_role: dict[str, int] = {}
        for p in promotions:
            shown = shown_lines.setdefault(p.role, [])
            if len(shown) < DIFF_PREVIEW:
                shown.append(p.line + "\n")
            per_role[p.role] = per_role.get(p.role, 0) + 1
        for role, lines in shown_lines.items():
            path = paths.role_file(role)
            report.diffs[str(path)] = append_diff(path, lines, per_role[role])


def _months_before(months: list[tuple[int, int, str]], cut: int) -> list[tuple[int, int, str]]:
    """The month changes that apply to raw.md's bytes before `cut`."""
    out = [m for m in months if m[0] < cut]
    # an entry at offset 0 overrides the month carried over from the last run
    while len(out) > 1 and out[1][0] == out[0][0]:
        out.pop(0)
    return out
