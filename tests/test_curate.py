"""The curator run on disk: no loss, bounds, idempotence, concurrency, crashes, promotion."""

from __future__ import annotations

import collections
import functools
import importlib.util
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.curator import commit as curate_commit
from harness.curator import curatordb, planning
from harness.curator import record as candidates
from harness.curator.book import Bounds
from harness.curator.curate import CuratorSettings, curate
from harness.curator.identity import IdentityIndex
from harness.curator.record import Candidate, parse_candidate
from harness.curator.settings import ModelResult
from harness.errors import BusyError, UsageError
from harness.state import memory
from harness.state.memory import (
    append_entry,
    estimate_tokens,
    make_entry,
    parse_entry,
    parse_sections,
)
from harness.state.store import hold_lock, lock_path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(__file__).resolve().parent / "data" / "curator_corpus"
NOW = "2026-05-01T00:00:00Z"
SETTINGS = CuratorSettings()


def note(state: Path, text: str, kind: str = "-", *, role: str = "worker", feature: str = "F-001",
         run: str | None = None, ts: str = "2026-04-24T10:00:00Z") -> str:
    e = make_entry(role, feature, kind, text, run, ts)
    append_entry(state, e)
    return e.line()


def raw_and_archive(state: Path) -> list[str]:
    """Every line in raw.md and the raw archive (month files and unparsed.md)."""
    lines = []
    files = [state / "raw.md", *sorted((state / "archive").glob("[0-9]*.md")),
             state / "archive" / "unparsed.md"]
    for path in files:
        if path.exists():
            lines += path.read_bytes().decode().split("\n")[:-1]
    return lines


def assert_no_loss(state: Path, appended: list[str]) -> None:
    assert collections.Counter(raw_and_archive(state)) == collections.Counter(appended)


def snapshot(*folders: Path) -> dict[str, bytes]:
    """Every file's bytes, lock files aside (holding a lock writes the holder's pid)."""
    out = {}
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "locks" not in path.parts and not path.name.endswith(".lock"):
                out[str(path)] = path.read_bytes()
    return out


@pytest.fixture
def state(tmp_path: Path) -> Path:
    folder = tmp_path / "state"
    folder.mkdir()
    return folder


@pytest.fixture
def identity(tmp_path: Path) -> Path:
    return tmp_path / "identity"


def run(state: Path, identity: Path, mission: str = "shop", **kw):
    return curate(state, identity, mission, kw.pop("settings", SETTINGS), now=NOW, **kw)


# --- L1 ---------------------------------------------------------------------------


def test_keeps_the_last_ten_entries_and_archives_the_rest_by_month(state, identity) -> None:
    appended = [note(state, f"note {n}", ts=f"2026-0{3 + n // 10}-1{n % 10}T00:00:00Z")
                for n in range(25)]
    report = run(state, identity)
    assert report.archived == 15 and report.processed == 25 and report.unparsed == 0
    assert (state / "raw.md").read_text().splitlines() == appended[15:]
    assert (state / "archive" / "2026-03.md").read_text().splitlines() == appended[:10]
    assert (state / "archive" / "2026-04.md").read_text().splitlines() == appended[10:15]
    assert not (state / "curator" / "journal.json").exists()
    assert_no_loss(state, appended)


def test_unparsable_lines_move_like_any_other(state, identity) -> None:
    raw = state / "raw.md"
    raw.write_text("junk before any entry\n\n")
    appended = ["junk before any entry", ""]
    for n in range(14):
        appended.append(note(state, f"note {n}", ts=f"2026-04-{10 + n}T00:00:00Z"))
        if n in (1, 12):
            with open(raw, "a") as f:
                f.write(f"stray output {n}\n")
            appended.append(f"stray output {n}")
    report = run(state, identity)
    assert report.unparsed == 4
    assert (state / "archive" / "unparsed.md").read_text() == "junk before any entry\n\n"
    assert "stray output 1" in (state / "archive" / "2026-04.md").read_text()
    assert "stray output 12" in raw.read_text()  # among the last ten entries: kept
    assert_no_loss(state, appended)
    appended += [note(state, f"later {n}", ts="2026-05-02T00:00:00Z") for n in range(12)]
    run(state, identity)
    assert_no_loss(state, appended)
    assert len([line for line in raw.read_text().splitlines() if parse_entry(line)]) == 10


