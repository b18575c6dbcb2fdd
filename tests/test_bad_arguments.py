"""Bad values on the command line and values of the wrong type in a config, through real
`run.sh` runs (issue 31, from the command line's side): exit 2 naming what is wrong, no
traceback, no run recorded."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git_init, run_sh

from harness.state.store import hold_lock, lock_path


def refused(result, *words: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    for word in words:
        assert word in result.stderr, (word, result.stderr)


# pydantic's lax mode took YAML's `true` as 1 and '3' as 3: a bool or a text where a number
# goes is refused, naming the file and the key (docs/configuration.md)
@pytest.mark.parametrize("config, key", [
    ("max_attempts: '3'", "max_attempts"),
    ("max_attempts: true", "max_attempts"),
    ("budget_usd: '20'", "budget_usd"),
    ("hook_timeout: yes", "hook_timeout"),
    ("prompt: {raw_entries: false}", "prompt.raw_entries"),
    ("curator: {questions: true}", "curator.questions"),
    ("notify: {quiet_minutes: '5'}", "notify.quiet_minutes"),
    ("prices: {m: {input_tokens: true}}", "prices.m.input_tokens"),
])
def test_a_bool_or_a_text_for_a_mission_number_is_refused(project: Path, state: Path,
                                                          config: str, key: str) -> None:
    (state / "config.yaml").write_text(f"{config}\ncommit: false\n")
    result = run_sh("worker", "F-004", "--dry-run", cwd=project)
    refused(result, "config.yaml", f"key '{key}'", "expected a number")
    assert not (state / "runs").exists()


@pytest.mark.parametrize("caps, key", [
    ("{turns: true}", "caps.turns"),
    ("{turns: '5'}", "caps.turns"),
    ("{wall_seconds: on}", "caps.wall_seconds"),
    ("{dollars: '1.5'}", "caps.dollars"),
])
def test_a_bool_or_a_text_for_a_cap_is_refused(project: Path, state: Path, caps: str,
                                               key: str) -> None:
    (state / "roles").mkdir()
    (state / "roles" / "worker.yaml").write_text(f"template: worker.md.j2\ncaps: {caps}\n")
    result = run_sh("worker", "F-004", "--dry-run", cwd=project)
    refused(result, "roles/worker.yaml", f"key '{key}'", "expected a number")
    assert not (state / "runs").exists()


def test_numbers_as_numbers_still_mean_what_they_meant(project: Path, state: Path) -> None:
    (state / "config.yaml").write_text("max_attempts: 4\nbudget_usd: 20\ncommit: false\n"
                                       "curator: {similarity: 85}\n")
    (state / "roles").mkdir()
    (state / "roles" / "worker.yaml").write_text(
        "template: worker.md.j2\ncaps: {turns: 7, wall_seconds: 60, dollars: 1}\n")
    assert run_sh("worker", "F-004", "--dry-run", cwd=project).returncode == 0


def test_loop_parallel_is_bounded(project: Path, state: Path) -> None:
    """--parallel 100000 started a slot (a thread, a worker process, a worktree) per feature
    for as many as asked: at most 64 (docs/unattended.md), refused before anything else."""
    (state / "config.yaml").write_text("workspace: worktrees\ncommit: false\n")
    with hold_lock(lock_path(state, "loop")) as held:  # a bound passed would be busy: 3
        held.label("run.sh loop since then")
        refused(run_sh("loop", "--parallel", "100000", cwd=project), "--parallel", "64")
        refused(run_sh("loop", "--parallel", "65", cwd=project), "--parallel", "64")
        assert run_sh("loop", "--parallel", "64", cwd=project).returncode == 3


@pytest.mark.parametrize("where", ["missing", "a file"])
def test_a_workdir_that_is_no_folder_is_refused_before_a_run_is_recorded(
        project: Path, state: Path, where: str) -> None:
    """--workdir naming nothing (or a file) was a dry run's exit 0, and a real run recorded a
    run that could never start, then exit 2 with an OS message."""
    workdir = project / "typo"
    if where == "a file":
        workdir.write_text("")
    script = project / "script.yaml"
    script.write_text("- tools: [{name: finish, input: {summary: done}}]\n")
    for args in (["--dry-run"], ["--backend", "scripted", "--script", str(script)]):
        result = run_sh("--workdir", str(workdir), "worker", "F-004", *args, cwd=project)
        refused(result, "--workdir", str(workdir))
    assert not (state / "runs").exists()


@pytest.mark.parametrize("option", ["--state", "--workdir"])
def test_an_empty_folder_option_is_refused(project: Path, state: Path, option: str) -> None:
    """`--state "$STATE"` with STATE unset ran on ./.harness as if the option were not given."""
    for args in ([option, "", "worker", "F-004", "--dry-run"], [option, "", "note", "FAIL", "x"]):
        refused(run_sh(*args, cwd=project), option, "empty")
    assert not (state / "runs").exists()
    assert "FAIL: x" not in (state / "raw.md").read_text()


def test_state_pointing_at_a_file_says_so(project: Path) -> None:
    (project / "file").write_text("")
    result = run_sh("--state", str(project / "file"), "status", cwd=project)
    refused(result, str(project / "file"), "not a folder")


@pytest.mark.parametrize("args", [["note", "TRICK", "a lesson"], ["curator"], ["report"],
                                  ["worker", "next", "--dry-run"], ["status"]])
def test_state_pointing_at_the_project_or_another_folder_writes_nothing(
        project: Path, tmp_path: Path, args: list[str]) -> None:
    """`--state ~/proj` (the project, not its .harness) took the project for a state
    directory: `curator` rewrote the project's own MEMORY.md and summary.md, `note` added a
    raw.md, `report` a report/ folder."""
    (project / "MEMORY.md").write_text("the person's own notes\n")
    other = tmp_path / "documents"
    other.mkdir()
    (other / "letter.txt").write_text("dear\n")
    for folder, words in ((project, [str(project / ".harness")]), (other, ["not a state"])):
        before = sorted(p.name for p in folder.iterdir())
        refused(run_sh("--state", str(folder), *args, cwd=project), str(folder), *words)
        assert sorted(p.name for p in folder.iterdir()) == before
    assert (project / "MEMORY.md").read_text() == "the person's own notes\n"


@pytest.mark.parametrize("args, words", [
    (["runs", "--feature", "F-1"], ["--feature", "'F-1'"]),
    (["runs", "--feature", "../x"], ["--feature", "'../x'"]),
    (["runs", "--feature", "F-٠٠٤"], ["--feature"]),
    (["runs", "--role", "workers"], ["--role", "'workers'"]),
    (["runs", "-n", "-1"], ["-n", "-1"]),
    (["curator", "--explain", "x", "--role", "bogus"], ["--role", "'bogus'"]),
])
def test_a_filter_that_can_match_nothing_is_refused(project: Path, args: list[str],
                                                    words: list[str]) -> None:
    """`runs --feature F-1` printed nothing and exit 0: a typo was told 'no runs'."""
    refused(run_sh(*args, cwd=project), *words)


@pytest.mark.parametrize("args, option", [
    (["loop", "--until", ""], "--until"),
    (["worker", "F-004", "--model", ""], "--model"),
    (["worker", "F-004", "--backend", "command", "--command", ""], "--command"),
    (["loop", "--model", ""], "--model"),
    (["cron", "--model", ""], "--model"),
])
def test_an_empty_value_is_not_the_option_left_out(project: Path, state: Path,
                                                   args: list[str], option: str) -> None:
    """`--until "$END"` with END unset started a loop with no end; `--model "$MODEL"` ran
    the role's own model, each as if the option were not there."""
    refused(run_sh(*args, cwd=project), option, "empty")
    assert not (state / "runs").exists()


