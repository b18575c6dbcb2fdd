"""Phase one of a curator run: read everything and decide everything, changing nothing.

The plan reads the candidate record and raw.md (`scan`), clusters what they hand
over into MEMORY.md (`book.MemoryBook`) and the promotion evidence
(`clusters.PromotionTracker`), compacts, and stages the new candidate lines and
the promotions under `<state>/curator/`. What it returns is the journal that
`commit.apply_journal` carries out (see `curate`'s docstring).
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Iterable
from dataclasses import replace

from harness.curator import lessondb, verdicts
from harness.curator import record as candidates
from harness.curator.archived import ArchiveSearch
from harness.curator.book import MemoryBook
from harness.curator.candidate import LESSON_KINDS, PROMOTABLE, mission_token
from harness.curator.check import check_model_result
from harness.curator.clusters import PromotionTracker
from harness.curator.commit import (
    FORMAT_VERSION,
    CuratorPaths,
    archive_sizes,
    cursor_start,
    read_json,
    read_text,
    stage_promotions,
)
from harness.curator.diffs import DIFF_PREVIEW, append_diff, drop_head_diff, rewrite_diff
from harness.curator.judge import Judgments
from harness.curator.promotion import IdentityIndex, Promotion, plan_promotions
from harness.curator.scan import HEAD_BYTES, RawPass, Scan, ScanJob, checked_keys, months_before
from harness.curator.settings import CuratorReport, CuratorSettings, Refine
from harness.curator.text import normalize
from harness.state import memory
from harness.state.store import sha256


class Planner:
    """Phase one: read everything and decide everything; stage, but change nothing."""

    def __init__(self, paths: CuratorPaths, mission: str, settings: CuratorSettings,
                 today: str, report: CuratorReport, refine: Refine | None = None, *,
                 judge: Judgments | None = None) -> None:
        self.paths, self.settings, self.refine = paths, settings, refine
        self.judge = judge or Judgments()
        self.mission = mission_token(mission)
        self.today, self.dry_run = today, report.dry_run
        self.batch = secrets.token_hex(6)
        self.report = report  # filled in as the plan goes
        self.preview: list[str] = []  # the first staged candidate lines, for the diff
        self.n_staged = 0
        self.tracker: PromotionTracker | None = None
        self._identity_texts: dict[str, dict[str, str]] = {}  # see `text_of`
        self.recorded: verdicts.Recorded | None = None
        self.record: candidates.RecordRead | None = None

    def plan(self) -> dict | None:
        """The journal of what to change, or None when nothing would (or in a dry run)."""
        paths = self.paths
        cursor = read_json(paths.cursor) if paths.cursor.exists() else {}
        start = self._checked_start(cursor)
        # read again from the start: what the last run counted is known by its keys instead
        counted = cursor.get("counted") if start == 0 and cursor.get("processed") else None
        old = {name: read_text(paths.state / name) for name in ("summary.md", "MEMORY.md")}
        scan, book = self._read(start, cursor.get("last_month", "unparsed"), old["MEMORY.md"],
                                cursor.get("next_ids"), checked_keys(counted))
        compacted = book.compact()
        promotions = self._promotions()
        self.report.promoted = promotions
        self.report.memory_archived = len(compacted.archived)
        files = {"summary.md": compacted.summary, "MEMORY.md": compacted.memory}
        self.report.planned = dict(files)
        if self.refine is not None and not self.dry_run:
            files, promotions = self._refined(files, promotions)
            self.report.promoted = promotions
        changed = {name: text for name, text in files.items() if text != old[name]}
        months = months_before(scan.months, scan.cut)
        self._diffs(scan, months, changed, old, compacted.archived, promotions)
        if self.dry_run or not (changed or self.n_staged or promotions or compacted.archived
                                or self.judge.fresh
                                or scan.cut or scan.end != start
                                or cursor.get("next_ids") != compacted.next_ids):
            self._discard_staged()
            return None
        stage_promotions(self.paths.staged_promotions, promotions)
        last_month = months[-1][2] if months else cursor.get("last_month", "unparsed")
        return {
            "version": FORMAT_VERSION, "batch": self.batch,
            "files": changed, "candidates": self.n_staged, "promotions": len(promotions),
            "judgments": verdicts.rows(self.judge.fresh, memory.utc_now(), self.mission,
                                       self.text_of),
            "identity_sizes": self.identity_sizes, "memory_archive": compacted.archived,
            "archive_sizes": archive_sizes(paths.archive, [m for _, _, m in months],
                                           bool(compacted.archived)),
            "raw": {"end": scan.end, "cut": scan.cut, "inode": scan.inode,
                    "head_sha": sha256(scan.head[: min(scan.cut, HEAD_BYTES)]),
                    "months": [[off, month] for off, _, month in months]},
            "cursor": {"version": FORMAT_VERSION, "last_month": last_month,
                       "next_ids": compacted.next_ids, "counted": scan.counted},
        }

    def close(self) -> None:
        """Let go of the lesson database and the answers the plan read from."""
        if self.tracker is not None:
            self.tracker.store.close()
        if self.recorded is not None:
            self.recorded.close()

    def _refined(self, files: dict[str, str], promotions: list[Promotion]
                 ) -> tuple[dict[str, str], list[Promotion]]:
        """The model's files and promotion words if they pass every check, else the rules'."""
        assert self.refine is not None
        answer = self.refine(files["summary.md"], files["MEMORY.md"], promotions)
        if answer is None or isinstance(answer, str):
            self.report.model = "rejected: " + (answer or "the model gave no answer")
            return files, promotions
        problems = check_model_result(
            answer, rules_memory=files["MEMORY.md"], rules_promotions=promotions,
            identity=self.identity_texts, bounds=self.settings.bounds,
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
        start = cursor_start(self.paths, cursor)
        if start is not None:
            return start
        self.report.changes.append("raw.md does not start where the last run left it; "
                                   "reading it from the start")
        return 0

    def _read(self, start: int, month: str, old_memory: str, next_ids: dict | None,
              counted: list[list[str]]) -> tuple[Scan, MemoryBook]:
        """Stream raw.md (see `scan`) into a MemoryBook and the promotion tracker."""
        paths, settings = self.paths, self.settings
        if not self.dry_run:
            paths.own.mkdir(parents=True, exist_ok=True)
        # the database first: the pass reads the candidate record on from where it ends
        self.tracker, digest_read = lessondb.load(
            paths.identity, settings.similarity, write=not self.dry_run, said=self.report.changes)
        self.recorded = verdicts.open_recorded(paths.identity, write=not self.dry_run)
        if self.recorded is not None:
            self.judge.recorded = self.recorded.about
        if self.judge.active():
            self.tracker.clusters.index.judge = self.judge
        job = ScanJob(str(paths.raw), start, settings.raw_keep, month,
                      None if self.dry_run else str(paths.staged_candidates), self.batch,
                      self.mission, str(paths.identity), digest_read,
                      notes_kept=settings.bounds.notes_kept(), counted=counted)
        raw_pass = RawPass(job)
        for c in raw_pass.candidates():
            self.tracker.add(c, cluster=self._cluster_of((c.role, c.kind), c.text))
        self.record = raw_pass.record
        book = MemoryBook(old_memory, settings.bounds, similarity=settings.similarity,
                          topic_similarity=settings.topic_similarity,
                          next_ids=next_ids, clusters=self.tracker.clusters)
        self._learn(raw_pass.entries(), book)
        book.keep_notes((n, memory.Entry(ts, role, feature, "-", text, run))
                        for n, ts, role, feature, text, run in raw_pass.scan.notes)
        scan = raw_pass.scan
        self.report.processed, self.report.unparsed = scan.processed, scan.unparsed
        if scan.recounted:
            self.report.changes.append(f"{scan.recounted} entries of raw.md were counted by an "
                                       "earlier run: read again, not counted again")
        self.report.archived = scan.cut_line
        self.n_staged, self.preview = scan.staged, scan.staged_preview
        return scan, book

    def _cluster_of(self, bucket: tuple[str, str], text: str) -> int:
        """The cluster of `text`; the words a model is shown for it, if it asked."""
        asked = len(self.judge.questions)
        cid = self.tracker.clusters.assign_text(bucket, text)
        if len(self.judge.questions) > asked:
            self.judge.texts[normalize(text).key] = text
        return cid

    def text_of(self, bucket: tuple[str, str] | str, key: str) -> str | None:
        """The text the pass normalised to `key` in `bucket`, or the lesson database's."""
        if isinstance(bucket, str):  # about identity: texts of due lessons and identity lines
            if bucket not in self._identity_texts:
                self._identity_texts[bucket] = verdicts.identity_texts(
                    bucket, self.tracker.due(), self.identity_texts)
            return self._identity_texts[bucket].get(key)
        text = self.tracker.clusters.texts.get((bucket, key))
        if text is None:
            return self.tracker.store.text_of(bucket, key)
        return text

    def _learn(self, entries: Iterable[tuple | None], book: MemoryBook) -> None:
        """Take raw.md's entries (`scan.RawPass.entries`) into MEMORY.md and the tracker."""
        # once per note: no Entry for a lesson, and its day interned (a few hundred in all)
        mission, intern, cluster_of = self.mission, sys.intern, self._cluster_of
        note_lesson, note_candidate = book.note_lesson, self.tracker.note
        for fields in entries:
            if fields is None:  # a plain note: the pass hands the newest over at the end
                book.count_notes(1)
                continue
            ts, role, feature, kind, text, run = fields
            if kind not in LESSON_KINDS:
                book.add(memory.Entry(*fields))
                continue
            cid, day = cluster_of((role, kind), text), intern(ts[:10])
            note_lesson(cid, role, kind, text, day, run or feature)
            if kind in PROMOTABLE:
                note_candidate(cid, role, kind, text, day, ts, mission, feature, run)

    def _discard_staged(self) -> None:
        if not self.dry_run:
            self.paths.staged_candidates.unlink(missing_ok=True)

    def _promotions(self) -> list[Promotion]:
        due = [ev for ev in self.tracker.due() if memory.NAME.fullmatch(ev.role)]
        archive = ArchiveSearch(self.paths.identity, write=not self.dry_run,
                                said=self.report.changes)
        identity = IdentityIndex(self.settings.similarity,
                                 judge=self.judge if self.judge.active() else None,
                                 archive=archive.lines)
        self.identity_sizes: dict[str, int] = {}  # role file sizes the plan was checked on
        self.identity_texts: dict[str, str] = {}
        for role in sorted({ev.role for ev in due}):
            text = self.identity_texts[role] = read_text(self.paths.role_file(role))
            self.identity_sizes[role] = len(text.encode())
            identity.add_text(role, text)
        try:
            promotions = plan_promotions(due, identity, self.today)
        finally:
            archive.close()
        if self.judge.questions:  # some asked while planning them: about due lessons' texts
            self.report.questions = self.judge.shown(
                self.tracker.text_of, {normalize(ev.text).key: ev.text for ev in due},
                identity.line)
        return promotions

    def _diffs(self, scan: Scan, months: list[tuple[int, int, str]], changed: dict[str, str],
               old: dict[str, str], memory_archived: list[str],
               promotions: list[Promotion]) -> None:
        report, paths = self.report, self.paths
        for name, text in changed.items():
            path = paths.state / name
            report.diffs[str(path)] = rewrite_diff(path, old[name], text)
            report.changes.append(f"{'would rewrite' if self.dry_run else 'rewrote'} {path}")
        if self.dry_run:  # only a dry run shows them: their line counts read whole archives
            self._bulk_diffs(scan, months, memory_archived, promotions)

    def _bulk_diffs(self, scan: Scan, months: list[tuple[int, int, str]],
                    memory_archived: list[str], promotions: list[Promotion]) -> None:
        report, paths = self.report, self.paths
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