def test_few_entries_stay_put(state, identity) -> None:
    appended = [note(state, f"note {n}") for n in range(4)]
    assert run(state, identity).archived == 0
    assert (state / "raw.md").read_text().splitlines() == appended
    assert not (state / "archive").exists()  # a pass that archives nothing makes no folder


# --- idempotence, bounds, dry run ---------------------------------------------


def mixed_notes(state: Path, rng: random.Random, n: int, day: int) -> list[str]:
    """`n` random notes of every kind, with paraphrased repeats and superseded decisions."""
    lessons = [
        ("TRICK", ["psql -f drizzle/*.sql applies migrations in filename order",
                   "running `psql -f` on drizzle/*.sql applies the migrations sorted by "
                   "file name"]),
        ("TRICK", ["git stash -u also stashes untracked files",
                   "plain `git stash` leaves untracked files; add -u to stash them too"]),
        ("FAIL", ["next build failed: useSearchParams() should be wrapped in a suspense boundary"]),
        ("FORGOT", ["forgot to run pnpm db:generate after changing schema.ts"]),
        ("GOTCHA", ["the staging database is reset every night at 02:00 UTC"]),
    ]
    out = []
    for _ in range(n):
        ts = f"2026-{1 + day // 28 % 12:02d}-{1 + day % 28:02d}T{rng.randrange(24):02d}:00:00Z"
        roll = rng.random()
        feature = f"F-{rng.randint(1, 60):03d}"
        runid = f"{rng.randint(1, 10**6)}-worker-{feature}"
        if roll < 0.35:
            kind, texts = rng.choice(lessons)
            out.append(note(state, rng.choice(texts), kind, feature=feature, run=runid, ts=ts))
        elif roll < 0.55:
            k = rng.randrange(400)
            text = f"tool{k} --opt{k} handles case {k} " + "detail " * rng.randrange(12)
            out.append(note(state, text, rng.choice(["TRICK", "GOTCHA", "FAIL", "FORGOT"]),
                            feature=feature, run=runid, ts=ts))
        elif roll < 0.7:
            topic = rng.choice(["db", "auth", "api", "styling", "queue"])
            out.append(note(state, f"{topic}: use option {rng.randrange(9)}", "DECISION",
                            role="planner", feature="-", ts=ts))
        elif roll < 0.97:
            out.append(note(state, f"{feature} done, tests green", run=runid, ts=ts))
        else:
            stray = f"stray line {rng.randrange(10**6)}"
            with open(state / "raw.md", "a") as f:
                f.write(stray + "\n")
            out.append(stray)
    return out


def assert_bounds(state: Path, settings: CuratorSettings = SETTINGS) -> None:
    summary = (state / "summary.md").read_text()
    mem = (state / "MEMORY.md").read_text()
    assert len(summary.splitlines()) <= settings.bounds.summary_max_lines
    assert estimate_tokens(summary) <= settings.bounds.summary_max_tokens
    assert len(mem.splitlines()) <= settings.bounds.memory_max_lines
    assert [h for h in parse_sections(summary) if h] == ["Lessons", "Decisions (current)",
                                                          "Avoid"]
    assert [h for h in parse_sections(mem) if h] == ["Decisions", "Context", "History",
                                                      "Lessons"]
    entries = [line for line in (state / "raw.md").read_text().splitlines() if parse_entry(line)]
    assert len(entries) <= settings.raw_keep


@pytest.mark.parametrize("runs", [1, 10, pytest.param(1000, marks=pytest.mark.slow)])
def test_bounds_hold_after_many_runs_with_notes_in_between(state, identity, runs,
                                                            monkeypatch) -> None:
    if runs == 1000:
        # this test is about bounds and loss, not durability (the crash tests cover that):
        # spare it the disk flushes that would dominate its time
        monkeypatch.setattr(os, "fsync", lambda fd: None)
    rng = random.Random(runs)
    settings = CuratorSettings() if runs < 1000 else CuratorSettings(
        bounds=Bounds(memory_max_lines=60, summary_max_lines=20, summary_max_tokens=400))
    appended: list[str] = []
    per_run = 300 if runs == 1 else 40 if runs == 10 else 3
    for n in range(runs):
        appended += mixed_notes(state, rng, rng.randint(0, per_run), n)
        run(state, identity, settings=settings)
        assert_bounds(state, settings)
    assert_no_loss(state, appended)
    if runs == 1000:
        history = state / "archive" / "memory-history.md"
        assert history.exists() and history.read_text().count("\n") > 10


