"""Exit codes tell a loop what to do, for every backend (real run.sh subprocesses): what a
person must fix (a missing or refused key, a CLI not logged in, a variable not passed, an
unknown model, a CLI not installed) is 2, naming the variable or setting and the file;
only an outage, an overload or a usage limit is 6."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_sh
from fake_api import FakeAPI, text

FAKES = Path(__file__).parent / "fake_clis"
NO_KEYS = {"ANTHROPIC_API_KEY": "", "ANTHROPIC_AUTH_TOKEN": "", "OPENAI_API_KEY": "",
           "CODEX_API_KEY": "", "CLAUDE_CODE_OAUTH_TOKEN": ""}


def feature(state: Path, fid: str = "F-004") -> dict:
    return next(f for f in json.loads((state / "features.json").read_text()) if f["id"] == fid)


def test_no_api_key_is_exit_2_naming_the_variable_and_the_files(
        project: Path, state: Path, tmp_path: Path) -> None:
    result = run_sh("worker", "F-004", cwd=project, env={**NO_KEYS, "HOME": str(tmp_path)})
    assert result.returncode == 2, result.stdout + result.stderr
    said = result.stdout + result.stderr
    assert "ANTHROPIC_API_KEY is not set" in said
    assert str(state / "env") in said and ".config/autonomous-harness/env" in said
    assert feature(state) == {**feature(state), "status": "pending", "attempts": 0}


@pytest.mark.parametrize(("status", "kind", "message", "code", "says"), [
    (401, "authentication_error", "invalid x-api-key", 2,
     "refused the key in ANTHROPIC_API_KEY"),
    (403, "permission_error", "this key may not use this model", 2, "may not do this"),
    (404, "not_found_error", "model: claude-sonnet-4-5", 2, "roles/worker.yaml"),
    (500, "api_error", "Internal server error", 6, "overloaded or failing (500)"),
    (529, "overloaded_error", "Overloaded", 6, "overloaded or failing (529)"),
    (429, "rate_limit_error", "Number of request tokens has exceeded your limit", 6,
     "rate limited"),
])
def test_the_api_backends_failures_map_to_the_contract(
        api: FakeAPI, project: Path, state: Path, status: int, kind: str, message: str,
        code: int, says: str) -> None:
    api.error(status, kind, message, headers={"x-should-retry": "false"})
    result = run_sh("worker", "F-004", cwd=project, env={"ANTHROPIC_BASE_URL": api.base_url})
    assert result.returncode == code, result.stdout + result.stderr
    assert says in result.stdout + result.stderr
    assert feature(state)["attempts"] == 0 and feature(state)["status"] == "pending"


def test_a_key_the_api_takes_runs(api: FakeAPI, project: Path) -> None:
    api.reply(text("Nothing to do."))
    result = run_sh("worker", "F-004", cwd=project, env={"ANTHROPIC_BASE_URL": api.base_url})
    assert result.returncode == 0, result.stdout + result.stderr


def test_claude_not_logged_in_with_its_key_exported_names_pass_env_and_the_role_file(
        project: Path, state: Path) -> None:
    command = f"python3 {FAKES / 'claude.py'} not_logged_in"
    args = ("worker", "F-004", "--backend", "command", "--preset", "claude",
            "--command", command)
    result = run_sh(*args, cwd=project, env={**NO_KEYS, "ANTHROPIC_API_KEY": "sk-ant-x"})
    assert result.returncode == 2, result.stdout + result.stderr
    said = " ".join((result.stdout + result.stderr).split())
    assert "Not logged in" in said
    assert ("ANTHROPIC_API_KEY is set but not passed to the CLI: add `options: {pass_env: "
            f"[ANTHROPIC_API_KEY]}}` to {state / 'roles' / 'worker.yaml'}") in said
    # no key anywhere: log in, or put the key in an env file and pass it
    result = run_sh(*args, cwd=project, env=NO_KEYS)
    said = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 2 and "`claude login`" in said
    assert f"put the line `ANTHROPIC_API_KEY=...` in {state / 'env'}" in said
    assert feature(state)["attempts"] == 0


def test_an_agent_cli_that_is_not_installed_is_exit_2(project: Path, tmp_path: Path) -> None:
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "bash").symlink_to("/bin/bash")
    result = run_sh("worker", "F-004", "--backend", "command", "--preset", "codex",
                    cwd=project, env={"PATH": str(folder)})
    assert result.returncode == 2, result.stdout + result.stderr
    assert "cannot run agent CLI 'codex'" in result.stderr and "PATH" in result.stderr