@pytest.mark.parametrize("option", ["--role", "--feature", "--run"])
def test_an_empty_note_option_is_refused(project: Path, state: Path, option: str) -> None:
    """`note --feature "$F"` with F unset noted as if the option were left out (and `--run ''`
    fell back to $HARNESS_RUN_ID)."""
    before = (state / "raw.md").read_text()
    refused(run_sh("note", option, "", "TRICK", "a lesson", cwd=project), option, "empty")
    assert (state / "raw.md").read_text() == before


def test_state_of_another_mission_is_named_as_such(tmp_path: Path) -> None:
    """`--state ../B/.harness` from project A: refused as a replaced repository only, which
    sent the person to look for a tampered .git rather than at the option."""
    for name in ("A", "B"):
        folder = tmp_path / name
        folder.mkdir()
        git_init(folder)
        assert run_sh("init", cwd=folder).returncode == 0
    (tmp_path / "B" / ".harness" / "features.json").write_text(
        '[{"id": "F-001", "title": "t", "description": "d", "acceptance_criteria": ["a"], '
        '"verify": "true"}]')
    script = tmp_path / "script.yaml"
    script.write_text("- tools: [{name: finish, input: {summary: done}}]\n")
    result = run_sh("--state", str(tmp_path / "B" / ".harness"), "worker", "next",
                    "--backend", "scripted", "--script", str(script), cwd=tmp_path / "A")
    refused(result, "--state", "another project's mission")