def test_a_second_run_changes_nothing(state, identity) -> None:
    rng = random.Random(3)
    mixed_notes(state, rng, 200, 1)
    run(state, identity)
    before = snapshot(state, identity)
    report = run(state, identity)
    assert snapshot(state, identity) == before
    assert report.diffs == {} and report.promoted == [] and report.archived == 0


def test_dry_run_writes_nothing_and_shows_unified_diffs(state, identity) -> None:
    identity.mkdir()
    (identity / "worker.md").write_text("# worker\n\nRead AGENTS.md first.\n")
    for n in range(14):
        note(state, "psql -f drizzle/*.sql applies migrations in filename order", "TRICK",
             feature=f"F-00{n % 3}", run=f"r{n}", ts=f"2026-04-{10 + n}T00:00:00Z")
    before = snapshot(state, identity)
    report = run(state, identity, dry_run=True)
    assert snapshot(state, identity) == before
    # diffs of the files people review; the bulk appends and raw.md's head in a line each
    expected = {state / "summary.md", state / "MEMORY.md", identity / "worker.md"}
    assert set(report.diffs) == {str(p) for p in expected}
    for diff in report.diffs.values():
        assert diff.startswith("--- ") and "\n+++ " in diff and "\n@@ " in diff
    assert "+- TRICK: psql -f drizzle/*.sql" in report.diffs[str(identity / "worker.md")]
    assert {f"would move the first 4 lines of {state / 'raw.md'} to {state / 'archive'}/",
            f"would append 14 lines to {identity / '.candidates.log'}"} <= set(report.changes)
    assert len(report.promoted) == 1 and report.archived == 4
    real = run(state, identity)
    # a real run shows the small files it rewrote; the appends are told by a dry run only
    assert set(real.diffs) == {str(state / "summary.md"), str(state / "MEMORY.md")}
    assert [p.line for p in real.promoted] == [p.line for p in report.promoted]
    assert real.archived == report.archived
    assert (identity / "worker.md").read_text().startswith("# worker\n\nRead AGENTS.md first.\n")


def test_a_diff_shows_control_characters_escaped() -> None:
    diff = planning.rewrite_diff(Path("worker.md"), "# worker\n",
                                 "# worker\nclear \x1b[2J the screen\n")
    assert "+clear \\x1b[2J the screen\n" in diff and "\x1b" not in diff


def test_dry_run_refuses_while_an_interrupted_run_is_pending(state, identity, monkeypatch) -> None:
    for n in range(12):
        note(state, f"note {n}")
    monkeypatch.setattr(curate_commit, "_rewrite_raw", _boom)
    with pytest.raises(RuntimeError):
        run(state, identity)
    monkeypatch.undo()
    with pytest.raises(UsageError):
        run(state, identity, dry_run=True)
    assert run(state, identity).resumed


def _boom(*args, **kwargs):
    raise RuntimeError("simulated crash")


# --- crashes -----------------------------------------------------------------------


def crash_fixture(base: Path) -> tuple[Path, Path, list[str]]:
    state, identity = base / "state", base / "identity"
    state.mkdir(parents=True)
    identity.mkdir()
    (identity / "worker.md").write_text("# worker\n\nhand-written line\n")
    appended = mixed_notes(state, random.Random(11), 120, 3)
    appended += [note(state, "pnpm dev --turbo starts Next.js with turbopack", "TRICK",
                      feature=f"F-0{n}0", run=f"crash-run{n}", ts="2026-05-01T00:00:00Z")
                 for n in range(2)]
    return state, identity, appended


