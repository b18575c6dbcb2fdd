"""Config values are range-checked where they are loaded, naming the file and the key
(issue 31, point 4): a negative prompt cap used to drop the feature's description."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.app import cli


def invoke(state: Path, *args: str):
    return CliRunner().invoke(cli, ["--state", str(state), "--workdir", str(state.parent), *args])


@pytest.mark.parametrize("config, key", [
    ("prompt: {feature_chars: -1}", "prompt.feature_chars"),
    ("prompt: {summary_chars: 0}", "prompt.summary_chars"),
    ("prompt: {raw_entries: -3}", "prompt.raw_entries"),
    ("prompt: {ledger_entries: 10000000}", "prompt.ledger_entries"),
    ("max_attempts: 0", "max_attempts"),
    ("stuck_after: -2", "stuck_after"),
    ("budget_usd: -5", "budget_usd"),
    ("budget_usd: .inf", "budget_usd"),
    ("prices: {m: {input_tokens: -3}}", "prices.m.input_tokens"),
    # a hook never fired, and only hooks.log said why
    ("hook_timeout: .inf", "hook_timeout"),
    ("hook_timeout: 1e308", "hook_timeout"),
])
def test_out_of_range_mission_config_is_a_usage_error(state: Path, config: str,
                                                      key: str) -> None:
    (state / "config.yaml").write_text(config + "\n")
    result = invoke(state, "worker", "F-004", "--dry-run")
    assert result.exit_code == 2
    assert f"config.yaml: key '{key}'" in result.output
    assert not (state / "runs").exists()


@pytest.mark.parametrize("role_yaml, key", [
    ("caps: {turns: 0}", "caps.turns"),
    ("caps: {wall_seconds: -1}", "caps.wall_seconds"),
    ("caps: {wall_seconds: .nan}", "caps.wall_seconds"),
    ("caps: {bash_timeout: 0}", "caps.bash_timeout"),
    ("caps: {bash_timeout: 1.0e+300}", "caps.bash_timeout"),
    ("caps: {dollars: -1}", "caps.dollars"),
    ("caps: {max_tokens: 0}", "caps.max_tokens"),
    ("caps: {output_chars: -5}", "caps.output_chars"),
    ("options: {verify_timeout: -1}", "options"),
    ("options: {verify_timeout: forever}", "options"),
    ("options: {max_retries: 2.5}", "options"),
    ("options: {timeout: .inf}", "options"),
])
def test_out_of_range_role_config_is_a_usage_error(state: Path, role_yaml: str,
                                                   key: str) -> None:
    (state / "roles").mkdir()
    (state / "roles" / "worker.yaml").write_text(f"template: worker.md.j2\n{role_yaml}\n")
    result = invoke(state, "worker", "F-004", "--dry-run")
    assert result.exit_code == 2
    assert f"roles/worker.yaml: key '{key}'" in result.output


def test_a_verify_timeout_in_range_is_taken(state: Path) -> None:
    (state / "roles").mkdir()
    (state / "roles" / "validator.yaml").write_text(
        "template: validator.md.j2\noptions: {verify_timeout: 30, max_retries: 0}\n")
    assert invoke(state, "validator", "F-004", "--dry-run").exit_code == 0


def test_an_unknown_tool_is_refused_before_any_run_is_recorded(state: Path) -> None:
    (state / "roles").mkdir()
    (state / "roles" / "worker.yaml").write_text("template: worker.md.j2\ntools: [cash, note]\n")
    result = invoke(state, "worker", "F-004", "--dry-run")
    assert result.exit_code == 2 and "roles/worker.yaml: key 'tools'" in result.output
    assert "'cash'" in result.output and not (state / "runs").exists()


def test_the_known_tools_are_the_tools_there_are() -> None:
    from harness.agent.tools import TOOL_SPECS
    from harness.config import TOOLS

    assert set(TOOLS) == set(TOOL_SPECS)
