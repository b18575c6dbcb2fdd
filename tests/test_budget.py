"""A budget from the start: `run.sh init` writes a mission budget and a per-run cap, both
enforced; `doctor` is content with them."""

import json
import os
import subprocess
from pathlib import Path

import yaml
from conftest import HARNESS_VARS, ROOT, RUN_SH, git_init, run_sh
from fake_api import tool_use

CLAUDE_STAND_IN = ROOT / "tests" / "fake_clis" / "claude.py"


def test_init_writes_a_mission_budget_and_a_per_run_cap_saying_how_to_change_them(
        tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    result = run_sh("init", cwd=project)
    assert result.returncode == 0, result.stderr
    text = (project / ".harness" / "config.yaml").read_text()
    config = yaml.safe_load(text)
    assert (config["budget_usd"], config["run_budget_usd"]) == (20, 3)
    budget_line = next(line for line in text.splitlines() if line.startswith("budget_usd:"))
    assert "whole mission" in budget_line
    assert "Raise it here" in text and "change it here" in text
    doctor = run_sh("doctor", "--no-cron", cwd=project)
    assert "ok    budget: budget_usd: 20" in doctor.stdout


def test_the_missions_per_run_cap_stops_a_run(api, project: Path, state: Path) -> None:
    git_init(project)
    (state / "config.yaml").write_text(
        "budget_usd: 20\nrun_budget_usd: 0.5\nprices:\n  claude-sonnet-4-5: "
        "{input_tokens: 3, output_tokens: 15}\n")
    (state / "roles").mkdir()
    (state / "roles" / "worker.yaml").write_text(f"options: {{base_url: {api.base_url}}}\n")
    for _ in range(3):
        api.reply(tool_use("bash", {"command": "true"}), input=100_000)  # $0.30 a call
    result = run_sh("worker", "F-004", cwd=project)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "dollar cap reached" in result.stdout + result.stderr
    assert "of $0.5)" in result.stdout + result.stderr
    assert len(api.requests) == 2
    run = next(state.glob("runs/*-worker-F-004"))
    assert json.loads((run / "manifest.json").read_text())["cost_usd"] < 0.7
    (state / "config.yaml").write_text("run_budget_usd: 0\n")
    refused = run_sh("worker", "F-004", "--dry-run", cwd=project)
    assert refused.returncode == 2 and "run_budget_usd" in refused.stderr


def test_runs_at_once_share_one_mission_budget(project: Path, state: Path) -> None:
    """Two workers at once (worktrees), each under the budget, together may not pass it:
    before each model call a run counts what the others in progress have spent so far."""
    git_init(project)
    (state / "config.yaml").write_text("workspace: worktrees\nbudget_usd: 1\n")
    plan = json.loads((state / "features.json").read_text())
    for fid in ("F-004", "F-005"):
        if fid not in {f["id"] for f in plan}:
            plan.append({**plan[-1], "id": fid, "title": f"feature {fid}"})
        next(f for f in plan if f["id"] == fid).update(status="pending", attempts=0)
    (state / "features.json").write_text(json.dumps(plan))
    script = state / "worker-script.yaml"
    script.write_text("- tools: [{name: bash, input: {command: 'sleep 0.4'}}]\n"
                      "  cost_usd: 0.3\n" * 8 + "- tools: [{name: finish, input: {}}]\n")
    (state / "roles").mkdir()
    (state / "roles" / "worker.yaml").write_text(
        f"backend: scripted\noptions: {{script: {script}}}\n")
    env = {k: v for k, v in os.environ.items() if k not in HARNESS_VARS
           or k == "HARNESS_IDENTITY_DIR"}
    workers = [subprocess.Popen([str(RUN_SH), "worker", fid], cwd=project, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
               for fid in ("F-004", "F-005")]
    outputs = [w.communicate(timeout=120)[0] for w in workers]
    assert [w.returncode for w in workers] == [4, 4], outputs
    spent = json.loads((state / "spend.json").read_text())["usd"]
    assert spent <= 1 + 2 * 0.3, outputs  # at most the last call of each run past it (was 2.4)


def test_claude_code_is_given_what_is_left_of_the_mission_budget(project: Path, state: Path,
                                                                   tmp_path: Path) -> None:
    """An agent CLI's run is one model call to the harness: Claude Code gets the mission's
    budget left as its --max-budget-usd (it had only the run's cap, none by default), so
    one run at $19.95 of $20 could spend without a bound."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "claude").write_text(f'#!/bin/sh\nexec python3 "{CLAUDE_STAND_IN}" argv "$@"\n')
    (bindir / "claude").chmod(0o755)
    (state / "config.yaml").write_text("budget_usd: 20\ncommit: false\n")
    (state / "spend.json").write_text('{"usd": 19.95}')
    (state / "roles").mkdir()
    (state / "roles" / "worker.yaml").write_text("backend: command\noptions: {preset: claude}\n")
    env = {"PATH": f"{bindir}:{os.environ['PATH']}"}
    result = run_sh("worker", "F-004", cwd=project, env=env)
    run = next(state.glob("runs/*-worker-F-004"))
    argv = json.loads(json.loads((run / "manifest.json").read_text())["summary"])["argv"]
    assert argv[argv.index("--max-budget-usd") + 1] == "0.05", result.stdout + result.stderr
    assert json.loads((state / "spend.json").read_text())["usd"] > 20  # the stand-in's cost
    assert run_sh("worker", "F-004", cwd=project, env=env).returncode == 4
    (state / "config.yaml").write_text("budget_usd: 20\nrun_budget_usd: 0.01\ncommit: false\n")
    (state / "spend.json").write_text('{"usd": 19.95}')
    result = run_sh("worker", "F-004", cwd=project, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    run = max(state.glob("runs/*-worker-F-004*"), key=lambda p: p.name)
    argv = json.loads(json.loads((run / "manifest.json").read_text())["summary"])["argv"]
    assert argv[argv.index("--max-budget-usd") + 1] == "0.01"  # the lower of the two
