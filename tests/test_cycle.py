"""The role cycle with the scripted backend: the harness, never the agent, moves status."""

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import git_init

from harness.errors import BusyError
from harness.paths import resolve_paths
from harness.run.runner import run_role
from harness.state.plan import load_plan
from harness.state.runs import load_manifest
from harness.state.store import hold_lock, lock_path


def script(tmp_path: Path, name: str, turns: list) -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(turns))
    return str(path)


def run(project: Path, role: str, target: str | None, script_file: str):
    paths = resolve_paths(str(project / ".harness"), str(project))
    return run_role(paths, role, target, backend="scripted",
                    backend_options={"script": script_file})


def status_of(state: Path, fid: str):
    return next(f for f in load_plan(state) if f.id == fid)


@pytest.fixture
def git_project(project: Path) -> Path:
    (project / "app.py").write_text("print('v1')\n")
    return git_init(project)


EDIT = [{"tools": [{"name": "str_replace_based_edit_tool",
                    "input": {"command": "create", "path": "json_out.py",
                              "file_text": "x = 1\n"}}]},
        {"tools": [{"name": "note", "input": {"kind": "TRICK", "text": "json.dumps is enough"}},
                   {"name": "finish", "input": {"summary": "added json_out.py"}}]}]


def test_worker_leaves_feature_in_progress_and_commits_its_work(git_project: Path,
                                                                tmp_path: Path) -> None:
    state = git_project / ".harness"
    result = run(git_project, "worker", "F-004", script(tmp_path, "w", EDIT))
    assert result.exit_code == 0, result.message
    assert status_of(state, "F-004").status == "in_progress"
    log = subprocess.run(["git", "log", "-1", "--format=%s", "--name-only"], cwd=git_project,
                         capture_output=True, text=True).stdout
    assert log.startswith(f"F-004: --json output (run {result.run_id})")
    assert "json_out.py" in log and ".harness" not in log
    last_note = (state / "raw.md").read_text().splitlines()[-1]
    assert last_note.endswith(f"TRICK: json.dumps is enough (run {result.run_id})")
    progress = (state / "progress.log").read_text().splitlines()[-1]
    assert f"worker F-004 {result.run_id} in_progress exit=0" in progress
    manifest = load_manifest(state, result.run_id)
    assert manifest["status"] == "finished" and manifest["commit"]


def test_worker_that_changes_nothing_commits_nothing(git_project: Path, tmp_path: Path) -> None:
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=git_project, capture_output=True,
                          text=True).stdout
    turns = [{"tools": [{"name": "finish", "input": {"summary": "nothing to change"}}]}]
    result = run(git_project, "worker", "F-004", script(tmp_path, "w", turns))
    assert result.exit_code == 0 and "no changes to commit" in result.message
    assert subprocess.run(["git", "rev-parse", "HEAD"], cwd=git_project, capture_output=True,
                          text=True).stdout == head


def test_worker_that_hits_its_turn_cap_exits_1_and_keeps_partial_work(git_project: Path,
                                                                     tmp_path: Path) -> None:
    state = git_project / ".harness"
    (state / "roles").mkdir()
    (state / "roles" / "worker.yaml").write_text(
        "template: worker.md.j2\ntools: [str_replace_based_edit_tool, note, finish]\n"
        "caps: {turns: 1}\n")
    result = run(git_project, "worker", "F-004", script(tmp_path, "w", EDIT))
    assert result.exit_code == 1
    assert status_of(state, "F-004").status == "in_progress"
    subject = subprocess.run(["git", "log", "-1", "--format=%s"], cwd=git_project,
                             capture_output=True, text=True).stdout
    assert "[partial: capped]" in subject


def verdict_turns(verdict: str | None, reason: str = "because") -> list:
    tools = []
    if verdict:
        tools = [{"name": "verdict", "input": {"verdict": verdict, "reason": reason}}]
    return [{"tools": tools + [{"name": "finish", "input": {"summary": "judged"}}]}]


def set_verify(state: Path, fid: str, command: str | None) -> None:
    plan = json.loads((state / "features.json").read_text())
    for f in plan:
        if f["id"] == fid:
            f["verify"] = command
            f["status"] = "in_progress"
    (state / "features.json").write_text(json.dumps(plan))


def test_validator_pass_makes_done_and_writes_the_ledger(project: Path, tmp_path: Path) -> None:
    state = project / ".harness"
    set_verify(state, "F-004", "true")
    result = run(project, "validator", "next", script(tmp_path, "v", verdict_turns("pass", "ok")))
    assert result.exit_code == 0, result.message
    assert status_of(state, "F-004").status == "done"
    entry = json.loads((state / "ledger" / "F-004.jsonl").read_text().splitlines()[-1])
    assert (entry["run_id"], entry["verdict"], entry["reason"], entry["verify_exit"]) == (
        result.run_id, "pass", "ok", 0)


