"""Phase one of a curator run: read everything and decide everything, changing nothing.

The plan reads the candidate record and raw.md (`scan`), clusters what they hand
over into MEMORY.md (`book.MemoryBook`) and the promotion evidence
(`clusters.PromotionTracker`), compacts, and stages the new candidate lines and
the promotions under `<state>/curator/`. What it returns is the journal that
`commit.apply_journal` carries out (its steps: `commit`'s docstring).
"""

from __future__ import annotations

import secrets
from collections import Counter
from dataclasses import replace
from pathlib import Path

from harness.curator import lessondb, verdicts
from harness.curator import record as candidates
from harness.curator.book import MemoryBook
from harness.curator.candidate import LESSON_KINDS, PROMOTABLE, mission_token
from harness.curator.check import check_model_result
from harness.curator.clusters import PromotionTracker
from harness.curator.commit import (
    FORMAT_VERSION,
    CuratorPaths,
    archive_sizes,
    cursor_start,
    month_spans,
    read_json,
    read_text,
    stage_promotions,
)
from harness.curator.diffs import DIFF_PREVIEW, bulk_diff, lines_between, rewrite_diff
from harness.curator.judge import Judgments
from harness.curator.promotion import IdentityIndex, Promotion, plan_promotions
from harness.curator.scan import HEAD_BYTES, RawPass, Scan, ScanJob, checked_keys
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
        self.scan: Scan | None = None
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
        for name, text in changed.items():
            path = paths.state / name
            self.report.diffs[str(path)] = rewrite_diff(path, old[name], text)
            self.report.changes.append(f"{'would rewrite' if self.dry_run else 'rewrote'} {path}")
        if self.dry_run:  # only a dry run shows the rest: their line counts read whole files
            self._bulk_diffs(scan, compacted.archived, promotions)
        if self.dry_run or not (changed or scan.n_staged or promotions or compacted.archived
                                or self.judge.fresh or scan.cut or scan.end != start
                                or cursor.get("next_ids") != compacted.next_ids):
            if not self.dry_run:
                self.paths.staged_candidates.unlink(missing_ok=True)
            return None
        stage_promotions(self.paths.staged_promotions, promotions)
        return {
            "version": FORMAT_VERSION, "batch": self.batch,
            "files": changed, "candidates": scan.n_staged, "promotions": len(promotions),
            "judgments": verdicts.rows(self.judge.fresh, memory.utc_now(), self.mission,
                                       self.text_of),
            "identity_sizes": self.identity_sizes, "memory_archive": compacted.archived,
            "archive_sizes": archive_sizes(paths.archive, [m for _, m in scan.months],
                                           bool(compacted.archived)),
            "raw": {"end": scan.end, "cut": scan.cut, "inode": scan.inode,
                    "head_sha": sha256(scan.head[: min(scan.cut, HEAD_BYTES)]),
                    "months": scan.months},
            "cursor": {"version": FORMAT_VERSION, "next_ids": compacted.next_ids,
                       "last_month": scan.months[-1][1] if scan.months
                       else cursor.get("last_month", "unparsed"), "counted": scan.counted},
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
            words = {p.number: memory.fold(p.text) for p in answer.promotions}
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
                      self.mission, str(paths.identity), digest_read, counted=counted)
        raw_pass = RawPass(job)
        for c in raw_pass.candidates():
            self.tracker.add(c, cluster=self._cluster_of((c.role, c.kind), c.text))
        self.record = raw_pass.record
        book = MemoryBook(old_memory, settings.bounds, similarity=settings.similarity,
                          topic_similarity=settings.topic_similarity,
                          next_ids=next_ids, clusters=self.tracker.clusters)
        for entry in map(memory.Entry._make, raw_pass.entries()):
            self._learn(entry, book)
        scan = self.scan = raw_pass.scan
        self.report.processed, self.report.unparsed = scan.processed, scan.unparsed
        if scan.recounted:
            self.report.changes.append(f"{scan.recounted} entries of raw.md were counted by an "
                                       "earlier run: read again, not counted again")
        self.report.archived = scan.cut_line
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

    def _learn(self, e: memory.Entry, book: MemoryBook) -> None:
        """Take one of raw.md's new entries into MEMORY.md and the promotion tracker."""
        if e.kind not in LESSON_KINDS:
            book.add(e)
            return
        cid = self._cluster_of((e.role, e.kind), e.text)
        book.add(e, cid)
        if e.kind in PROMOTABLE:
            self.tracker.note(cid, e.role, e.kind, e.text, e.ts[:10], e.ts, self.mission,
                              e.feature, e.run)

    def _promotions(self) -> list[Promotion]:
        due = [ev for ev in self.tracker.due() if memory.NAME.fullmatch(ev.role)]
        identity = IdentityIndex(self.settings.similarity,
                                 judge=self.judge if self.judge.active() else None,
                                 folder=self.paths.identity)
        self.identity_sizes: dict[str, int] = {}  # role file sizes the plan was checked on
        self.identity_texts: dict[str, str] = {}
        for role in sorted({ev.role for ev in due}):
            text = self.identity_texts[role] = read_text(self.paths.role_file(role))
            self.identity_sizes[role] = len(text.encode())
            identity.add_text(role, text)
        promotions = plan_promotions(due, identity, self.today)
        if self.judge.questions:  # some asked while planning them: about due lessons' texts
            self.report.questions = self.judge.shown(
                self.tracker.text_of, {normalize(ev.text).key: ev.text for ev in due},
                identity.line)
        return promotions

    def _bulk_diffs(self, scan: Scan, memory_archived: list[str],
                    promotions: list[Promotion]) -> None:
        """A dry run's diffs of raw.md's head and of every file the pass appends to."""
        paths, shown, totals = self.paths, {}, Counter[Path]()

        def append(path: Path, lines: list[str], n: int) -> None:
            first = shown.setdefault(path, [])
            first += lines[: DIFF_PREVIEW - len(first)]
            totals[path] += n

        if scan.cut:
            self.report.diffs[str(paths.raw)] = bulk_diff(
                paths.raw, *lines_between(paths.raw, 0, scan.cut), drop=True)
        for month, offset, stop in month_spans(scan.months, scan.cut):
            append(paths.archive / f"{month}.md", *lines_between(paths.raw, offset, stop))
        append(paths.archive / "memory-history.md", [line + "\n" for line in memory_archived],
               len(memory_archived))
        append(paths.record, scan.staged, scan.n_staged)
        for p in promotions:
            append(paths.role_file(p.role), [p.line + "\n"], 1)
        for path, total in totals.items():
            if total:
                self.report.diffs[str(path)] = bulk_diff(path, shown[path], total)
