"""The curator pass: under its locks, finish an interrupted pass, plan (`planning`), commit
(`commit`), then bound every identity file (`identity`, safe to redo without a journal)."""

from __future__ import annotations

import gc
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson

from harness.curator import curatordb
from harness.curator.commit import CuratorPaths, apply_journal, read_json
from harness.curator.identity import bound_identity, check_role_files
from harness.curator.judge import Judgments, about_identity
from harness.curator.planning import Planner
from harness.curator.settings import CuratorReport, CuratorSettings, Refine
from harness.errors import BusyError, UsageError
from harness.paths import check_identity
from harness.state import memory, reading
from harness.state.locks import hold_dir_lock, hold_lock, lock_path
from harness.state.store import atomic_write


def curate(state: Path, identity_dir: Path, mission: str, settings: CuratorSettings, *,
           dry_run: bool = False, now: str | None = None,
           refine: Refine | None = None, judge: Judgments | None = None) -> CuratorReport:
    """Run the curator over one state directory; a dry run plans and writes nothing. `refine`'s
    rewrite stands only if `check_model_result` passes; `judge` holds new answers and budgets."""
    paths = CuratorPaths(Path(state), check_identity(Path(identity_dir)))
    check_role_files(paths.identity)
    # what the pass streams after it has opened (made, migrated) the curator database: a
    # damaged one stops the pass here, with nothing changed
    for path in (paths.raw, paths.record, *sorted((paths.identity / "archive").glob("*.md"))):
        reading.check_opens(path)
    today = (now or memory.utc_now())[:10]
    report = CuratorReport(dry_run=dry_run)
    lock = hold_lock(lock_path(paths.state, "curator"), wait=False, what="the curator")
    # and the state directory: a curator whose lock file was deleted still keeps others out
    anchor = hold_dir_lock(paths.state, "another curator")
    with lock, anchor, _no_cyclic_gc():
        report.resumed = paths.journal.exists()
        if report.resumed and dry_run:
            raise UsageError("an interrupted curator run is pending; run the curator "
                             "without --dry-run to finish it first")
        if report.resumed:
            apply_journal(paths, read_json(paths.journal), settings.similarity,
                          {"said": report.changes})
        planner = Planner(paths, mission, settings, today, report, refine, judge=judge)
        try:
            journal = _plan(planner, paths)
            if journal is not None:
                atomic_write(paths.journal, orjson.dumps(journal))  # the commit point
                skipped = apply_journal(paths, journal, settings.similarity, {
                    "tracker": planner.tracker, "batch": planner.batch,
                    "count": journal["candidates"], "mission": planner.mission,
                    "text_of": planner.text_of, "said": report.changes})
                report.promoted = [p for n, p in enumerate(report.promoted)
                                   if n not in skipped]
        finally:
            planner.close()
        # freed while the cycle collector is still off: its first pass after would walk them
        del planner, journal
        if not dry_run:  # after the plan's structures are gone: a first big run promotes many
            with hold_lock(paths.identity_lock):
                report.identity_archived = bound_identity(paths.identity,
                                                          settings.identity_chars)
        return report


def _plan(planner: Planner, paths: CuratorPaths) -> dict | None:
    db = paths.identity / curatordb.NAME
    try:
        return planner.plan()
    except sqlite3.OperationalError as e:
        if "locked" in str(e):
            raise BusyError(f"{db} is locked by another curator ({e}); try again") from None
        raise curatordb.unwritable(paths.identity, e) from None
    except sqlite3.DatabaseError as e:
        if planner.dry_run:
            raise UsageError(f"{db} is damaged ({e}); a curator run without --dry-run "
                             "sets it aside and makes it anew") from None
        planner.close()
        curatordb.set_aside(paths.identity, None)
        raise UsageError(f"{db} was damaged ({e}): set aside as {curatordb.DAMAGED}; the "
                         "next curator run makes it anew from the candidate record and the "
                         "identity archive") from None


def preview_for_model(state: Path, identity_dir: Path, mission: str,
                      settings: CuratorSettings, budget: int, *,
                      now: str | None = None) -> CuratorReport:
    """The dry run a model-mode pass shows its model, with up to `budget` unsure pairs of each
    kind; a second dry run, taking those pairs as the same lesson, adds the pairs it raises."""
    first = curate(state, identity_dir, mission, settings, dry_run=True, now=now,
                   judge=Judgments(budget=budget))
    if not first.questions:
        return first
    asked = {pair for pair, _, _ in first.questions}
    joined = curate(state, identity_dir, mission, settings, dry_run=True, now=now,
                    judge=Judgments(dict.fromkeys(asked, True), budget=budget))
    for question in joined.questions:
        kind = about_identity(question[0][0])
        room = budget - sum(about_identity(pair[0]) == kind for pair in asked)
        if question[0] not in asked and room > 0:
            first.questions.append(question)
            asked.add(question[0])
    return first


@contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    # a big run builds millions of small objects and no cycles: the cycle collector would
    # walk them again and again for nothing (0.8 s of 8 s CPU at 300k entries)
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
