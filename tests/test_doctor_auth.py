"""`doctor` proves each role's backend can authenticate, in the environment a run has: the
Messages API's free count_tokens call for the API backend and for a key Claude Code is given,
the CLI's own login status otherwise (stand-in CLIs on PATH; the real ones in
tests/test_real_clis.py); a refusal fails naming the variable and the file."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from conftest import run_sh
from fake_api import FakeAPI

from harness.ops.checks import Check
from harness.ops.doctor import diagnose
from harness.paths import Paths, resolve_paths

FAKES = Path(__file__).parent / "fake_clis"


@pytest.fixture
def paths(state: Path, project: Path) -> Paths:
    return resolve_paths(str(state), str(project))


def on_path(monkeypatch: pytest.MonkeyPatch, folder: Path, name: str, stand_in: str) -> None:
    """`name` on PATH, running the stand-in CLI."""
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKES / stand_in}" '
                               '"$@" </dev/null\n')
    (folder / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")


def auth(checks: list[Check], role: str = "worker") -> Check:
    return next(c for c in checks if c.name == f"auth {role}")


def test_the_api_backends_key_and_model_are_proved_by_a_free_call(
        api: FakeAPI, paths: Paths, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
    api.keys, api.models = {"test-key"}, {"claude-sonnet-4-5"}
    check = auth(diagnose(paths, cron=False))
    assert check.ok and not check.warn and "takes the key in ANTHROPIC_API_KEY" in check.detail
    assert len(api.counted) == 1 and len(api.requests) == 1  # one free call for 3 roles
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-revoked")
    check = auth(diagnose(paths, cron=False))
    assert not check.ok and "refused the key in ANTHROPIC_API_KEY (401)" in check.detail
    assert str(paths.state / "env") in check.fix
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    api.models = {"claude-opus-4-1"}
    check = auth(diagnose(paths, cron=False))
    assert not check.ok and "does not know model 'claude-sonnet-4-5'" in check.detail
    assert str(paths.state / "roles" / "worker.yaml") in check.fix


def test_an_unreachable_api_proves_nothing_and_warns(paths: Paths,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-x")
    check = auth(diagnose(paths, cron=False))  # the tests' API address: nothing listens
    assert check.ok and check.warn and "could not check the key" in check.detail


def test_claude_code_not_given_the_exported_key_fails_naming_pass_env_and_the_file(
        paths: Paths, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    on_path(monkeypatch, tmp_path / "bin", "claude", "claude.py")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-exported")
    # a role that passes no key (without pass_env the preset would pass the exported one)
    options = {"preset": "claude", "pass_env": []}
    check = auth(diagnose(paths, "command", options=options, cron=False))
    assert not check.ok and "claude: not logged in" in check.detail
    assert check.fix == ("ANTHROPIC_API_KEY is set but not passed to the CLI: add `options: "
                         f"{{pass_env: [ANTHROPIC_API_KEY]}}` to {paths.state}/roles/worker.yaml"
                         "; or log the CLI in (`claude login`; for cron `claude setup-token` "
                         "gives CLAUDE_CODE_OAUTH_TOKEN) as the user the harness runs as")


def test_a_key_claude_code_is_given_is_proved_by_the_free_call(
        api: FakeAPI, paths: Paths, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    on_path(monkeypatch, tmp_path / "bin", "claude", "claude.py")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
    api.keys = {"test-key"}
    options = {"preset": "claude", "pass_env": ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"]}
    check = auth(diagnose(paths, "command", options=options, cron=False))
    assert check.ok and "claude: the API takes the key in ANTHROPIC_API_KEY" in check.detail
    api.keys = {"another"}
    check = auth(diagnose(paths, "command", options=options, cron=False))
    assert not check.ok and "claude: the Anthropic API refused the key" in check.detail


def test_codex_login_status_is_asked_in_the_runs_environment(
        paths: Paths, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    on_path(monkeypatch, tmp_path / "bin", "codex", "codex.py")
    home = tmp_path / "codex-home"
    home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(home))
    check = auth(diagnose(paths, "command", options={"preset": "codex"}, cron=False))
    assert not check.ok and "codex: not logged in" in check.detail
    assert "`codex login`" in check.fix and "OPENAI_API_KEY" in check.fix
    (home / "auth.json").write_text("{}")
    check = auth(diagnose(paths, "command", options={"preset": "codex"}, cron=False))
    assert check.ok and "Logged in using ChatGPT" in check.detail


def test_run_sh_doctor_fails_for_a_claude_role_that_cannot_authenticate(
        project: Path, state: Path, tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "claude").write_text(
        f'#!/bin/sh\nexec "{sys.executable}" "{FAKES / "claude.py"}" "$@" </dev/null\n')
    (tmp_path / "bin" / "claude").chmod(0o755)
    env = {"PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}",
           "ANTHROPIC_API_KEY": "", "ANTHROPIC_AUTH_TOKEN": "", "HOME": str(tmp_path)}
    result = run_sh("doctor", "--no-cron", "--backend", "command", "--preset", "claude",
                    cwd=project, env=env)
    assert result.returncode == 2, result.stdout
    assert "FAIL  auth worker: claude: not logged in" in result.stdout
    assert f"`ANTHROPIC_API_KEY=...` in {state / 'env'}" in result.stdout
