"""A budget from the start: `run.sh init` writes a mission budget and a per-run cap, both
enforced; `doctor` is content with them."""

import json
import subprocess
from pathlib import Path

import yaml
from conftest import git_init, run_sh
from fake_api import tool_use


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