def comparable(state: Path, identity: Path) -> dict[str, object]:
    """What a finished run leaves, with the random candidate batch tags taken out."""
    return {
        "summary": (state / "summary.md").read_text(),
        "memory": (state / "MEMORY.md").read_text(),
        "raw": (state / "raw.md").read_text(),
        "archive": sorted(raw_and_archive(state)),
        "history": _read(state / "archive" / "memory-history.md"),
        "identity": (identity / "worker.md").read_text(),
        "candidates": record(identity),
        "cursor": (state / "curator" / "cursor.json").read_text(),
    }


def record(identity: Path) -> list[Candidate]:
    """The candidate record as a reader counts it: a redone batch append once."""
    seen: dict[str, int] = {}
    out = []
    for line in (identity / ".candidates.log").read_text().splitlines():
        batch, seq, cand = parse_candidate(line)
        if seq > seen.get(batch, -1):
            seen[batch] = seq
            out.append(cand)
    return out


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def fsyncs_in(monkeypatch, action, crash_at: int = 0) -> int:
    """How many fsyncs `action` makes; the `crash_at`-th (from 1) raises as a power cut would."""
    calls = 0
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        nonlocal calls
        calls += 1
        if calls == crash_at:
            raise OSError("simulated power cut")
        real_fsync(fd)

    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", fsync)
        action()
    return calls


def test_a_crash_at_any_write_then_a_rerun_ends_as_if_nothing_happened(
        tmp_path, monkeypatch) -> None:
    ref_state, ref_identity, appended = crash_fixture(tmp_path / "ref")
    # every fsync of a pass is a point to crash at: the reference pass counts them
    points = fsyncs_in(monkeypatch, lambda: run(ref_state, ref_identity))
    run(ref_state, ref_identity)  # with nothing new: the same end state
    expected = comparable(ref_state, ref_identity)
    assert points >= 5, points  # a pass writes its journal, the files, the record, the cursor

    for crash_at in range(1, points + 1):
        state, identity, _ = crash_fixture(tmp_path / f"crash{crash_at}")
        with pytest.raises(OSError, match="simulated power cut"):
            fsyncs_in(monkeypatch, functools.partial(run, state, identity), crash_at)
        run(state, identity)
        assert not (state / "curator" / "journal.json").exists(), crash_at
        assert comparable(state, identity) == expected, f"crashed at fsync {crash_at}"
        assert_no_loss(state, appended)
        lines = (identity / "worker.md").read_text().splitlines()
        assert len(lines) == len(set(lines)), crash_at


def test_a_crash_before_the_commit_changes_nothing_visible(state, identity, monkeypatch) -> None:
    for n in range(15):
        note(state, f"note {n}")
    before = snapshot(state)
    monkeypatch.setattr(planning.MemoryBook, "compact", _boom)
    with pytest.raises(RuntimeError):
        run(state, identity)
    after = snapshot(state)
    after.pop(str(state / "curator" / "candidates.pending"), None)
    assert after == before


# --- concurrency -------------------------------------------------------------------


def test_notes_written_during_a_run_are_not_blocked_and_not_lost(state, identity,
                                                                  monkeypatch) -> None:
    appended = [note(state, f"before {n}") for n in range(15)]
    during: list[str] = []
    real = planning.MemoryBook.compact

    def compact_while_a_worker_writes(self):
        # the raw lock must be free while the curator plans: a note goes straight in
        with hold_lock(memory.raw_lock(state), wait=False):
            pass
        during.append(note(state, "written during the run", "TRICK", run="rdur"))
        return real(self)

    monkeypatch.setattr(planning.MemoryBook, "compact", compact_while_a_worker_writes)
    run(state, identity)
    monkeypatch.undo()
    assert (state / "raw.md").read_text().splitlines()[-1] == during[0]
    assert_no_loss(state, appended + during)
    second = run(state, identity)
    assert second.processed == 1  # the note written meanwhile is learned once, next run
    assert "written during the run" in (state / "MEMORY.md").read_text()
    assert run(state, identity).processed == 0


WRITER = """
import sys, time
from pathlib import Path
from harness.state.memory import append_entry, make_entry
state, name, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
for i in range(n):
    kind = "TRICK" if i % 5 == 0 else "-"
    text = "%s note %d: pnpm test --shard %d splits the suite" % (name, i, i % 3 + 1)
    append_entry(state, make_entry("worker", "F-%03d" % (i % 7 + 1), kind, text,
                                   "%s-run%d" % (name, i % 4),
                                   "2026-04-%02dT10:00:00Z" % (1 + i % 28)))
    time.sleep(0.001)
"""