def test_validator_fail_counts_an_attempt_then_fails_at_the_cap(project: Path,
                                                                tmp_path: Path) -> None:
    state = project / ".harness"
    reasons = ["no total line", "the --top key is missing entirely", "README was not updated"]
    for attempt in (1, 2, 3):
        set_verify(state, "F-004", None)
        fail = script(tmp_path, f"v{attempt}", verdict_turns("fail", reasons[attempt - 1]))
        result = run(project, "validator", "F-004", fail)
        assert result.exit_code == 1
        feature = status_of(state, "F-004")
        assert feature.attempts == attempt
        assert feature.status == ("failed" if attempt == 3 else "pending")
    from harness.errors import BudgetError

    with pytest.raises(BudgetError, match="attempt cap"):  # the CLI turns this into exit 4
        run(project, "worker", "F-004", fail)


def test_no_verdict_counts_as_fail_with_the_reason(project: Path, tmp_path: Path) -> None:
    state = project / ".harness"
    set_verify(state, "F-004", None)
    result = run(project, "validator", "F-004", script(tmp_path, "v", verdict_turns(None)))
    assert result.exit_code == 1
    entry = json.loads((state / "ledger" / "F-004.jsonl").read_text().splitlines()[-1])
    assert entry["verdict"] == "fail" and "no verdict" in entry["reason"]


def test_failing_verify_overrides_a_pass_and_reaches_the_prompt(project: Path,
                                                                tmp_path: Path) -> None:
    state = project / ".harness"
    set_verify(state, "F-004", "echo 3 tests, 1 failed; exit 3")
    result = run(project, "validator", "F-004", script(tmp_path, "v", verdict_turns("pass")))
    assert result.exit_code == 1
    assert status_of(state, "F-004").status == "pending"
    entry = json.loads((state / "ledger" / "F-004.jsonl").read_text().splitlines()[-1])
    assert entry["verdict"] == "fail" and "exited 3" in entry["reason"]
    prompt = (state / "runs" / result.run_id / "prompt.md").read_text()
    assert "exited 3" in prompt and "3 tests, 1 failed" in prompt


def test_the_next_worker_sees_the_failed_verdict(project: Path, tmp_path: Path) -> None:
    state = project / ".harness"
    set_verify(state, "F-004", None)
    run(project, "validator", "F-004", script(tmp_path, "v", verdict_turns("fail", "UNIQUE-R")))
    result = run(project, "worker", "F-004", script(tmp_path, "w", EDIT))
    prompt = (state / "runs" / result.run_id / "prompt.md").read_text()
    assert "FAIL" in prompt and "UNIQUE-R" in prompt.split("## Earlier verdicts")[1]


def test_planner_invalid_proposal_changes_nothing_and_tells_the_agent(project: Path,
                                                                      tmp_path: Path) -> None:
    state = project / ".harness"
    before = (state / "features.json").read_bytes()
    bad = [{"id": "F-1", "title": "t", "description": "d", "acceptance_criteria": ["a"]}]
    good = [{"id": "F-009", "title": "t", "description": "d", "acceptance_criteria": ["a"]}]
    turns = [{"tools": [{"name": "plan", "input": {"features": bad}}]},
             {"tools": [{"name": "finish", "input": {"summary": "gave up"}}]}]
    result = run(project, "planner", None, script(tmp_path, "p", turns))
    assert (state / "features.json").read_bytes() == before
    transcript = (state / "runs" / result.run_id / "transcript.jsonl").read_text()
    assert "does not match" in transcript
    turns[0]["tools"][0]["input"]["features"] = good
    assert run(project, "planner", None, script(tmp_path, "p2", turns)).exit_code == 0
    ids = [f.id for f in load_plan(state)]
    assert ids[0] == "F-009" and set(ids) == {"F-001", "F-002", "F-003", "F-004", "F-009"}
    assert status_of(state, "F-001").status == "done"


def test_a_held_lock_gives_busy_without_a_model_call(project: Path, tmp_path: Path) -> None:
    state = project / ".harness"
    runs_before = set((state / "runs").iterdir()) if (state / "runs").exists() else set()
    with hold_lock(lock_path(state, "worker-F-004")):
        with pytest.raises(BusyError):
            run(project, "worker", "F-004", script(tmp_path, "w", EDIT))
    assert (set((state / "runs").iterdir()) if (state / "runs").exists() else set()) == runs_before
    # once the lock is released the same run goes ahead
    assert run(project, "worker", "F-004", script(tmp_path, "w", EDIT)).exit_code == 0


