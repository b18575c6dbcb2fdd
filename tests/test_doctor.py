"""`doctor`: each check against real files and real subprocesses, and what it must not touch."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import unwritable

from harness.backends.cli_presets import unpriced_model
from harness.ops.checks import Check, doctor_exit_code, format_checks
from harness.ops.doctor import CRON_PATH, cron_checks, cron_env, diagnose
from harness.paths import Paths, resolve_paths

MODEL_ROLES = {"planner", "worker", "validator"}  # the curator runs rules-only by default


@pytest.fixture
def paths(state: Path, project: Path) -> Paths:
    return resolve_paths(str(state), str(project))


@pytest.fixture
def keyed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-doctor-test-0000000000000000")
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)


def failing(checks: list[Check]) -> dict[str, Check]:
    return {c.name: c for c in checks if not c.ok}


def script(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def snapshot(folder: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None
            for p in folder.rglob("*")}


@pytest.mark.parametrize("key", ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"])
def test_healthy_state_with_a_key_passes(paths: Paths, monkeypatch, key: str) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(key, "sk-ant-doctor-test-0000000000000000")
    checks = diagnose(paths, cron=False)
    assert failing(checks) == {} and doctor_exit_code(checks) == 0
    names = {c.name for c in checks}
    assert {f"template {r}" for r in ("planner", "worker", "validator", "curator")} <= names
    assert {f"backend {r}" for r in MODEL_ROLES} <= names
    assert format_checks(checks).endswith("all checks passed")


def test_without_a_key_each_model_role_fails_with_a_fix(paths: Paths, monkeypatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    checks = diagnose(paths, cron=False)
    bad = failing(checks)
    assert set(bad) == {f"backend {r}" for r in MODEL_ROLES}
    env_file = paths.state / "env"
    assert all(f"put ANTHROPIC_API_KEY=sk-ant-... in {env_file}" in c.fix for c in bad.values())
    assert doctor_exit_code(checks) == 2
    assert "FAIL  backend worker: anthropic: neither" in format_checks(checks)
    assert "      fix: put ANTHROPIC_API_KEY" in format_checks(checks)


def test_curator_in_model_mode_needs_its_backend(paths: Paths, state: Path, monkeypatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    with open(state / "config.yaml", "a") as f:
        f.write("curator: {mode: model}\n")
    assert "backend curator" in failing(diagnose(paths, cron=False))


@pytest.mark.parametrize("name, text, where, roles", [
    ("worker.md.j2", '{% extends "partials/layout.md.j2" %}\n{% block instructions %}\n'
     "Hi {{ no_such_thing }}\n{% endblock %}\n", "worker.md.j2 line 3", {"worker"}),
    ("worker.md.j2", "line one\n\n{% if %}\n", "worker.md.j2 line 3", {"worker"}),
    ("partials/summary.md.j2", "ok\n{{ summary.nope.deeper }}\n", "summary.md.j2 line 2",
     {"planner", "worker", "validator", "curator"}),
])
def test_broken_template_names_template_and_line(paths: Paths, state: Path, keyed, name: str,
                                                 text: str, where: str, roles: set[str]) -> None:
    (state / "templates" / name).parent.mkdir(parents=True)
    (state / "templates" / name).write_text(text)
    bad = failing(diagnose(paths, cron=False))
    assert set(bad) == {f"template {r}" for r in roles}
    assert all(where in c.detail and "template" in c.fix for c in bad.values())


def test_validator_template_is_rendered_with_evidence_too(paths: Paths, state: Path,
                                                          keyed) -> None:
    source = (paths.home / "templates" / "validator.md.j2").read_text()
    (state / "templates").mkdir()
    (state / "templates" / "validator.md.j2").write_text(
        source.replace("{{ verify.command }}", "{{ verify.no_such_key }}"))
    bad = failing(diagnose(paths, cron=False))
    assert set(bad) == {"template validator"} and "no_such_key" in bad["template validator"].detail


@pytest.mark.parametrize("content, message", [
    ('[{"id": "F-001",', "features.json line 1"),
    ('[{"id": "F-1", "title": "t", "description": "d", "acceptance_criteria": ["a"]}]', "'id'"),
])
def test_malformed_plan_is_reported_and_templates_still_render(
        paths: Paths, state: Path, keyed, content: str, message: str) -> None:
    (state / "features.json").write_text(content)
    bad = failing(diagnose(paths, cron=False))
    assert set(bad) == {"plan"} and message in bad["plan"].detail and bad["plan"].fix


def test_role_config_error_is_reported_with_file_and_key(paths: Paths, state: Path,
                                                         keyed) -> None:
    (state / "roles").mkdir()
    (state / "roles" / "worker.yaml").write_text("template: worker.md.j2\nbogus: 1\n")
    checks = diagnose(paths, cron=False)
    assert set(failing(checks)) == {"role worker"}
    assert "bogus" in failing(checks)["role worker"].detail
    assert not any(c.name in ("template worker", "backend worker") for c in checks)


def test_unwritable_state_dir_is_reported(paths: Paths, state: Path, keyed) -> None:
    with unwritable(state):
        checks = diagnose(paths, cron=False)
    bad = failing(checks)
    assert set(bad) == {"state"} and "not writable" in bad["state"].detail
    assert "chmod" in bad["state"].fix
    assert not [p for p in state.iterdir() if p.name.startswith(".doctor-")]


def test_missing_state_and_memory_files(tmp_path: Path, paths: Paths, state: Path,
                                        keyed) -> None:
    (state / "MEMORY.md").unlink()
    bad = failing(diagnose(paths, cron=False))
    assert set(bad) == {"MEMORY.md"} and "touch" in bad["MEMORY.md"].fix
    gone = failing(diagnose(resolve_paths(str(tmp_path / "nope"), str(tmp_path)), cron=False))
    assert "run.sh init" in gone["state"].fix


def test_empty_summary_warns_but_passes(paths: Paths, state: Path, keyed) -> None:
    (state / "summary.md").write_text("\n")
    checks = diagnose(paths, cron=False)
    assert doctor_exit_code(checks) == 0
    assert "warn  summary.md:" in format_checks(checks)
    assert "      fix: run.sh curator" in format_checks(checks)


def test_running_outside_the_harness_venv_is_reported(paths: Paths, tmp_path: Path) -> None:
    bad = failing(diagnose(paths._replace(home=tmp_path), cron=False))
    assert "run.sh" in bad["virtualenv"].fix


def test_command_backend_with_claude_on_path(paths: Paths, tmp_path: Path, monkeypatch) -> None:
    calls = tmp_path / "calls"
    script(tmp_path / "bin", "claude", f'echo "$1" >> {calls}\necho "2.1.0 (Claude Code)"\n')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    checks = diagnose(paths, "command", options={"preset": "claude"}, cron=False)
    assert failing(checks) == {}
    backends = [c for c in checks if c.name.startswith("backend ") and c.name != "backend curator"]
    assert len(backends) == 3 and all("2.1.0 (Claude Code)" in c.detail for c in backends)
    # asked once, not once per role: its version, and its login status
    assert calls.read_text() == "--version\nauth\n"


@pytest.mark.parametrize("body, message", [
    (None, "claude is not on PATH"),
    ("echo 'not logged in' >&2\nexit 3\n", "exited 3: not logged in"),
])
def test_command_backend_without_a_working_claude(paths: Paths, tmp_path: Path, monkeypatch,
                                                  body: str | None, message: str) -> None:
    if body is not None:
        script(tmp_path / "bin", "claude", body)
    (tmp_path / "bin").mkdir(exist_ok=True)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    bad = failing(diagnose(paths, "command", options={"preset": "claude"}, cron=False))
    assert set(bad) == {f"backend {r}" for r in MODEL_ROLES}
    assert message in bad["backend worker"].detail and "PATH" in bad["backend worker"].fix


def test_generic_command_without_a_command_line(paths: Paths) -> None:
    bad = failing(diagnose(paths, "command", cron=False))
    assert "needs a `command` option" in bad["backend worker"].detail


def test_scripted_backend_needs_its_file_and_is_flagged(paths: Paths, tmp_path: Path) -> None:
    bad = failing(diagnose(paths, "scripted", options={"script": "missing.yaml"}, cron=False))
    assert "missing.yaml" in bad["backend worker"].detail
    (tmp_path / "turns.yaml").write_text("- text: hi\n")
    checks = diagnose(paths, "scripted", options={"script": str(tmp_path / "turns.yaml")},
                      cron=False)
    assert failing(checks) == {}
    assert "tests and demos only" in format_checks(checks)
    assert "warn  backend worker" in format_checks(checks)


def test_diagnose_writes_nothing_into_the_state(paths: Paths, state: Path, monkeypatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    (state / "templates").mkdir()
    (state / "templates" / "worker.md.j2").write_text("{{ nope }}")
    before = snapshot(state)
    checks = diagnose(paths, cron=False)
    assert "template worker" in failing(checks) and "template validator" not in failing(checks)
    assert snapshot(state) == before


def test_cron_env_is_minimal_and_has_no_secrets(state: Path, monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-doctor-test-0000000000000000")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_" + "x" * 36)
    env = cron_env(state)
    assert set(env) == {"HOME", "LOGNAME", "SHELL", "PATH", "HARNESS_STATE"}
    assert env["PATH"] == CRON_PATH == "/usr/bin:/bin" and env["HARNESS_STATE"] == str(state)


def test_cron_check_reports_what_only_cron_lacks(paths: Paths, tmp_path: Path,
                                                monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-doctor-test-0000000000000000")
    fake = script(tmp_path / "bin", "doctor", 'echo "ok    python: fine"\n'
                  'echo "FAIL  env: PATH=$PATH key=${ANTHROPIC_API_KEY:-unset} cwd=$PWD"\n'
                  'echo "      fix: set it"\nexit 2\n')
    [check] = cron_checks(paths, [str(fake)], seen=[])
    assert check.name == "env (under cron)" and not check.ok
    assert check.detail == f"PATH={CRON_PATH} key=unset cwd={paths.workdir}"
    assert check.fix.startswith("set it; ") and "crontab" in check.fix


def test_cron_check_reads_format_checks_and_skips_known_problems(paths: Paths,
                                                                tmp_path: Path) -> None:
    printed = [Check("a", False, "first: with a colon", "fix a"), Check("b", True, "fine"),
               Check("c", False, "third\non two lines", "fix c")]
    (tmp_path / "out.txt").write_text(format_checks(printed) + "\n")
    fake = script(tmp_path / "bin", "doctor", f"cat {tmp_path / 'out.txt'}\nexit 2\n")
    found = cron_checks(paths, [str(fake)], seen=[])
    assert [(c.name, c.detail, c.fix.split(";")[0]) for c in found] == [
        ("a (under cron)", "first: with a colon", "fix a"),
        ("c (under cron)", "third on two lines", "fix c")]
    [same] = cron_checks(paths, [str(fake)], seen=[printed[0], Check("c", False,
                                                                   "third on two lines")])
    assert same.ok and "beyond those above" in same.detail


@pytest.mark.parametrize("body", ["echo 'env: python3: not found' >&2\nexit 127\n", None])
def test_cron_check_reports_a_doctor_that_cannot_run(paths: Paths, tmp_path: Path,
                                                     body: str | None) -> None:
    argv = [str(script(tmp_path, "doctor", body)) if body else str(tmp_path / "absent")]
    [check] = cron_checks(paths, argv, seen=[])
    assert not check.ok and check.name == "cron" and "env -i HOME=" in check.fix
    assert ("python3: not found" if body else "No such file") in check.detail


def test_key_only_in_the_interactive_shell_is_a_problem_under_cron(paths: Paths, keyed) -> None:
    bad = failing(diagnose(paths))
    assert set(bad) == {f"backend {r} (under cron)" for r in MODEL_ROLES}  # and none outside
    assert "ANTHROPIC_API_KEY" in bad["backend worker (under cron)"].detail
    assert "crontab" in bad["backend worker (under cron)"].fix


def test_a_role_whose_cost_cannot_be_known_under_a_budget_is_flagged(paths: Paths) -> None:
    # the example mission has a budget; Codex left to choose its model cannot be priced
    checks = {c.name: c for c in diagnose(paths, "command", options={"preset": "codex"},
                                          cron=False)}
    assert checks["prices worker"].warn
    assert "the CLI's choice has no price" in checks["prices worker"].detail
    # Claude Code reports its own cost; a named, priced OpenAI model is known
    checks = diagnose(paths, "command", options={"preset": "claude"}, cron=False)
    assert not [c for c in checks if c.name.startswith("prices")]
    assert unpriced_model("command", {"preset": "codex"}, "gpt-5-codex", {}) is None
    assert unpriced_model("anthropic", {}, "my-model", {}) == "my-model"
    assert unpriced_model("anthropic", {}, "my-model", {"default": {"input_tokens": 1}}) is None
