"""run.sh as cron and shell loops see it: real subprocesses, exit codes, files."""

import os
from pathlib import Path

from conftest import RUN_SH, run_sh

from harness.memory import parse_entry


def test_works_from_any_directory_and_through_a_symlink(tmp_path: Path, project: Path) -> None:
    link = tmp_path / "bin" / "harness-run"
    link.parent.mkdir()
    link.symlink_to(RUN_SH)
    result = run_sh("--help", cwd=tmp_path)
    assert result.returncode == 0 and "Exit codes" in result.stdout
    via_link = os.popen(f"cd {project} && {link} worker F-004 --dry-run; echo rc=$?").read()
    assert "dry run" in via_link and "rc=0" in via_link


def test_note_fast_path_takes_identity_from_the_environment(project: Path, state: Path) -> None:
    env = {"HARNESS_ROLE": "validator", "FEATURE_ID": "F-003", "HARNESS_RUN_ID": "9-validator-F-003"}
    result = run_sh("note", "GOTCHA", "ties need a sort key", cwd=project, env=env)
    assert result.returncode == 0, result.stderr
    last = parse_entry((state / "raw.md").read_text().splitlines()[-1])
    assert (last.role, last.feature, last.kind, last.text, last.run) == (
        "validator", "F-003", "GOTCHA", "ties need a sort key", "9-validator-F-003")


def test_exit_codes_for_usage_errors(project: Path) -> None:
    assert run_sh("worker", "F-999", "--dry-run", cwd=project).returncode == 2
    assert run_sh("note", "NOPE", "x", cwd=project).returncode == 2
    assert run_sh("status", cwd=project.parent).returncode == 2  # no .harness here
    assert run_sh("bogus", cwd=project).returncode == 2


def test_state_from_environment(project: Path, tmp_path: Path) -> None:
    result = run_sh("status", cwd=tmp_path, env={"HARNESS_STATE": str(project / ".harness")})
    assert result.returncode == 0 and "plan: 1 pending, 3 done" in result.stdout


def test_next_with_nothing_pending_exits_5(project: Path, state: Path) -> None:
    text = (state / "features.json").read_text().replace('"pending"', '"done"')
    (state / "features.json").write_text(text)
    result = run_sh("worker", "next", "--dry-run", cwd=project)
    assert result.returncode == 5 and "nothing to do" in result.stderr


def test_blocked_feature_exits_7(project: Path, state: Path) -> None:
    text = (state / "features.json").read_text().replace('"pending"', '"blocked"')
    (state / "features.json").write_text(text)
    assert run_sh("worker", "F-004", "--dry-run", cwd=project).returncode == 7
