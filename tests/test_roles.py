"""A mission's role files override the shipped ones key by key, and the quickstart's agent
CLIs get their provider's key when the person exported it."""

import json
import os
from pathlib import Path

import yaml
from conftest import ROOT, run_sh

from harness.state.store import get_object

CLAUDE_STAND_IN = ROOT / "tests" / "fake_clis" / "claude.py"


def dry_run_manifest(project: Path, *args: str) -> dict:
    result = run_sh("worker", "F-004", "--dry-run", *args, cwd=project)
    assert result.returncode == 0, result.stderr
    run_id = result.stdout.split()[2].rstrip(":")
    return json.loads((project / ".harness" / "runs" / run_id / "manifest.json").read_text())


def test_a_one_line_role_file_overrides_only_its_keys(project: Path, state: Path) -> None:
    (state / "roles").mkdir()
    (state / "roles" / "worker.yaml").write_text(
        "options: {pass_env: [GITHUB_TOKEN]}\ncaps: {turns: 7}\n")
    manifest = dry_run_manifest(project)
    assert manifest["options"] == {"pass_env": ["GITHUB_TOKEN"]}
    assert manifest["model"] == "claude-sonnet-4-5" and manifest["template"] == "worker.md.j2"
    recorded = get_object(state, manifest["role_config"]["sha256"]).decode()
    effective = yaml.safe_load(recorded)
    assert effective["caps"]["turns"] == 7
    assert effective["caps"]["wall_seconds"] == 1800  # the shipped value, kept
    assert effective["tools"] == ["bash", "str_replace_based_edit_tool", "note", "finish"]
    assert manifest["role_config"]["path"] == str(state / "roles" / "worker.yaml")
    assert str(ROOT / "roles" / "worker.yaml") in recorded.splitlines()[0]
    check = run_sh("reconstruct", manifest["run_id"], "--check", cwd=project)
    assert check.returncode == 0, check.stderr


def test_an_override_keeps_the_shipped_options_it_does_not_name(project: Path,
                                                                state: Path) -> None:
    (state / "roles").mkdir()
    (state / "roles" / "validator.yaml").write_text("options: {preset: codex}\n")
    plan = json.loads((state / "features.json").read_text())
    plan[3]["status"] = "in_progress"
    (state / "features.json").write_text(json.dumps(plan))
    result = run_sh("validator", "F-004", "--dry-run", cwd=project)
    assert result.returncode == 0, result.stderr
    run_id = result.stdout.split()[2].rstrip(":")
    manifest = json.loads((state / "runs" / run_id / "manifest.json").read_text())
    assert manifest["options"] == {"verify_timeout": 600, "preset": "codex"}


def test_an_overrides_unknown_or_bad_key_is_refused_naming_its_file_and_key(
        project: Path, state: Path) -> None:
    (state / "roles").mkdir()
    override = state / "roles" / "worker.yaml"
    override.write_text("options: {pass_env: [X]}\ntemperture: 0.2\n")
    result = run_sh("worker", "F-004", "--dry-run", cwd=project)
    assert result.returncode == 2
    assert f"{override}: key 'temperture'" in result.stderr
    override.write_text("backend: gpt\n")
    result = run_sh("worker", "F-004", "--dry-run", cwd=project)
    assert result.returncode == 2 and f"{override}: key 'backend'" in result.stderr
    override.write_text("- just a list\n")
    result = run_sh("worker", "F-004", "--dry-run", cwd=project)
    assert result.returncode == 2 and f"{override}: expected a mapping" in result.stderr
    assert not list((state / "runs").glob("*-worker-*"))


def test_quickstart_claude_line_passes_the_exported_key(project: Path, tmp_path: Path) -> None:
    """`export ANTHROPIC_API_KEY=...; run.sh worker next --backend command --preset claude`,
    with a stand-in `claude` on PATH that records the environment it was given."""
    bin_dir, dump = tmp_path / "bin", tmp_path / "dump.json"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text(f"#!/bin/sh\nexec python3 {CLAUDE_STAND_IN} dump {dump}\n")
    (bin_dir / "claude").chmod(0o755)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "ANTHROPIC_API_KEY": "sk-ant-quickstart-0000000000", "GITHUB_TOKEN": "ghp_secret",
           "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    result = run_sh("worker", "next", "--backend", "command", "--preset", "claude",
                    cwd=project, env=env)
    assert result.returncode == 0, result.stderr
    given = json.loads(dump.read_text())["env"]
    assert given["ANTHROPIC_API_KEY"] == "sk-ant-quickstart-0000000000"
    assert given["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9"  # its endpoint goes with it
    assert "GITHUB_TOKEN" not in given
    (project / ".harness" / "roles").mkdir()
    (project / ".harness" / "roles" / "worker.yaml").write_text("options: {pass_env: []}\n")
    # it awaits validation now: a person takes it back for a second run
    assert run_sh("block", "--feature", "F-004", "again", cwd=project).returncode == 0
    assert run_sh("retry", "F-004", cwd=project).returncode == 0
    result = run_sh("worker", "next", "--backend", "command", "--preset", "claude",
                    cwd=project, env=env)
    assert result.returncode == 0, result.stderr
    assert "ANTHROPIC_API_KEY" not in json.loads(dump.read_text())["env"]
    transcripts = sorted((project / ".harness" / "runs").glob("*/transcript.jsonl"))
    commands = [json.loads(line) for t in transcripts for line in t.read_text().splitlines()
                if '"type": "command"' in line]
    assert [c["pass_env"] for c in commands] == [["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"], []]
