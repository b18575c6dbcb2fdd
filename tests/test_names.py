"""Ids and names are checked where they enter: plan, import, note, environment, command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_sh

from harness import config, names
from harness.state.memory import parse_entry

BAD_IDS = ["F-001\n", "F-" + "1" * 5000, "F-\u0660\u0660\u0661", "F-0\x1b1", "F-1234567890"]


def feature(fid: str) -> dict:
    return {"id": fid, "title": "t", "description": "d", "acceptance_criteria": ["a"]}


@pytest.mark.parametrize("fid", BAD_IDS)
def test_a_plan_with_a_bad_id_is_refused_with_exit_2(project: Path, state: Path,
                                                     tmp_path: Path, fid: str) -> None:
    before = (state / "features.json").read_bytes()
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps([feature(fid)]))
    result = run_sh("plan", str(plan), cwd=project)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and "bad feature id" in result.stderr
    assert len(result.stderr) < 1000
    assert (state / "features.json").read_bytes() == before


@pytest.mark.parametrize("fid", BAD_IDS)
def test_a_bad_id_on_the_command_line_exits_2(project: Path, state: Path, fid: str) -> None:
    result = run_sh("worker", fid, "--dry-run", cwd=project)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and "bad feature id" in result.stderr
    assert not any("\n" in p.name for p in state.rglob("*"))


@pytest.mark.parametrize("args, env, wrong", [
    (["--role", "worker\n"], {}, "--role: unknown role"),
    (["--role", "wizard"], {}, "--role: unknown role"),
    (["--feature", "F-003\n"], {}, "--feature: bad feature id"),
    (["--feature", "F-\u0660\u0660\u0663"], {}, "--feature: bad feature id"),
    ([], {"HARNESS_ROLE": "validator\n"}, "$HARNESS_ROLE: unknown role"),
    ([], {"FEATURE_ID": "F-" + "9" * 5000}, "$FEATURE_ID: bad feature id"),
    ([], {"HARNESS_RUN_ID": "1-worker-F-001\nx"}, "$HARNESS_RUN_ID: bad run id"),
])
def test_note_refuses_a_bad_role_feature_or_run_with_exit_2(
        project: Path, state: Path, args: list[str], env: dict[str, str], wrong: str) -> None:
    before = (state / "raw.md").read_bytes()
    result = run_sh("note", *args, "TRICK", "a lesson", cwd=project, env=env)
    assert result.returncode == 2 and wrong in result.stderr, result.stderr
    assert (state / "raw.md").read_bytes() == before
    long = run_sh("note", *args, "--file", "slug", "a body", cwd=project, env=env)
    assert long.returncode == 2 and wrong in long.stderr, long.stderr
    assert not (state / "memory").exists() or not list((state / "memory").glob("*slug*"))


def test_note_text_keeps_unicode_and_escapes_control_bytes(project: Path, state: Path) -> None:
    result = run_sh("note", "TRICK", "caf\u00e9 \u2713 nul\x01 esc\x1b[31m del\x7f", cwd=project)
    assert result.returncode == 0, result.stderr
    raw = (state / "raw.md").read_text()
    last = parse_entry(raw.splitlines()[-1])
    assert last is not None and last.text == "caf\u00e9 \u2713 nul\\x01 esc\\x1b[31m del\\x7f"
    assert "\x1b" not in raw and "\x01" not in raw and "\x1b" not in result.stdout
    body = run_sh("note", "--file", "esc", cwd=project, input="# t\x1b[2J\nline\ttwo\x00\n")
    assert body.returncode == 0, body.stderr
    text = next((state / "memory").glob("*-user-esc.md")).read_text()
    assert text == "# t\\x1b[2J\nline    two\\x00\n"



def test_the_roles_a_note_knows_are_the_configs() -> None:
    assert names.ROLES == config.ROLES and set(names.NOTE_ROLES) == {*config.ROLES, "user"}


@pytest.mark.parametrize("run_id", ["1-worker-F-001\n", "r" * 129, ".hidden", "a/b"])
def test_show_refuses_a_bad_run_id_with_exit_2(project: Path, run_id: str) -> None:
    result = run_sh("show", run_id, cwd=project)
    assert result.returncode == 2 and "bad run id" in result.stderr, result.stderr
