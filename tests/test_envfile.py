"""Secrets a cron job can find: the env files, their precedence and permissions; doctor's cron
check passing on them; `run.sh cron`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import CLOSED_URL, RUN_SH, run_sh

from harness.errors import UsageError
from harness.state.envfile import load_env_files, parse_env, read_env_file

KEY = "ANTHROPIC_API_KEY"
CANARY = "canary-deploy-secret-from-file-0042"


def write_secret(path: Path, text: str, mode: int = 0o600) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder of our own, and os.environ restored whatever the files add to it."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    for name in (KEY, "DEPLOY_SECRET", "OTHER"):
        monkeypatch.setenv(name, "")  # recorded, so the undo removes what a load sets
        monkeypatch.delenv(name)
    return folder


def test_parse_takes_export_quotes_and_comments() -> None:
    text = "# keys\nexport A=1\nB='two words'\n\nC=\"x=y\"\nD=\n"
    assert parse_env(text, Path("f")) == {"A": "1", "B": "two words", "C": "x=y", "D": ""}
    with pytest.raises(UsageError, match=r"^f line 2: expected KEY=value$"):
        parse_env("A=1\nnot a pair\n", Path("f"))


def test_state_file_wins_over_the_users_and_the_environment_over_both(
        home: Path, state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = write_secret(home / ".config/autonomous-harness/env", f"{KEY}=user\nOTHER=user\n")
    write_secret(state / "env", f"{KEY}=state\nDEPLOY_SECRET=state\n")
    monkeypatch.setenv("DEPLOY_SECRET", "shell")
    environ = dict(os.environ)
    sources = load_env_files(state, environ)
    assert (environ[KEY], environ["OTHER"], environ["DEPLOY_SECRET"]) == ("state", "user", "shell")
    assert sources == {KEY: str(state / "env"), "OTHER": str(user),
                       "DEPLOY_SECRET": "environment"}


@pytest.mark.parametrize("mode", [0o640, 0o604])
def test_a_file_others_can_read_is_refused(tmp_path: Path, mode: int) -> None:
    path = write_secret(tmp_path / "env", f"{KEY}=x\n", mode)
    with pytest.raises(UsageError, match=f"{path} is readable by group or others"):
        read_env_file(path)
    assert read_env_file(tmp_path / "missing") == {}


def test_a_run_takes_its_secrets_from_the_state_env_file(home: Path, project: Path,
                                                         tmp_path: Path) -> None:
    state = project / ".harness"
    write_secret(state / "env", f"DEPLOY_SECRET={CANARY}\n")
    script = tmp_path / "s.yaml"
    script.write_text(f"- tools: [{{name: bash, input: {{command: 'echo {CANARY}; "
                      "env | grep -c DEPLOY_SECRET'}}]\n"
                      "- tools: [{name: finish, input: {summary: done}}]\n")
    result = run_sh("worker", "F-004", "--backend", "scripted", "--script", str(script),
                    cwd=project, env={"HOME": str(home)})
    assert result.returncode == 0, result.stderr
    transcript = next(state.glob("runs/*/transcript.jsonl")).read_text()
    # redacted: the runner loaded the value; 0: the agent's tools did not get it
    assert CANARY not in transcript and "[REDACTED]\\n0\\n" in transcript


def test_a_run_refuses_a_readable_env_file_with_exit_2(home: Path, project: Path) -> None:
    path = write_secret(project / ".harness" / "env", f"{KEY}=x\n", 0o644)
    result = run_sh("worker", "F-004", "--backend", "scripted", "--script",
                    str(Path(__file__).parent / "data" / "hostile-worker.yaml"), cwd=project,
                    env={"HOME": str(home)})
    assert result.returncode == 2 and f"{path} is readable by group or others" in result.stderr
    assert not list((project / ".harness").glob("runs/*"))


def test_a_latin1_env_file_names_its_line(home: Path, project: Path) -> None:
    path = project / ".harness" / "env"
    path.write_bytes(f"{KEY}=x\n# caf\xe9\n".encode("latin-1"))
    path.chmod(0o600)
    result = run_sh("worker", "F-004", "--backend", "scripted", "--script",
                    str(Path(__file__).parent / "data" / "hostile-worker.yaml"), cwd=project,
                    env={"HOME": str(home)})
    assert result.returncode == 2, result.stderr
    assert f"{path} line 2: not UTF-8 text (byte 0xe9)" in result.stderr
    assert not list((project / ".harness").glob("runs/*"))


def test_a_nul_in_an_env_value_names_its_line(home: Path, project: Path) -> None:
    """A NUL in a value was a ValueError traceback (embedded null byte) as the run put it in
    its environment, exit 1, at every run and in doctor."""
    path = project / ".harness" / "env"
    write_secret(path, f"# keys\n{KEY}=x\x00y\n")
    worker = ["worker", "F-004", "--backend", "scripted", "--script",
              str(Path(__file__).parent / "data" / "hostile-worker.yaml")]
    for args in (worker, ["doctor", "--no-cron"]):
        result = run_sh(*args, cwd=project, env={"HOME": str(home)})
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert f"{path} line 2: a NUL character in the value of {KEY}" in (
            result.stdout + result.stderr)


def test_an_env_file_saved_with_a_bom_is_read(home: Path, project: Path) -> None:
    """Notepad's UTF-8 starts the file with a byte order mark: its first line was refused
    as 'line 1: expected KEY=value', a line that reads KEY=value in every editor."""
    write_secret(project / ".harness" / "env", f"\ufeff{KEY}=x\n")
    result = run_sh("doctor", "--no-cron", cwd=project, env={"HOME": str(home)})
    assert "expected KEY=value" not in result.stdout + result.stderr


def cron_doctor(project: Path, home: Path, **extra: str):
    """`run.sh doctor --backend anthropic` as cron would start it: a bare environment."""
    import subprocess

    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "LOGNAME": "cron", **extra}
    return subprocess.run([str(RUN_SH), "doctor", "--backend", "anthropic"], cwd=project,
                          env=env, capture_output=True, text=True, timeout=240)


def test_doctor_passes_under_cron_with_the_key_in_an_env_file(home: Path, project: Path,
                                                              api) -> None:
    secret = "sk-ant-api03-doctorCANARY0000000000001"
    api.keys = {secret}
    # the state's file: doctor's cron check gives its child cron's HOME, the passwd one
    user = write_secret(project / ".harness" / "env",
                        f"{KEY}={secret}\nANTHROPIC_BASE_URL={api.base_url}\n")
    result = cron_doctor(project, home)
    assert result.returncode == 0, result.stdout
    assert f"secrets: {KEY} from {user}, ANTHROPIC_BASE_URL from {user}" in result.stdout
    assert f"{KEY} is set (from {user})" in result.stdout
    assert f"ok    auth worker: anthropic: the API takes the key in {KEY}" in result.stdout
    assert "ok    cron: under cron" in result.stdout and secret not in result.stdout
    assert len(api.counted) == 2  # proved here and under cron, once each (one key, one model)


def test_doctor_under_cron_fails_for_a_key_refused_there(home: Path, project: Path,
                                                         api) -> None:
    api.keys = {"sk-ant-good-in-the-shell"}
    write_secret(project / ".harness" / "env",
                 f"{KEY}=sk-ant-stale-in-the-file\nANTHROPIC_BASE_URL={api.base_url}\n")
    result = cron_doctor(project, home, **{KEY: "sk-ant-good-in-the-shell"})
    assert result.returncode == 2, result.stdout  # the shell's key wins here; cron has the file's
    assert f"ok    auth worker: anthropic: the API takes the key in {KEY}" in result.stdout
    assert (f"FAIL  auth worker (under cron): anthropic: the Anthropic API refused the key in "
            f"{KEY} (401)") in result.stdout
    assert f"{project / '.harness' / 'env'}" in result.stdout  # the fix names the files


def test_doctor_under_cron_fails_for_a_key_only_in_the_shell(home: Path, project: Path) -> None:
    result = cron_doctor(project, home, **{KEY: "sk-ant-only-in-the-shell",
                                           "ANTHROPIC_BASE_URL": CLOSED_URL})
    assert result.returncode == 2
    assert "FAIL  backend worker (under cron): anthropic: neither" in result.stdout
    assert f"{project / '.harness' / 'env'}" in result.stdout  # the fix names the files


def test_cron_prints_ready_crontab_lines(invoke, state: Path, project: Path) -> None:
    out = invoke("cron").output.splitlines()
    jobs = [line for line in out if not line.startswith("#")]
    assert [line.split(f"--state {state} ")[1].split(" >> ")[0] for line in jobs] == [
        "loop --backend anthropic"]
    out = invoke("cron", "worker", "validator", "curator").output.splitlines()
    jobs = [line for line in out if not line.startswith("#")]
    commands = [line.split(f"--state {state} ")[1].split(" >> ")[0] for line in jobs]
    assert commands == ["worker next --backend anthropic", "validator next --backend anthropic",
                        "curator"]
    assert all(line.split()[5:8] == ["cd", str(project), "&&"] for line in jobs)
    # cron has no HARNESS_IDENTITY_DIR: the lines name the folder this shell uses
    identity = os.environ["HARNESS_IDENTITY_DIR"]
    assert all(line.split()[8] == f"HARNESS_IDENTITY_DIR={identity}" for line in jobs)
    assert all(f"{RUN_SH} --state {state}" in line and line.endswith(" 2>&1") for line in jobs)
    assert f">> {state / 'cron-worker.log'} 2>&1" in jobs[0]
    planner = [line for line in invoke("cron", "planner").output.splitlines()
               if not line.startswith("#")]
    assert len(planner) == 1 and "planner --backend anthropic >> " in planner[0]
    assert invoke("cron", "bogus").exit_code == 2


def test_cron_lines_run_the_backend_and_preset_the_roles_name(project: Path,
                                                              state: Path) -> None:
    (state / "roles").mkdir()
    for role in ("worker", "validator"):
        (state / "roles" / f"{role}.yaml").write_text("backend: command\n"
                                                       "options: {preset: claude}\n")
    result = run_sh("cron", cwd=project)
    assert result.returncode == 0, result.stderr
    assert "# worker: command --preset claude, model claude-sonnet-4-5" in result.stdout
    job = [line for line in result.stdout.splitlines() if not line.startswith("#")]
    assert job[0].endswith(f"loop --backend command --preset claude >> "
                           f"{state / 'cron-loop.log'} 2>&1")
    (state / "roles" / "validator.yaml").write_text("backend: command\noptions: {preset: codex}\n")
    lines = run_sh("cron", "loop", "validator", cwd=project).stdout.splitlines()
    jobs = [line for line in lines if not line.startswith("#")]
    assert f"--state {state} loop >> " in jobs[0]  # the roles differ: each from its file
    assert "validator next --backend command --preset codex >> " in jobs[1]
    given = run_sh("cron", "worker", "--backend", "command", "--preset", "codex",
                   "--model", "gpt-5", cwd=project).stdout
    assert "worker next --backend command --preset codex --model gpt-5 >> " in given
    doctor = run_sh("doctor", "--no-cron", cwd=project).stdout
    assert "ok    roles: planner: anthropic, model claude-sonnet-4-5; worker: command --preset " \
           f"claude, model claude-sonnet-4-5 ({state / 'roles' / 'worker'}.yaml over the " \
           "shipped file); validator: command --preset codex" in doctor
    # the rules, with the curator role's model as their judge by default (curator.judge)
    assert "; curator: its rules, judged by anthropic, model claude-haiku-4-5 " \
           "(curator.judge: auto)\n" in doctor
    with (state / "config.yaml").open("a") as config:
        config.write("curator: {judge: off}\n")
    doctor = run_sh("doctor", "--no-cron", cwd=project).stdout
    assert "; curator: its rules, no model (curator.mode: rules, judge: off)\n" in doctor


def test_cron_lines_name_no_identity_folder_when_cron_finds_the_same(project: Path,
                                                                     state: Path) -> None:
    import pwd

    home = pwd.getpwuid(os.getuid()).pw_dir
    default = Path(home) / ".local/share/autonomous-harness/identity"
    result = run_sh("cron", cwd=project, env={"HARNESS_IDENTITY_DIR": str(default)})
    assert result.returncode == 0 and "HARNESS_IDENTITY_DIR" not in result.stdout


def test_doctor_warns_when_no_budget_bounds_a_loop_or_cron(project: Path, state: Path) -> None:
    assert "ok    budget: budget_usd: 20" in run_sh("doctor", "--no-cron", cwd=project).stdout
    (state / "config.yaml").write_text("max_attempts: 3\n")
    result = run_sh("doctor", "--no-cron", cwd=project)
    assert "warn  budget: no budget_usd: a loop or cron job may spend without a bound" in (
        result.stdout)
    assert f"fix: set `budget_usd: 20` (dollars for the whole mission) in " \
           f"{state / 'config.yaml'}" in result.stdout
