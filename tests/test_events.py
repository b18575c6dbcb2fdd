"""Each event of config.EVENTS fires at its moment, with its fields, through real run.sh
subprocesses and a hook that keeps what it is told: run.finished (a worker's run awaits
validation and names its commit), feature.failed (only on the last attempt), feature.blocked
(a stuck feature, with what it needs), merge.waiting, budget.exhausted (refused before a run
and spent during one), feature.done without mission.done while features remain.
(feature.blocked by the agent, mission.done, lesson.promoted: tests/test_hooks.py.)"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import git_init, run_sh
from test_worktrees import SHARED, make_mission

from harness.config import EVENTS

FINISH = "- tools: [{name: finish, input: {summary: done}}]\n"
WRITE = ("- tools: [{name: str_replace_based_edit_tool, input: {command: create, "
         "path: out.txt, file_text: \"x\\n\"}}]\n" + FINISH)
FAIL = "- tools: [{name: verdict, input: {verdict: fail, reason: no tests for --top}}]\n"
PASS = "- tools: [{name: verdict, input: {verdict: pass, reason: all criteria hold}}]\n"


def hook_every_event(state: Path, sink: Path) -> None:
    hooks = "".join(f"  {event}: cat >> {sink}\n" for event in EVENTS)
    with (state / "config.yaml").open("a") as config:
        config.write(f"hooks:\n{hooks}")


def fired(sink: Path) -> list[dict]:
    """The events told since the last call (the sink emptied)."""
    if not sink.exists():
        return []
    events = [json.loads(line) for line in sink.read_text().splitlines()]
    sink.unlink()
    return events


def role(project: Path, tmp_path: Path, name: str, fid: str, turns: str) -> int:
    script = tmp_path / f"{name}-{fid}.yaml"
    script.write_text(turns)
    result = run_sh(name, fid, "--backend", "scripted", "--script", str(script), cwd=project)
    return result.returncode


def edit_plan(state: Path, **statuses: str) -> None:
    plan = json.loads((state / "features.json").read_text())
    for f in plan:
        f.pop("verify", None)
        f["status"] = statuses.get(f["id"].replace("-", "_"), f["status"])
    (state / "features.json").write_text(json.dumps(plan))


def test_a_worker_run_finished_awaits_validation_and_names_its_commit(
        project: Path, tmp_path: Path) -> None:
    state, sink = project / ".harness", tmp_path / "events.jsonl"
    git_init(project)
    hook_every_event(state, sink)
    assert role(project, tmp_path, "worker", "F-004", WRITE) == 0
    (finished,) = fired(sink)
    assert finished["event"] == "run.finished" and finished["result"] == "awaits validation"
    assert finished["reason"].startswith("F-004 awaits validation; committed")
    manifest = json.loads(next((state / "runs").glob("*-worker-F-004/manifest.json"))
                          .read_text())
    assert finished["commit"] == manifest["commit"] and len(manifest["commit"]) == 40
    assert finished["run_id"] == manifest["run_id"] and finished["title"] == "--json output"


def test_feature_failed_fires_on_the_last_attempt_only(project: Path, tmp_path: Path) -> None:
    state, sink = project / ".harness", tmp_path / "events.jsonl"
    edit_plan(state, F_004="in_progress")
    with (state / "config.yaml").open("a") as config:
        config.write("max_attempts: 2\nstuck_after: 5\n")
    hook_every_event(state, sink)
    assert role(project, tmp_path, "validator", "F-004", FAIL) == 1
    assert [e["event"] for e in fired(sink)] == ["run.finished"]  # attempt 1 of 2: pending
    edit_plan(state, F_004="in_progress")
    assert role(project, tmp_path, "validator", "F-004", FAIL) == 1
    finished, failed = fired(sink)
    assert finished["verdict"] == "fail" and failed["event"] == "feature.failed"
    assert failed["attempts"] == 2 and failed["feature"] == "F-004"
    assert "no tests for --top" in failed["reason"]


def test_a_stuck_feature_fires_feature_blocked_saying_why(project: Path,
                                                          tmp_path: Path) -> None:
    state, sink = project / ".harness", tmp_path / "events.jsonl"
    git_init(project)
    with (state / "config.yaml").open("a") as config:
        config.write("stuck_after: 2\n")
    hook_every_event(state, sink)
    noop = "- tools: [{name: bash, input: {command: 'true'}}]\n" + FINISH
    assert role(project, tmp_path, "worker", "F-004", noop) == 0
    assert [e["event"] for e in fired(sink)] == ["run.finished"]
    assert role(project, tmp_path, "worker", "F-004", noop) == 7
    finished, blocked = fired(sink)
    assert finished["result"] == "blocked" and blocked["event"] == "feature.blocked"
    assert blocked["needs"] == blocked["reason"] == (
        "stuck: the last 2 worker runs changed nothing in the working tree")


def test_a_pass_whose_merge_waits_fires_merge_waiting(tmp_path: Path) -> None:
    project = make_mission(tmp_path, "worktrees")
    sink = tmp_path / "events.jsonl"
    hook_every_event(project / ".harness", sink)
    (project / "shared.txt").write_text(SHARED + "the person's uncommitted line\n")
    args = ("--backend", "scripted", "--script")
    assert run_sh("worker", "F-001", *args, str(tmp_path / "work.yaml"),
                  cwd=project).returncode == 0
    fired(sink)
    waiting = run_sh("validator", "F-001", *args, str(tmp_path / "pass.yaml"), cwd=project)
    assert waiting.returncode == 3, waiting.stderr
    finished, merge = fired(sink)
    assert finished["result"] == "merge-waiting" and merge["event"] == "merge.waiting"
    assert merge["feature"] == "F-001" and "its merge waits" in merge["reason"]
    assert "shared.txt" in merge["reason"]


def test_budget_exhausted_fires_when_a_run_spends_it_and_when_one_is_refused(
        project: Path, tmp_path: Path) -> None:
    state, sink = project / ".harness", tmp_path / "events.jsonl"
    with (state / "config.yaml").open("a") as config:
        config.write("budget_usd: 1.5\n")
    hook_every_event(state, sink)
    costly = ("- tools: [{name: bash, input: {command: 'true'}}]\n  cost_usd: 1.0\n") * 3
    assert role(project, tmp_path, "worker", "F-004", costly) == 4
    finished, spent = fired(sink)
    assert finished["exit_code"] == 4 and finished["result"] == "budget"
    assert spent["event"] == "budget.exhausted" and spent["exit_code"] == 4
    assert spent["feature"] == "F-004" and "mission budget $1.50 spent ($2.0000)" in spent[
        "reason"]
    assert spent["cost"] == 2.0  # what the run spent before the budget stopped it is kept
    assert json.loads((state / "spend.json").read_text()) == {"usd": 2.0}

    refused = run_sh("worker", "F-004", "--backend", "scripted", "--script",
                     str(tmp_path / "worker-F-004.yaml"), cwd=project)
    assert refused.returncode == 4 and "mission budget $1.50 is spent" in refused.stderr
    (told,) = fired(sink)  # no run began: no run.finished
    assert told["event"] == "budget.exhausted" and told["exit_code"] == 4
    assert told["reason"] == "mission budget $1.50 is spent"


def test_a_pass_with_features_left_is_feature_done_not_mission_done(
        project: Path, tmp_path: Path) -> None:
    state, sink = project / ".harness", tmp_path / "events.jsonl"
    edit_plan(state, F_003="in_progress")  # F-004 stays pending
    hook_every_event(state, sink)
    assert role(project, tmp_path, "validator", "F-003", PASS + FINISH) == 0
    assert [e["event"] for e in fired(sink)] == ["run.finished", "feature.done"]


def test_a_hook_that_changes_the_plan_changes_neither_the_exit_code_nor_the_events(
        project: Path, tmp_path: Path) -> None:
    """The feature's events say what the run did: a run.finished hook that rewrites the
    plan (here, leaves it half-written) made a pass exit 2, and feature.done never fired."""
    state, sink = project / ".harness", tmp_path / "events.jsonl"
    edit_plan(state, F_003="in_progress")
    with (state / "config.yaml").open("a") as config:
        config.write(f"hooks:\n  feature.done: cat >> {sink}\n  mission.done: cat >> {sink}\n"
                     f"  run.finished: [cat >> {sink}, \"echo '[' > {state / 'features.json'}\"]\n")
    assert role(project, tmp_path, "validator", "F-003", PASS + FINISH) == 0
    assert [e["event"] for e in fired(sink)] == ["run.finished", "feature.done"]


def test_a_pass_merged_in_worktrees_mode_fires_its_hooks_in_the_project(tmp_path: Path) -> None:
    """The merge removes the feature's worktree, where its hooks were started: run.finished,
    feature.done and mission.done could not start ('No such file or directory')."""
    project = make_mission(tmp_path, "worktrees")
    sink, where = tmp_path / "events.jsonl", tmp_path / "cwd.txt"
    with (project / ".harness" / "config.yaml").open("a") as config:
        config.write("hooks:\n" + "".join(f"  {event}: 'pwd >> {where}; cat >> {sink}'\n"
                                          for event in ("run.finished", "feature.done")))
    args = ("--backend", "scripted", "--script")
    assert run_sh("worker", "F-001", *args, str(tmp_path / "work.yaml"),
                  cwd=project).returncode == 0
    fired(sink)
    where.unlink()
    passed = run_sh("validator", "F-001", *args, str(tmp_path / "pass.yaml"), cwd=project)
    assert passed.returncode == 0, passed.stderr
    assert [e["event"] for e in fired(sink)] == ["run.finished", "feature.done"]
    assert where.read_text().split() == [str(project)] * 2
    assert "cannot start" not in (project / ".harness" / "hooks.log").read_text()
