"""`run.sh loop`: the worker and the validator (and the curator) until nothing is left, each
run a subprocess; waits on 3 and 6, stops on 2, 4 and 5, on --max-runs, --until and signals."""

import json
import os
import signal
import subprocess
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from conftest import ROOT, RUN_SH, git_init, run_sh

from harness.state.store import hold_lock, lock_path

CLAUDE_STAND_IN = ROOT / "tests" / "fake_clis" / "claude.py"
WORKER = "- tools: [{name: finish, input: {summary: done}}]\n"
SLOW_WORKER = ("- tools: [{name: bash, input: {command: 'sleep 30'}}]\n"
               "- tools: [{name: finish, input: {summary: done}}]\n")
VALIDATOR = ("- tools: [{name: verdict, input: {verdict: pass, reason: it works}}, "
             "{name: finish, input: {summary: passed}}]\n")


def scripted_roles(state: Path, worker: str = WORKER, validator: str = VALIDATOR) -> None:
    """The worker and validator replay these scripts (one-line role files over the shipped)."""
    (state / "roles").mkdir(exist_ok=True)
    for role, turns in (("worker", worker), ("validator", validator)):
        script = state / f"{role}-script.yaml"
        script.write_text(turns)
        (state / "roles" / f"{role}.yaml").write_text(
            f"backend: scripted\noptions: {{script: {script}}}\n")


def pending(state: Path, *ids: str) -> None:
    """These features pending, with no `verify` (the example project has no code for them)."""
    plan = json.loads((state / "features.json").read_text())
    for f in plan:
        f.pop("verify", None)
    for fid in ids:
        if fid not in {f["id"] for f in plan}:
            plan.append({**plan[-1], "id": fid, "title": f"feature {fid}"})
        next(f for f in plan if f["id"] == fid).update(status="pending", attempts=0)
    (state / "features.json").write_text(json.dumps(plan))


def statuses(state: Path) -> dict[str, str]:
    return {f["id"]: f["status"] for f in json.loads((state / "features.json").read_text())}


@pytest.fixture
def mission(project: Path, state: Path) -> Path:
    git_init(project)
    pending(state, "F-004", "F-005")
    scripted_roles(state)
    return state


def test_loop_works_and_validates_until_nothing_is_left(project: Path, mission: Path) -> None:
    result = run_sh("loop", cwd=project)
    assert result.returncode == 5, result.stdout + result.stderr
    assert statuses(mission) == {f"F-00{n}": "done" for n in range(1, 6)}
    lines = [line for line in result.stdout.splitlines() if line.startswith("loop: ")]
    assert [line.split(" (")[0] for line in lines] == [
        "loop: worker exit 0", "loop: validator exit 0", "loop: worker exit 0",
        "loop: validator exit 0", "loop: worker exit 5", "loop: validator exit 5",
        "loop: curator exit 0", "loop: nothing left: 5 done"]
    assert "(exit 5)" in result.stdout  # the normal end, said as such
    runs = sorted(p.name.split("-", 1)[1] for p in (mission / "runs").iterdir())
    assert runs == ["validator-F-004", "validator-F-005", "worker-F-004", "worker-F-005"]


