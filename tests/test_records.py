"""Records are honest: an offline run costs nothing unless its script says so, and a run
records the model that served it, not the role's (real run.sh subprocesses)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import git_init, run_sh

from harness.state import ledger

TOKENS = "  usage: {input_tokens: 200000, output_tokens: 10000}\n"


def last_manifest(state: Path) -> dict:
    folder = sorted((state / "runs").iterdir())[-1]
    return json.loads((folder / "manifest.json").read_text())


def test_a_scripted_run_costs_nothing_and_names_no_model(project: Path, state: Path,
                                                         tmp_path: Path) -> None:
    git_init(project)
    script = tmp_path / "script.yaml"
    script.write_text("- text: working\n" + TOKENS +
                      "- tools: [{name: finish, input: {summary: done}}]\n")
    result = run_sh("worker", "F-004", "--backend", "scripted", "--script", str(script),
                    cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    manifest = last_manifest(state)
    # the example's price table knows the role's model; no model served this run
    assert manifest["usage"]["input_tokens"] == 200000
    assert (manifest["cost_usd"], manifest["model"]) == (0, None)
    assert ledger.spent(state) == 0
    assert "cost=$0.0000" in (state / "progress.log").read_text().splitlines()[-1]
    shown = run_sh("show", manifest["run_id"], cwd=project)
    assert "backend scripted, model unknown" in shown.stdout


def test_a_script_that_gives_a_cost_is_charged_it(project: Path, state: Path,
                                                  tmp_path: Path) -> None:
    git_init(project)
    script = tmp_path / "script.yaml"
    script.write_text("- text: working\n" + TOKENS + "  cost_usd: 0.75\n"
                      "- tools: [{name: finish, input: {summary: done}}]\n")
    result = run_sh("worker", "F-004", "--backend", "scripted", "--script", str(script),
                    cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert last_manifest(state)["cost_usd"] == 0.75
    assert ledger.spent(state) == 0.75


def test_a_run_no_model_served_records_none_not_the_one_the_cli_set_out_with(
        project: Path, state: Path) -> None:
    fake = Path(__file__).parent / "fake_clis" / "claude.py"
    result = run_sh("worker", "F-004", "--backend", "command", "--preset", "claude",
                    "--command", f"python3 {fake} not_logged_in", cwd=project)
    assert result.returncode == 2, result.stdout + result.stderr
    manifest = last_manifest(state)
    # its start-up event named claude-opus-4-1, which served nothing; its argv named none
    assert manifest["model"] is None and manifest["turns"] == 0
