"""Files a person or an agent left in a shape no reader expects (a folder, a fifo, a YAML
bomb), through real run.sh runs: a clear exit 2 naming the file, or the file passed over;
never a traceback, a hang or a wrong exit code (issue 31, round 3)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import RUN_SH, git_init, run_sh


@pytest.mark.parametrize("name, role", [("AGENTS.md", "worker"), ("CLAUDE.md", "worker"),
                                        (".harness/spec.md", "planner")])
def test_a_project_doc_that_is_a_folder_is_passed_over(project: Path, name: str,
                                                       role: str) -> None:
    """An agent's `mkdir AGENTS.md` stopped every later run with exit 2, 'run.sh: 5: Is a
    directory' (a file descriptor, not a name)."""
    (project / name).unlink(missing_ok=True)
    (project / name).mkdir()
    args = [role, "F-004", "--dry-run"] if role == "worker" else [role, "--dry-run"]
    result = run_sh(*args, cwd=project)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr


def alias_bomb(levels: int = 9) -> str:
    """YAML of a few hundred bytes whose aliases expand to 9**levels strings."""
    lines = ["  a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + f"\n  bomb: *a{levels - 1}\n"


@pytest.mark.parametrize("name, body", [
    ("roles/worker.yaml", "options:\n" + alias_bomb()),
    ("roles/worker.yaml", "options: &o {self: *o}\n"),
    ("roles/worker.yaml", "sandbox_paths: &p {/tmp: [*p]}\n"),
    ("config.yaml", "hooks: &h {run.finished: [*h]}\nprices:\n" + alias_bomb()),
])
def test_a_yaml_alias_bomb_or_loop_is_a_usage_error(project: Path, state: Path, name: str,
                                                    body: str) -> None:
    """An alias bomb in a role's options was a MemoryError (or the OOM killer) when the run
    recorded them, an alias inside itself a ValueError: tracebacks, exit 1."""
    path = state / name
    path.parent.mkdir(exist_ok=True)
    good = path.read_text() if path.exists() else ""
    path.write_text(good + body)
    commands = [["worker", "F-004", "--dry-run"]]
    commands += [["curator", "--dry-run"]] if name == "config.yaml" else []
    for args in commands:
        result = run_sh(*args, cwd=project)
        assert result.returncode == 2, result.stderr
        assert f"{name}: more than 100,000 values once its aliases" in result.stderr
    path.write_text(good)
    assert run_sh("worker", "F-004", "--dry-run", cwd=project).returncode == 0


def make_odd(path: Path, kind: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    else:
        path.symlink_to(path.name)  # a symlink loop


@pytest.mark.slow  # a run.sh start per case and command: .ci/run runs it
@pytest.mark.parametrize("name, kind, commands", [
    (".harness/raw.md", "fifo", [["status"], ["note", "TRICK", "make -j4"], ["curator"],
                                 ["worker", "F-004", "--dry-run"], ["doctor", "--no-cron"]]),
    (".harness/raw.md", "device", [["status"], ["curator", "--dry-run"]]),
    (".harness/raw.md", "loop", [["status"]]),
    (".harness/summary.md", "fifo", [["worker", "F-004", "--dry-run"], ["report"]]),
    (".harness/ledger/F-004.jsonl", "fifo", [["validator", "F-004", "--dry-run"]]),
    ("identity/worker.md", "fifo", [["status"], ["curator"], ["worker", "F-004", "--dry-run"]]),
    ("identity/.candidates.log", "fifo", [["curator", "--explain", "make -j4"]]),
])
def test_a_fifo_or_device_where_a_file_goes_is_named_not_read_for_ever(
        project: Path, isolated_env: Path, name: str, kind: str,
        commands: list[list[str]]) -> None:
    """A fifo for raw.md, summary.md, a ledger or an identity file made every command that
    reads it wait for ever (a cron job a day, each holding its lock), and /dev/zero read
    until the memory ran out; `note` wrote its line into the pipe and said it was kept."""
    path = (isolated_env / name.split("/", 1)[1]) if name.startswith("identity/") \
        else project / name
    saved = path.read_bytes() if path.is_file() else None
    make_odd(path, kind)
    for args in commands:
        if args == ["report"]:
            args = ["report", "--out", str(project.parent / "report")]
        result = run_sh(*args, cwd=project, timeout=30)
        assert result.returncode == 2, (args, result.stdout + result.stderr)
        assert str(path) in result.stdout + result.stderr
        assert "not a file; move it away" in result.stdout + result.stderr or (
            "Too many levels of symbolic links" in result.stderr)
    path.unlink()
    if saved is not None:
        path.write_bytes(saved)
    assert run_sh(*commands[0], cwd=project, timeout=30).returncode == 0


@pytest.mark.parametrize("name, line, key, args", [
    ("config.yaml", 'identity_export: ["AGENTS.md\\0x"]', "identity_export.0", ["curator"]),
    ("config.yaml", 'base_branch: "main\\0"\nworkspace: worktrees', "base_branch",
     ["worker", "F-004", "--dry-run"]),
    ("roles/worker.yaml", 'options: {verify_timeout: 5, "\\0": 1}', "options.\x00",
     ["worker", "F-004", "--dry-run"]),
])
def test_a_nul_escape_in_yaml_is_a_usage_error_naming_the_key(project: Path, state: Path,
                                                              name: str, line: str, key: str,
                                                              args: list[str]) -> None:
    """A "\\0" escape put a NUL in a value: an identity_export or base_branch holding one
    was a ValueError traceback (embedded null byte), exit 1, at every run."""
    git_init(project)
    path = state / name
    path.parent.mkdir(exist_ok=True)
    good = path.read_text() if path.exists() else ""
    path.write_text(f"{good}{line}\n")
    result = run_sh(*args, cwd=project)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    shown = key.replace("\x00", "\\u0000")  # run.sh shows a control character visibly
    assert f"{name}: key '{shown}': a NUL character" in result.stderr
    path.write_text(good)
    assert run_sh(*args, cwd=project).returncode == 0


@pytest.mark.parametrize("name", ["transcript.jsonl", "prompt.md", "verdict.json"])
def test_a_fifo_in_a_run_folder_marks_that_run_damaged(project: Path, state: Path,
                                                       name: str) -> None:
    """A fifo for a run's transcript, prompt or verdict made `show` and `report` wait for
    ever; now `show` names it (exit 2) and `report` goes on, that run marked damaged."""
    run_id = run_sh("worker", "F-004", "--dry-run", cwd=project).stdout.split()[2].rstrip(":")
    path = state / "runs" / run_id / name
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    shown = run_sh("show", run_id, cwd=project, timeout=30)
    assert shown.returncode == 2 and f"{path} is a fifo (named pipe)" in shown.stderr
    out = project.parent / "report"
    report = run_sh("report", "--out", str(out), cwd=project, timeout=30)
    assert report.returncode == 0, report.stderr
    page = (out / "runs" / f"{run_id}.html").read_text()
    assert "damaged" in page and name in page
    listed = run_sh("status", cwd=project, timeout=30)
    assert listed.returncode == 0 and f"damaged: {run_id}: " in listed.stdout


def from_dev_zero(project: Path, args: list[str]) -> subprocess.CompletedProcess:
    """`run.sh ARGS < /dev/zero` under a 2 GB memory limit."""
    with open("/dev/zero", "rb") as zero:
        return subprocess.run(["bash", "-c", 'ulimit -v 2000000; exec "$@"', "-",
                               str(RUN_SH), *args], cwd=project, stdin=zero,
                              capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("args", [["note", "--file", "endless"], ["note", "TRICK"]])
def test_a_note_from_an_endless_stdin_is_refused_not_read_until_memory_runs_out(
        project: Path, state: Path, args: list[str]) -> None:
    """`run.sh note --file SLUG < /dev/zero` read until the memory ran out: a MemoryError
    traceback under a memory limit, the OOM killer without one."""
    before = (state / "raw.md").read_bytes()
    result = from_dev_zero(project, args)
    assert result.returncode == 2, result.stderr
    assert "the note on stdin is over 10,000,000 characters" in result.stderr
    assert (state / "raw.md").read_bytes() == before
    assert not list((state / "memory").glob("*endless*"))


@pytest.mark.parametrize("args", [["plan", "-"], ["import", "-"], ["plan", "/dev/zero"],
                                  ["import", "/dev/zero"]])
def test_a_plan_from_dev_zero_is_refused_not_read_until_memory_runs_out(
        project: Path, state: Path, args: list[str]) -> None:
    """`plan`/`import` read /dev/zero or an endless pipe whole: a MemoryError traceback under a
    memory limit, the OOM killer without one."""
    before = (state / "features.json").read_bytes()
    result = from_dev_zero(project, args)
    assert result.returncode == 2, result.stderr
    assert "over 64 MiB; no plan is that big" in result.stderr
    assert (state / "features.json").read_bytes() == before