def test_loop_stops_at_max_runs_and_names_what_is_left(project: Path, mission: Path) -> None:
    result = run_sh("loop", "--max-runs", "2", "--curator-every", "0", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "loop: --max-runs 2 reached (exit 0)" in result.stdout
    assert statuses(mission)["F-004"] == "done" and statuses(mission)["F-005"] == "pending"


def test_loop_ends_on_a_failed_feature_saying_how_to_retry_it(project: Path,
                                                              mission: Path) -> None:
    (mission / "config.yaml").write_text("max_attempts: 1\n")
    scripted_roles(mission, validator=VALIDATOR.replace("verdict: pass", "verdict: fail"))
    result = run_sh("loop", "--curator-every", "0", cwd=project)
    assert result.returncode == 5
    assert "nothing left: 3 done, 2 failed (F-004, F-005: run.sh retry FEATURE_ID)" in (
        result.stdout)


@pytest.mark.parametrize("limit", [[], ["--max-runs", "1"]])  # the last run allowed: no 0
@pytest.mark.parametrize(("setup", "code", "says"), [
    ("budget", 4, "worker exit 4: the budget is spent"),
    ("role", 2, "worker exit 2: a usage or state error"),
])
def test_loop_stops_on_2_and_4_with_that_code(project: Path, mission: Path, setup: str,
                                              code: int, says: str, limit: list[str]) -> None:
    if setup == "budget":
        (mission / "config.yaml").write_text("budget_usd: 1\n")
        (mission / "spend.json").write_text('{"usd": 1.5}')
    else:
        (mission / "roles" / "worker.yaml").write_text("temperture: 0.2\n")
    result = run_sh("loop", *limit, cwd=project)
    assert result.returncode == code, result.stdout + result.stderr
    assert says in result.stdout + result.stderr
    assert "validator" not in result.stdout  # stopped at once
    assert statuses(mission)["F-004"] == "pending"


def test_loop_waits_on_a_usage_limit_until_its_reset_time(project: Path, mission: Path) -> None:
    # the stand-in's limit reset (2026-01-01) has passed: the loop waits only its margin
    (mission / "roles" / "worker.yaml").write_text(
        f"backend: command\noptions: {{command: python3 {CLAUDE_STAND_IN} usage_limit}}\n")
    started = time.monotonic()
    result = run_sh("loop", "--max-runs", "2", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "worker exit 6 (the backend failed: an outage or a usage limit); its limit resets " \
           "at 2026-01-01T00:00:00Z; waiting 5s" in result.stdout
    assert time.monotonic() - started >= 5
    assert statuses(mission)["F-004"] == "pending"


def test_loop_backs_off_exponentially_on_an_outage_within_the_bound(project: Path,
                                                                    mission: Path) -> None:
    (mission / "roles" / "worker.yaml").write_text(
        f"backend: command\noptions: {{command: python3 {CLAUDE_STAND_IN} rate_limited}}\n")
    result = run_sh("loop", "--max-runs", "4", "--backoff", "1", "--max-backoff", "2",
                    cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    waits = [line.rsplit("waiting ", 1)[1] for line in result.stdout.splitlines()
             if "waiting" in line]
    assert waits == ["1s", "2s", "2s"]


def test_loop_backs_off_while_busy_and_stops_at_until(project: Path, mission: Path) -> None:
    until = (datetime.now(timezone.utc) + timedelta(seconds=8)).strftime("%Y-%m-%dT%H:%M:%SZ")
    with hold_lock(lock_path(mission, "worker-F-004")):
        result = run_sh("loop", "--until", until, "--backoff", "1", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "busy (exit 3: another run holds the lock); waiting 1s" in result.stdout
    assert "the wait would pass --until" in result.stdout or "reached" in result.stdout
    past = run_sh("loop", "--until", "2001-01-01T00:00Z", cwd=project)
    assert past.returncode == 0 and "--until 2001-01-01T00:00+00:00 reached" in past.stdout
    assert not list(mission.glob("runs/*"))
    assert run_sh("loop", "--until", "25:00", cwd=project).returncode == 2
    assert run_sh("loop", "--backoff", "0", cwd=project).returncode == 2  # it would spin


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_loop_and_its_running_role_cleanly(project: Path, mission: Path,
                                                              sig: signal.Signals) -> None:
    scripted_roles(mission, worker=SLOW_WORKER)
    loop = subprocess.Popen([str(RUN_SH), "loop"], cwd=project, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 30
    while not list(mission.glob("runs/*/transcript.jsonl")) and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(1)  # the agent's `sleep 30` is running
    loop.send_signal(sig)
    out, err = loop.communicate(timeout=30)
    assert loop.returncode == 128 + sig, out + err
    assert f"stopped by {sig.name}" in out + err
    manifest = json.loads(next(mission.glob("runs/*/manifest.json")).read_text())
    # recorded as a killed run is: its record closed, exit 143
    assert manifest["status"] == "interrupted" and manifest["exit_code"] == 143
    assert "validator" not in out  # no role started after the signal
    assert statuses(mission)["F-004"] == "pending"


def test_a_run_that_crashes_ends_that_run_not_the_loop(project: Path, mission: Path) -> None:
    scripted_roles(mission, worker=SLOW_WORKER)
    loop = subprocess.Popen([str(RUN_SH), "loop", "--max-runs", "2", "--backoff", "1"],
                            cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.time() + 30
    while not list(mission.glob("runs/*/transcript.jsonl")) and time.time() < deadline:
        time.sleep(0.1)
    first = json.loads(next(mission.glob("runs/*/manifest.json")).read_text())
    scripted_roles(mission)  # the next worker run finishes at once
    os.kill(first["pid"], signal.SIGKILL)  # the run dies as a crash would end it
    out, err = loop.communicate(timeout=60)
    assert loop.returncode == 0, out + err
    assert "worker exit 137, which no run gives (a crash?); waiting 1s" in out
    assert "--max-runs 2 reached" in out + err
    assert len(list(mission.glob("runs/*-worker-F-004*"))) == 2
    assert statuses(mission)["F-004"] == "in_progress"


def test_a_bug_in_the_loop_itself_is_no_clean_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    # a slot thread that raised (a reset time in year 9999 did) ended the loop with exit 0,
    # "stopped", which a shell loop or cron takes for a night that went well
    from harness.ops.loop import LoopOptions, Supervisor

    supervisor = Supervisor(Path("/nonexistent"), LoopOptions())

    def a_bug(slot: int) -> dict[str, int]:
        raise RuntimeError("a bug in a slot")

    monkeypatch.setattr(supervisor, "_round", a_bug)
    with pytest.raises(RuntimeError, match="a bug in a slot"):
        supervisor.run()
    assert supervisor.result is not None and supervisor.result[0] == 1


def test_a_second_loop_on_the_mission_is_busy_at_once(project: Path, mission: Path) -> None:
    with hold_lock(lock_path(mission, "loop")) as held:
        held.label("run.sh loop since then")
        result = run_sh("loop", cwd=project)
    assert result.returncode == 3 and "this mission's loop is locked" in result.stderr


def test_parallel_needs_worktrees_then_works_features_at_once(project: Path,
                                                              mission: Path) -> None:
    result = run_sh("loop", "--parallel", "2", cwd=project)
    assert result.returncode == 2
    assert "--parallel 2 needs `workspace: worktrees`" in result.stderr
    assert str(mission / "config.yaml") in result.stderr
    (mission / "config.yaml").write_text("workspace: worktrees\n")
    scripted_roles(mission, worker="- tools: [{name: bash, input: {command: 'sleep 3'}}]\n"
                   + WORKER)
    result = run_sh("loop", "--parallel", "2", "--curator-every", "0", cwd=project)
    assert result.returncode == 5, result.stdout + result.stderr
    assert statuses(mission)["F-004"] == statuses(mission)["F-005"] == "done"
    assert "loop[1]: worker exit 0" in result.stdout and "loop[2]: worker exit 0" in result.stdout
    spans = []
    for folder in mission.glob("runs/*-worker-*"):
        m = json.loads((folder / "manifest.json").read_text())
        spans.append((m["started_at"], m["finished_at"]))
    (a_start, a_end), (b_start, b_end) = sorted(spans)
    assert b_start < a_end  # the two workers ran at once


def test_waits_double_within_the_bound_and_last_until_a_reset_time() -> None:
    from harness.errors import UsageError
    from harness.ops.waits import backoff, parse_until, say_duration, until_reset

    assert [backoff(n, 30, 300) for n in range(1, 7)] == [30, 60, 120, 240, 300, 300]
    now = datetime(2026, 5, 1, 10, 0, tzinfo=timezone.utc)
    assert until_reset("2026-05-01T13:30:00Z", now) == 3.5 * 3600 + 5
    assert until_reset("2026-05-01T09:00:00Z", now) == 5  # passed: the margin only
    assert until_reset(None, now) is None and until_reset("soon", now) is None
    local = now.astimezone()
    later = parse_until(f"{(local.hour + 1) % 24:02d}:{local.minute:02d}", now)
    assert later - now == timedelta(hours=1)
    earlier = parse_until(f"{local.hour:02d}:{local.minute:02d}", now)
    assert earlier - now == timedelta(days=1)  # this minute has begun: the next one
    assert parse_until("2026-05-02T06:30Z", now) == datetime(2026, 5, 2, 6, 30,
                                                             tzinfo=timezone.utc)
    with pytest.raises(UsageError, match="HH:MM or an ISO-8601 time"):
        parse_until("tomorrow", now)
    assert [say_duration(s) for s in (4.6, 725, 10920)] == ["5s", "12m05s", "3h02m"]


def test_a_rounds_codes_say_go_on_wait_or_end() -> None:
    from harness.ops.waits import classify

    assert classify({"worker": 0, "validator": 1}) == "ran"
    assert classify({"worker": 5, "validator": 0}) == "ran"
    assert classify({"worker": 7, "validator": 5}) == "ran"
    assert classify({"worker": 5, "validator": 5}) == "nothing"
    assert classify({"worker": 3, "validator": 5}) == "busy"
    assert classify({"worker": 6}) == "failed"
    assert classify({"worker": 0, "validator": 6}) == "failed"  # 6 waits even after a run
    assert classify({"worker": 137, "validator": 5}) == "failed"  # killed: no code of ours
    assert classify({"worker": 1, "validator": 5}) == "failed"  # failed, left nothing: a crash
