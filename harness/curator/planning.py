"""Phase one of a curator pass: read the record and raw.md into MEMORY.md and the lessons, stage
new candidate lines and promotions, and return the journal `commit` carries out; nothing else."""

from __future__ import annotations

import difflib
import os
import secrets
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from harness.curator import commit, curatordb, record
from harness.curator.book import Compacted, MemoryBook
from harness.curator.commit import CuratorPaths, read_text
from harness.curator.identity import IdentityIndex, archive_bucket, identity_lessons
from harness.curator.judge import Judgments
from harness.curator.promotion import Promotion, PromotionTracker, load, plan_promotions
from harness.curator.settings import CuratorReport, CuratorSettings, Refine, check_model_result
from harness.curator.text import normalize
from harness.names import escape_controls
from harness.state import memory
from harness.state.store import sha256


class Planner:
    def __init__(self, paths: CuratorPaths, mission: str, settings: CuratorSettings,
                 today: str, report: CuratorReport, refine: Refine | None = None, *,
                 judge: Judgments | None = None) -> None:
        self.paths, self.settings, self.refine, self.today = paths, settings, refine, today
        self.judge, self.mission = judge or Judgments(), record.mission_token(mission)
        self.report, self.dry_run = report, report.dry_run  # the report fills in as it goes
        self.batch = secrets.token_hex(6)
        self.tracker: PromotionTracker | None = None
        self._about_identity: dict[str, dict[str, str]] = {}  # see `text_of`
        self.staged = 0  # candidate lines staged

    def plan(self) -> dict | None:
        """The journal of what to change, or None when nothing would (or in a dry run)."""
        cursor = commit.read_json(self.paths.cursor)
        start, counted = commit.cursor_start(self.paths, cursor)
        if start is None:
            self.report.changes.append("raw.md does not start where the last run left it; "
                                       "reading it from the start")
        start = start or 0
        old = {name: read_text(self.paths.state / name) for name in ("summary.md", "MEMORY.md")}
        scan, book = self._read(start, counted, cursor, old["MEMORY.md"])
        compacted = book.compact()
        promotions = self.report.promoted = self._promotions()
        self.report.memory_archived = len(compacted.archived)
        files = self.report.planned = {"summary.md": compacted.summary,
                                       "MEMORY.md": compacted.memory}
        if self.refine is not None and not self.dry_run:
            files, promotions = self._refined(files, promotions)
            self.report.promoted = promotions
        changed = {name: text for name, text in files.items() if text != old[name]}
        for name, text in changed.items():
            path = self.paths.state / name
            self.report.diffs[str(path)] = rewrite_diff(path, old[name], text)
            self.report.changes.append(f"{'would rewrite' if self.dry_run else 'rewrote'} {path}")
        if self.dry_run:  # only a dry run tells the appends: their line counts read raw.md
            self._tell_appends(scan, compacted.archived, promotions)
            return None
        if not (changed or self.staged or promotions or compacted.archived or self.judge.fresh
                or scan.cut or scan.end != start or cursor.get("next_ids") != compacted.next_ids):
            self.paths.staged_candidates.unlink(missing_ok=True)
            return None
        commit.stage_promotions(self.paths.staged_promotions, promotions)
        return self._journal(scan, compacted, changed, len(promotions), cursor)

    def _journal(self, scan: record.RawPass, compacted: Compacted, changed: dict[str, str],
                 promotions: int, cursor: dict) -> dict:
        last_month = scan.months[-1][1] if scan.months else cursor.get("last_month", "unparsed")
        return {
            "version": commit.FORMAT_VERSION, "batch": self.batch,
            "files": changed, "candidates": self.staged, "promotions": promotions,
            "judgments": curatordb.answer_rows(self.judge.fresh, memory.utc_now(), self.mission,
                                               self.text_of),
            "identity_sizes": {role: len(text.encode())  # the sizes the plan was checked on
                               for role, text in self.identity_texts.items()},
            "memory_archive": compacted.archived,
            "archive_sizes": commit.archive_sizes(
                self.paths.archive, [m for _, m in scan.months], bool(compacted.archived)),
            "raw": {"end": scan.end, "cut": scan.cut, "inode": scan.inode,
                    "head_sha": sha256(scan.head[: min(scan.cut, record.HEAD_BYTES)]),
                    "months": scan.months},
            "cursor": {"version": commit.FORMAT_VERSION, "next_ids": compacted.next_ids,
                       "last_month": last_month, "counted": scan.counted},
        }

    def close(self) -> None:
        if self.tracker is not None:
            self.tracker.store.close()

    def _refined(self, files: dict[str, str], promotions: list[Promotion]
                 ) -> tuple[dict[str, str], list[Promotion]]:
        """The model's files and promotion words if they pass every check, else the rules'."""
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

    def _read(self, start: int, counted: list[list[str]], cursor: dict,
              old_memory: str) -> tuple[record.RawPass, MemoryBook]:
        paths, settings = self.paths, self.settings
        if not self.dry_run:
            paths.own.mkdir(parents=True, exist_ok=True)
        self.tracker = load(paths.identity, settings.similarity, self.judge,
                            write=not self.dry_run, said=self.report.changes)
        scan = record.RawPass(paths.raw, start, raw_keep=settings.raw_keep,
                              month=cursor.get("last_month", "unparsed"), counted=counted)
        book = MemoryBook(old_memory, settings.bounds, similarity=settings.similarity,
                          topic_similarity=settings.topic_similarity,
                          next_ids=cursor.get("next_ids"), clusters=self.tracker)
        with open(os.devnull if self.dry_run else paths.staged_candidates, "w",
                  encoding="utf-8") as staged:
            self.staged = self._take(scan, book, staged)
            if not self.dry_run:
                staged.flush()
                os.fsync(staged.fileno())
        self.report.processed, self.report.unparsed = scan.processed, scan.unparsed
        if scan.recounted:
            self.report.changes.append(f"{scan.recounted} entries of raw.md were counted by an "
                                       "earlier run: read again, not counted again")
        self.report.archived = scan.cut_line
        return scan, book

    def _take(self, raw_pass: record.RawPass, book: MemoryBook, staged: TextIO) -> int:
        """Feed raw.md's new entries to `book` and the tracker; how many lines were staged."""
        n = 0
        for e in map(memory.Entry._make, raw_pass.entries()):
            if e.kind not in record.LESSON_KINDS:
                book.add(e)
                continue
            cid = self.tracker.assign_text((e.role, e.kind), e.text)
            book.add(e, cid)
            if e.kind in record.PROMOTABLE:
                c = record.Candidate(e.ts, self.mission, e.role, e.kind, e.feature, e.run, e.text)
                staged.write(c.line(f"{self.batch}:{n}") + "\n")
                n += 1
                self.tracker.add(c, cid)
        return n

    def text_of(self, bucket: tuple[str, str] | str, key: str) -> str | None:
        """The text the pass normalised to `key` in `bucket`, or the lesson database's."""
        if not isinstance(bucket, str):
            return (self.tracker.texts.get((bucket, key))
                    or self.tracker.store.text_of(bucket, key))
        if bucket not in self._about_identity:  # the due lessons' texts and identity's lines
            texts = [ev.text for ev in self.tracker.due()
                     if bucket in (ev.role, archive_bucket(ev.role, ev.kind))]
            texts += identity_lessons(self.identity_texts.get(bucket, ""))
            self._about_identity[bucket] = {normalize(t).key: t for t in reversed(texts)}
        return self._about_identity[bucket].get(key)

    def _promotions(self) -> list[Promotion]:
        due = [ev for ev in self.tracker.due() if memory.NAME.fullmatch(ev.role)]
        identity = IdentityIndex(self.settings.similarity,
                                 judge=self.judge if self.judge.active() else None,
                                 folder=self.paths.identity)
        self.identity_texts = {role: read_text(self.paths.role_file(role))
                               for role in sorted({ev.role for ev in due})}
        for role, text in self.identity_texts.items():
            identity.add_text(role, text)
        promotions = plan_promotions(due, identity, self.today)
        if self.judge.questions:  # some asked while planning them: about due lessons' texts
            self.report.questions = self.judge.shown(
                self.tracker.texts, self.tracker.text_of,
                {normalize(ev.text).key: ev.text for ev in due}, identity.line)
        return promotions

    def _tell_appends(self, scan: record.RawPass, memory_archived: list[str],
                      promotions: list[Promotion]) -> None:
        """A dry run's identity diffs, and a line for raw.md's cut and for each append."""
        paths, said = self.paths, self.report.changes
        for role in dict.fromkeys(p.role for p in promotions):
            old, path = self.identity_texts[role], paths.role_file(role)
            added = "".join(p.line + "\n" for p in promotions if p.role == role)
            new = old + commit.opening(old, role) + added
            self.report.diffs[str(path)] = rewrite_diff(path, old, new)
        if scan.cut_line:
            said.append(f"would move the first {scan.cut_line:,} lines of {paths.raw} to "
                        f"{paths.archive}/")
        appended = {paths.archive / "memory-history.md": len(memory_archived),
                    paths.record: self.staged}
        said += [f"would append {n:,} line{'s' * (n != 1)} to {path}"
                 for path, n in appended.items() if n]


def rewrite_diff(path: Path, old: str, new: str) -> str:
    """A unified diff of `path` rewritten, control characters escaped: a hand-written ESC in a
    note must not drive the terminal of `curator --dry-run`."""
    lines = difflib.unified_diff(old.splitlines(True), new.splitlines(True), str(path), str(path))
    return "".join(escape_controls(line.removesuffix("\n")) + "\n" for line in lines)