@pytest.mark.parametrize("where", ["before", "after"])
@pytest.mark.parametrize("option", ["--state", "--workdir"])
def test_init_takes_no_state_or_workdir(tmp_path: Path, where: str, option: str) -> None:
    """`run.sh --state ~/m init` made ./.harness and said nothing of --state, so every later
    command with --state ~/m found no state directory."""
    args = [option, str(tmp_path / "m"), "init"] if where == "before" else \
        ["init", option, str(tmp_path / "m")]
    refused(run_sh(*args, cwd=tmp_path), option, "PROJECT_DIR")
    assert not (tmp_path / ".harness").exists() and not (tmp_path / "m").exists()


@pytest.mark.parametrize("flag, value, backend", [
    ("--preset", "claude", "command"),
    ("--command", "my-agent -p", "command"),
    ("--script", "SCRIPT", "scripted"),
])
def test_a_flag_of_another_backend_is_refused_not_ignored(project: Path, state: Path,
                                                          flag: str, value: str,
                                                          backend: str) -> None:
    """`worker F-004 --preset claude` on a role whose backend is anthropic ran the API (and
    billed its key) with the preset ignored."""
    script = project / "script.yaml"
    script.write_text("- tools: [{name: finish, input: {summary: done}}]\n")
    value = str(script) if value == "SCRIPT" else value
    for args in (["worker", "F-004", flag, value], ["worker", "F-004", "--dry-run", flag, value]):
        refused(run_sh(*args, cwd=project), flag, f"--backend {backend}", "anthropic")
    assert not (state / "runs").exists()
    with_backend = run_sh("worker", "F-004", "--dry-run", "--backend", backend, flag, value,
                          cwd=project)
    assert with_backend.returncode == 0, with_backend.stderr


def test_cron_keeps_the_flags_it_is_given_or_refuses_them(project: Path) -> None:
    """`cron --preset claude` printed `loop --backend anthropic`, and `cron --backend scripted
    --script FILE` a line without the script: flags the lines dropped without a word."""
    script = project / "script.yaml"
    script.write_text("- tools: [{name: finish, input: {summary: done}}]\n")
    refused(run_sh("cron", "--preset", "claude", cwd=project), "--preset", "--backend command")
    refused(run_sh("cron", "worker", "--script", str(script), cwd=project), "--script",
            "--backend scripted")
    lines = run_sh("cron", "worker", "--backend", "scripted", "--script", str(script),
                   cwd=project).stdout
    assert f"worker next --backend scripted --script {script}" in lines
    lines = run_sh("cron", "--backend", "command", "--command", "my-agent -p",
                   cwd=project).stdout
    assert "loop --backend command --command 'my-agent -p'" in lines