CURATOR = """
import sys, time
from pathlib import Path
from harness.curator.curate import CuratorSettings, curate
from harness.errors import BusyError
state, identity, seconds = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])
ran = busy = 0
end = time.time() + seconds
while time.time() < end:
    try:
        curate(state, identity, "shop", CuratorSettings(), now="2026-05-01T00:00:00Z")
        ran += 1
    except BusyError as e:
        assert e.exit_code == 3
        busy += 1
print(ran, busy)
"""


def test_real_processes_writing_while_two_curators_run(state, identity) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(state), f"w{k}", "150"],
                                env=env) for k in range(3)]
    curators = [subprocess.Popen([sys.executable, "-c", CURATOR, str(state), str(identity), "4"],
                                 env=env, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    for p in writers:
        assert p.wait(timeout=120) == 0
    outputs = [p.communicate(timeout=120)[0].split() for p in curators]
    assert all(p.returncode == 0 for p in curators)
    assert sum(int(out[0]) for out in outputs) > 2  # both kept running; some were busy
    run(state, identity)
    lines = raw_and_archive(state)
    assert len(lines) == 450
    notes = collections.Counter(parse_entry(line).text.split(":")[0] for line in lines)
    assert notes == {f"w{k} note {i}": 1 for k in range(3) for i in range(150)}
    lessons = parse_sections((state / "MEMORY.md").read_text())["Lessons"]
    # 90 TRICKs, each its own lesson (the note numbers differ, and none is a shard number: a
    # number on one side only does not tell lessons apart): each counted exactly once
    assert sorted(line.split()[3] for line in lessons) == ["x1"] * 90


def test_a_second_curator_gets_busy(state, identity) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\nfrom pathlib import Path\nfrom harness.state.store import hold_lock, "
         "lock_path\nwith hold_lock(lock_path(Path(sys.argv[1]), 'curator')):\n"
         "    print('held', flush=True)\n    time.sleep(30)\n", str(state)],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(BusyError) as info:
            run(state, identity)
        assert info.value.exit_code == 3
    finally:
        holder.kill()
        holder.wait()
    run(state, identity)


def test_busy_in_process_too(state, identity) -> None:
    with hold_lock(lock_path(state, "curator")), pytest.raises(BusyError):
        run(state, identity)


# --- promotion to identity ------------------------------------------------------------


def test_fail_across_two_missions_is_promoted_once_with_provenance(tmp_path, identity) -> None:
    identity.mkdir()
    hand = "# worker\n\nWritten by a human: keep commits small.\n"
    (identity / "worker.md").write_text(hand)
    shop, blog = tmp_path / "shop", tmp_path / "blog"
    shop.mkdir()
    blog.mkdir()
    note(shop, "pnpm dev failed with EADDRINUSE: port 3000 was held by an old dev server",
         "FAIL", feature="F-004", run="101-worker-F-004", ts="2026-04-02T00:00:00Z")
    note(shop, "pnpm dev failed with EADDRINUSE: port 3000 was held by an old dev server",
         "FAIL", feature="F-005", run="102-worker-F-005", ts="2026-04-03T00:00:00Z")
    assert run(shop, identity, "shop").promoted == []  # one mission only
    note(blog, "pnpm dev failed with EADDRINUSE: port 3000 was held by an old dev server again",
         "FAIL", feature="F-009", run="201-worker-F-009", ts="2026-04-09T00:00:00Z")
    report = run(blog, identity, "blog")
    assert [(p.role, p.kind) for p in report.promoted] == [("worker", "FAIL")]
    text = (identity / "worker.md").read_text()
    assert text.startswith(hand)
    assert text[len(hand):] == (
        "- FAIL: pnpm dev failed with EADDRINUSE: port 3000 was held by an old dev server "
        "[promoted 2026-05-01; seen 3x 2026-04-02..2026-04-09; missions: shop, blog; "
        "features: F-004, F-005, F-009; runs: 101-worker-F-004, 102-worker-F-005, "
        "201-worker-F-009]\n")
    assert run(shop, identity, "shop").promoted == []
    assert run(blog, identity, "blog").promoted == []
    assert (identity / "worker.md").read_text() == text


def test_a_lesson_identity_holds_in_other_words_is_not_promoted(state, identity) -> None:
    identity.mkdir()
    (identity / "worker.md").write_text(
        "# worker\n\n- psql -f drizzle/*.sql applies migrations in filename order\n")
    for n in range(2):
        note(state, "running `psql -f` on drizzle/*.sql applies the migrations sorted by file "
             "name", "TRICK", feature=f"F-00{n}", run=f"r{n}")
    assert run(state, identity).promoted == []


def test_what_identity_gained_since_the_plan_is_not_promoted_again(state, identity,
                                                                   monkeypatch) -> None:
    # another mission's curator appends one of the lessons, in other words, between this
    # run's plan and its commit; three staged promotions a line, so the skipped one is the
    # second on the first line and the report must drop that one, not the line's first
    monkeypatch.setattr(curate_commit, "STAGED_ROWS", 3)
    identity.mkdir()
    (identity / "worker.md").write_text("# worker\n\n")
    tools = ["make -n", "pnpm lint", "cargo check", "go vet"]
    for tool in tools:
        for n in range(2):
            note(state, f"{tool} in ci/{tool.split()[0]}.yml catches it early", "TRICK",
                 feature=f"F-00{n}", run=f"{tool.split()[0]}-r{n}")
    stage = curate_commit.stage_promotions

    def stage_then_another_curator_appends(path, promotions):
        stage(path, promotions)
        with open(identity / "worker.md", "a") as f:
            f.write("- running `pnpm lint` in ci/pnpm.yml catches it early [promoted]\n")

    monkeypatch.setattr(curate_commit, "stage_promotions", stage_then_another_curator_appends)
    report = run(state, identity)
    assert [p.text.split(" in ")[0] for p in report.promoted] == ["make -n", "cargo check",
                                                                 "go vet"]
    lines = (identity / "worker.md").read_text().splitlines()
    assert [line for line in lines if "pnpm lint" in line] == [
        "- running `pnpm lint` in ci/pnpm.yml catches it early [promoted]"]
    assert sum("- TRICK: " in line for line in lines) == 3


def test_promotions_an_earlier_version_staged_are_carried_out(state, identity,
                                                              monkeypatch) -> None:
    # a run crashed before promoting; the harness was upgraded; its staged promotions are
    # one per line, as earlier versions wrote them
    for tool in ("make -n", "go vet"):
        for n in range(2):
            note(state, f"{tool} in ci/{tool.split()[0]}.yml catches it early", "TRICK",
                 feature=f"F-00{n}", run=f"{tool.split()[0]}-r{n}")
    monkeypatch.setattr(curate_commit, "_promote", _boom)
    with pytest.raises(RuntimeError):
        run(state, identity)
    monkeypatch.undo()
    pending = state / "curator" / "promotions.pending"
    rows = [row for line in pending.read_text().splitlines() for row in json.loads(line)]
    pending.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert len(rows) == 2 and run(state, identity).resumed
    lines = (identity / "worker.md").read_text().splitlines()
    assert [line.split(" [")[0] for line in lines if line.startswith("- ")] == [
        "- TRICK: make -n in ci/make.yml catches it early",
        "- TRICK: go vet in ci/go.yml catches it early"]


def test_a_run_checks_only_the_lessons_noted_in_it_against_identity(state, identity,
                                                                   monkeypatch) -> None:
    tools = ["make -n", "pnpm lint", "cargo check", "go vet"]
    for tool in tools:
        for n in range(2):
            note(state, f"{tool} in ci/{tool.split()[0]}.yml catches it early", "TRICK",
                 feature=f"F-00{n}", run=f"{tool.split()[0]}-r{n}")
    assert len(run(state, identity).promoted) == 4
    checked: list[str] = []
    knows = IdentityIndex.knows
    monkeypatch.setattr(IdentityIndex, "knows",
                        lambda self, role, text: checked.append(text) or knows(self, role, text))
    note(state, "go vet in ci/go.yml catches it early", "TRICK", feature="F-009", run="go-r9")
    assert run(state, identity).promoted == []
    assert checked == ["go vet in ci/go.yml catches it early"]  # the database's three are not


def test_a_line_deleted_from_identity_stays_out_until_the_lesson_recurs(state,
                                                                        identity) -> None:
    for n in range(2):
        note(state, "make -n in ci/make.yml catches it early", "TRICK", feature=f"F-00{n}",
             run=f"r{n}")
    assert len(run(state, identity).promoted) == 1
    (identity / "worker.md").write_text("# worker\n\n")  # someone took the line out
    note(state, "unrelated", "-")
    assert run(state, identity).promoted == []
    note(state, "make -n in ci/make.yml catches it early", "TRICK", feature="F-003", run="r3")
    assert [p.text for p in run(state, identity).promoted] == [
        "make -n in ci/make.yml catches it early"]


def test_candidate_record_counts_a_redone_append_once(state, identity) -> None:
    identity.mkdir()
    c = "\t2026-04-01T00:00:00Z\tother\tworker\tFORGOT\tF-001\tr1\tforgot to bump the version\n"
    (identity / ".candidates.log").write_text(f"b1:0{c}b1:0{c}")  # a crashed append, redone
    note(state, "bumped nothing: forgot to bump the version", "FORGOT", run="r1")
    assert run(state, identity, "other").promoted == []  # same run: one occasion
    note(state, "forgot to bump the version again", "FORGOT", run="r2")
    (promoted,) = run(state, identity, "other").promoted
    assert "seen 3x" in promoted.line


def counting_record_reads(monkeypatch) -> list[str]:
    seen: list[str] = []
    real = candidates.parse_candidate

    def parse(line: str):
        seen.append(line)
        return real(line)

    monkeypatch.setattr(candidates, "parse_candidate", parse)
    return seen


def test_the_lesson_database_spares_rereading_the_candidate_record(tmp_path, identity,
                                                                   monkeypatch) -> None:
    shop, blog = tmp_path / "shop", tmp_path / "blog"
    for state, mission, tool in ((shop, "shop", "tool"), (blog, "blog", "gizmo")):
        state.mkdir()
        for n in range(30):
            note(state, f"{tool}{n} --opt{n} needs its fixtures first", "TRICK",
                 feature=f"F-{n:03d}", run=f"{mission}-r{n}")
        assert run(state, identity, mission).promoted == []
    assert (identity / curatordb.NAME).exists()
    reads = counting_record_reads(monkeypatch)
    note(shop, "gizmo3 --opt3 needs the fixtures first", "TRICK", feature="F-900", run="x1")
    report = run(shop, identity, "shop")
    assert reads == []  # the blog run brought the database up to its own lines
    assert [p.text for p in report.promoted] == ["gizmo3 --opt3 needs its fixtures first"]
    assert "seen 2x" in report.promoted[0].line
    assert "missions: blog, shop" in report.promoted[0].line


@pytest.mark.parametrize("spoil", ["truncate", "threshold", "record"])
def test_a_doubtful_lesson_database_is_ignored(state, identity, monkeypatch, spoil) -> None:
    for n in range(20):
        note(state, f"tool{n} --opt{n} needs its fixtures first", "TRICK", run=f"r{n}")
    run(state, identity)
    db, log = identity / curatordb.NAME, identity / ".candidates.log"
    settings = SETTINGS
    if spoil == "truncate":
        db.write_bytes(db.read_bytes()[:1000])
    elif spoil == "threshold":
        settings = CuratorSettings(similarity=80.0)
    else:
        log.write_text(log.read_text().replace("tool1 ", "tool1b "))
    reads = counting_record_reads(monkeypatch)
    note(state, "tool1 --opt1 needs the fixtures first", "TRICK", feature="F-009", run="x")
    report = run(state, identity, settings=settings)
    assert len(reads) == 20  # the whole record, read again
    assert len(report.promoted) == (0 if spoil == "record" else 1)


def test_an_edited_raw_md_is_read_again_from_the_start(state, identity) -> None:
    for n in range(5):
        note(state, f"note {n}")
    run(state, identity)
    (state / "raw.md").write_text("hand edit\n" + (state / "raw.md").read_text())
    report = run(state, identity)
    assert report.processed == 1 and report.unparsed == 1  # the 5 notes were counted before
    assert any("does not start where" in c for c in report.changes)
    assert "5 entries of raw.md were counted by an earlier run: read again, not counted " \
        "again" in report.changes


def test_a_cursor_whose_counted_keys_are_damaged_counts_none(state, identity) -> None:
    for n in range(5):
        note(state, f"note {n}")
    run(state, identity)
    cursor = state / "curator" / "cursor.json"
    keys = json.loads(cursor.read_text())["counted"]
    cursor.write_text(json.dumps({**json.loads(cursor.read_text()),
                                  "counted": [keys[0], [1, 2], ["only one"], "junk"]}))
    (state / "raw.md").write_text("hand edit\n" + (state / "raw.md").read_text())
    report = run(state, identity)
    assert report.processed == 5 and report.unparsed == 1  # only the well-formed pair counted


# --- a model's rewrite ------------------------------------------------------------------


def model_notes(state: Path) -> None:
    for n in range(3):
        note(state, "uv run pytest -x stops at the first failure", "TRICK", run=f"r{n}",
             feature=f"F-00{n + 1}")
    note(state, "db: use postgres 16", "DECISION", role="planner", feature="-")


def test_the_report_holds_the_rules_texts_a_dry_run_and_a_model_run_planned(state,
                                                                           identity) -> None:
    model_notes(state)
    dry = run(state, identity, dry_run=True)
    assert set(dry.planned) == {"summary.md", "MEMORY.md"} and "pytest -x" in dry.planned[
        "summary.md"]
    assert not (state / "summary.md").exists()
    shown = {}

    def refine(summary: str, memory: str, promotions: list) -> ModelResult:
        shown.update({"summary.md": summary, "MEMORY.md": memory})
        return ModelResult(summary.replace("\n- ", "\n- Lesson: ", 1), memory)

    report = run(state, identity, refine=refine)
    assert report.model == "accepted"
    # the rules' texts, as the model was shown them, not the model's rewrite that was written
    assert report.planned == dry.planned == shown
    assert (state / "summary.md").read_text() == shown["summary.md"].replace(
        "\n- ", "\n- Lesson: ", 1)


def test_a_refine_that_gives_a_reason_instead_of_an_answer_leaves_the_rules_texts(
        state, identity) -> None:
    model_notes(state)
    report = run(state, identity, refine=lambda summary, memory, promotions: "it timed out")
    assert report.model == "rejected: it timed out"
    assert (state / "summary.md").read_text() == report.planned["summary.md"]
    assert (state / "MEMORY.md").read_text() == report.planned["MEMORY.md"]
    assert [p.text for p in report.promoted] == ["uv run pytest -x stops at the first failure"]


# --- the benchmark's data, small -------------------------------------------------------


def test_benchmark_data_goes_through_with_nothing_lost(tmp_path) -> None:
    spec = importlib.util.spec_from_file_location("bench_curator", ROOT / "bench" / "curator.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    state, identity = tmp_path / "state", tmp_path / "identity"
    bench.generate(state, 3000)
    bench.seed_candidates(identity, 3000)
    appended = (state / "raw.md").read_text().split("\n")[:-1]
    started = time.perf_counter()
    report = run(state, identity)
    assert time.perf_counter() - started < 20
    assert report.processed == 3000 and report.promoted
    assert_no_loss(state, appended)
    assert_bounds(state)


def test_a_report_lists_the_first_promotions_and_counts_the_rest(tmp_path, identity) -> None:
    state = tmp_path / "state"
    state.mkdir()
    for n in range(60):  # 60 tricks, each from two workers
        for worker in (1, 2):
            note(state, f"tool{n} --flag{n} does thing {n}", "TRICK", feature=f"F-{worker:03d}",
                 run=f"r{n}-{worker}")
    report = run(state, identity)
    lines = report.describe().splitlines()
    assert len(report.promoted) == 60
    assert sum(line.startswith("promote to identity/worker.md: TRICK: ") for line in lines) == 50
    assert lines[-1] == "... and 10 more promotions"
    kept = (identity / "worker.md").read_text().count("\n- TRICK: ")
    archived = (identity / "archive" / "worker.md").read_text().count("\n- TRICK: ")
    assert kept + archived == 60 and len((identity / "worker.md").read_text()) <= 4000