def test_mission_budget_spent_exits_4_before_any_call(project: Path, tmp_path: Path) -> None:
    state = project / ".harness"
    (state / "spend.json").write_text('{"usd": 25.0}')  # the example's budget is $20
    result_paths = resolve_paths(str(state), str(project))
    from harness.errors import BudgetError

    with pytest.raises(BudgetError):
        run_role(result_paths, "worker", "F-004", backend="scripted",
                 backend_options={"script": script(tmp_path, "w", EDIT)})


def test_costs_a_script_gives_add_up_to_the_mission_spend(project: Path,
                                                          tmp_path: Path) -> None:
    state = project / ".harness"
    turns = [{"usage": {"input_tokens": 1_000_000, "output_tokens": 100_000}, "cost_usd": 4.5,
              "tools": [{"name": "finish", "input": {"summary": "s"}}]}]
    result = run(project, "worker", "F-004", script(tmp_path, "w", turns))
    manifest = load_manifest(state, result.run_id)
    # the script's own cost; its tokens are not priced as the role's model (sonnet here)
    assert manifest["cost_usd"] == pytest.approx(4.5)
    assert manifest["usage"]["input_tokens"] == 1_000_000
    assert json.loads((state / "spend.json").read_text())["usd"] == pytest.approx(4.5)


def test_same_failure_reason_n_times_blocks_the_feature(project: Path, tmp_path: Path) -> None:
    state = project / ".harness"
    (state / "config.yaml").write_text("max_attempts: 10\nstuck_after: 3\ncommit: false\n")
    codes = []
    for n in range(3):
        set_verify(state, "F-004", None)
        reason = f"the total line is not JSON{'.' * n}"  # the same reason, slightly reworded
        codes.append(run(project, "validator", "F-004",
                         script(tmp_path, f"v{n}", verdict_turns("fail", reason))).exit_code)
    assert codes == [1, 1, 7]
    feature = status_of(state, "F-004")
    assert feature.status == "blocked"
    assert "same validator failure 3 times" in feature.blocked_reason
    paths = resolve_paths(str(state), str(project))
    from harness.errors import BlockedError, NothingToDo

    with pytest.raises(BlockedError):
        run_role(paths, "worker", "F-004", dry_run=True)
    (state / "features.json").write_text(
        (state / "features.json").read_text().replace('"done"', '"failed"'))
    with pytest.raises(NothingToDo):  # `worker next` skips blocked features
        run_role(paths, "worker", "next", dry_run=True)


def test_worker_runs_that_change_nothing_block_the_feature(git_project: Path,
                                                           tmp_path: Path) -> None:
    state = git_project / ".harness"
    idle = script(tmp_path, "idle", [{"tools": [{"name": "finish", "input": {"summary": "hm"}}]}])
    codes = [run(git_project, "worker", "F-004", idle).exit_code for _ in range(3)]
    assert codes == [0, 0, 7]
    assert "changed nothing" in status_of(state, "F-004").blocked_reason


def test_agent_can_finish_blocked_waiting_on_a_person(project: Path, tmp_path: Path) -> None:
    state = project / ".harness"
    turns = [{"tools": [{"name": "finish", "input": {
        "summary": "cannot go on", "status": "blocked", "needs": "add STRIPE_KEY to .env"}}]}]
    result = run(project, "worker", "F-004", script(tmp_path, "b", turns))
    assert result.exit_code == 7
    feature = status_of(state, "F-004")
    assert feature.status == "blocked" and "add STRIPE_KEY to .env" in feature.blocked_reason


def test_an_agents_shell_can_call_run_sh_for_its_own_run(project: Path, tmp_path: Path) -> None:
    state = project / ".harness"
    turns = [{"tools": [{"name": "bash", "input": {"command": "run.sh note TRICK from the shell"}},
                        {"name": "finish", "input": {"summary": "s"}}]}]
    result = run(project, "worker", "F-004", script(tmp_path, "sh", turns))
    assert result.exit_code == 0
    last = (state / "raw.md").read_text().splitlines()[-1]
    assert last.endswith(f"worker F-004 TRICK: from the shell (run {result.run_id})")


def test_an_unexpected_backend_exception_surfaces_and_the_record_is_finished(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.run.lifecycle

    class Broken:
        def run(self, prompt, session):
            raise RuntimeError("boom in the backend")

    monkeypatch.setattr(harness.run.lifecycle, "load_backend", lambda name: Broken())
    state = project / ".harness"
    with pytest.raises(RuntimeError, match="boom in the backend"):
        run(project, "worker", "F-004", "unused.yaml")
    manifest = json.loads(next(state.glob("runs/*/manifest.json")).read_text())
    assert manifest["status"] == "finished" and manifest["exit_code"] == 1
    assert "RuntimeError: boom in the backend" in manifest["error"]
    assert status_of(state, "F-004").status == "pending"  # not the agent's attempt
