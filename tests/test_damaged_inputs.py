"""Damaged files give exit 2 naming the file, or a view that marks the record damaged; never a
traceback (issue 31, point 1). One test per class of damage, each with the case that crashed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from conftest import git_init, run_sh, unwritable

from harness.cli.app import cli


def dry_run(invoke) -> str:
    result = invoke("worker", "F-004", "--dry-run")
    assert result.exit_code == 0, result.output
    return result.output.split()[2].rstrip(":")


def run_cli(state: Path, *args: str, input: bytes | None = None):
    """The CLI with tracebacks caught (the result's exception), so a test can assert none."""
    result = CliRunner().invoke(cli, ["--state", str(state), "--workdir", str(state.parent),
                                      *args], input=input)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"traceback: {result.exception!r}\n{result.output}")
    return result


@pytest.mark.parametrize("content", [
    b"\xff\xfe\x00 not text",  # binary
    b"[1, 2]",  # list-shaped
    b'{"status": "started", "pid": "abc"}',  # wrongly typed
    b'{"run_id": 5, "usage": [1]}',
    b'{"templates": {"worker.md.j2": 7}}',
])
def test_a_damaged_manifest_is_marked_damaged_by_the_views(invoke, state: Path, tmp_path: Path,
                                                           content: bytes) -> None:
    run_id = dry_run(invoke)
    (state / "runs" / run_id / "manifest.json").write_bytes(content)
    listed = run_cli(state, "runs")
    assert listed.exit_code == 0 and run_id in listed.output and "damaged" in listed.output
    shown = run_cli(state, "status")
    assert shown.exit_code == 0 and f"damaged: {run_id}: " in shown.output
    assert "manifest.json" in json.loads(run_cli(state, "status", "--json").output)[
        "damaged"][run_id]
    report = run_cli(state, "report", "--out", str(tmp_path / "report"))
    assert report.exit_code == 0
    page = (tmp_path / "report" / "runs" / f"{run_id}.html").read_text()
    assert "damaged" in page and "manifest.json" in page
    for args in (["show", run_id], ["reconstruct", run_id]):
        result = run_cli(state, *args)
        assert result.exit_code == 2 and "manifest.json" in result.output


def test_a_manifest_naming_another_run_is_damaged(invoke, state: Path) -> None:
    run_id = dry_run(invoke)
    path = state / "runs" / run_id / "manifest.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "run_id": "../../elsewhere"}))
    result = run_cli(state, "show", run_id)
    assert result.exit_code == 2 and "key 'run_id'" in result.output


@pytest.mark.parametrize("line", ['{"verdict": "fail", "run', '[1, 2]', '{"reason": "no time"}',
                                  '{"time": 5, "verdict": ["x"], "run_id": ["y"]}', "\xff"])
def test_a_damaged_ledger_line_shows_as_damaged_in_the_report(state: Path, tmp_path: Path,
                                                              line: str) -> None:
    ledger = state / "ledger" / "F-001.jsonl"
    ledger.write_bytes(ledger.read_bytes() + line.encode("latin-1") + b"\n")
    result = run_cli(state, "report", "--out", str(tmp_path / "report"))
    assert result.exit_code == 0, result.output
    index = (tmp_path / "report" / "index.html").read_text()
    assert "count_words" in index  # the good verdicts are still shown


@pytest.mark.parametrize("line", ['{"verdict": "fail", "run', "[" * 100_000])
def test_a_failing_validator_run_goes_on_past_a_damaged_ledger_line(project: Path, state: Path,
                                                                   tmp_path: Path,
                                                                   line: str) -> None:
    git_init(project)
    turns = [{"tools": [{"name": "verdict", "input": {"verdict": "fail", "reason": "no"}},
                        {"name": "finish", "input": {"summary": "judged"}}]}]
    script = tmp_path / "validator.yaml"
    script.write_text(yaml.safe_dump(turns))
    ledger = state / "ledger" / "F-004.jsonl"
    ledger.write_text('{"verdict": "fail", "reason": "no"}\n' + line)  # a crash's half line
    for _ in range(2):  # the second run reads the first one's verdict after the damage
        result = run_cli(state, "validator", "F-004", "--backend", "scripted",
                         "--script", str(script))
        assert result.exit_code == 1, result.output
    assert ledger.read_text().count('"reason": "no"') == 3


@pytest.mark.parametrize("damage", [b"\xff\x00junk", b"[1, 2]", b"{}"])
def test_damaged_stored_objects_are_a_usage_error_in_reconstruct(invoke, state: Path,
                                                                 damage: bytes) -> None:
    run_id = dry_run(invoke)
    for path in (state / "objects").rglob("*"):
        if path.is_file():
            path.write_bytes(damage)
    for args in ([run_id], [run_id, "--check"]):
        result = run_cli(state, "reconstruct", *args)
        assert result.exit_code == 2 and "damaged" in result.output and "objects" in result.output


def test_a_latin1_config_names_the_file_and_line(invoke, state: Path) -> None:
    (state / "config.yaml").write_bytes("max_attempts: 3\nmission: caf\xe9\n".encode("latin-1"))
    for args in (["worker", "F-004", "--dry-run"], ["curator", "--dry-run"]):
        result = run_cli(state, *args)
        assert result.exit_code == 2
        assert "config.yaml line 2: not UTF-8 text (byte 0xe9)" in result.output


@pytest.mark.parametrize("name", ["config.yaml", "roles/worker.yaml"])
def test_a_control_byte_in_a_yaml_file_names_its_line(project: Path, state: Path,
                                                     name: str) -> None:
    path = state / name
    path.parent.mkdir(exist_ok=True)
    good = (state / "config.yaml").read_text() if name == "config.yaml" else "caps: {turns: 5}\n"
    path.write_text(good + "# a note pasted\nmission: tab\x00stop\n")
    line = good.count("\n") + 2
    result = run_sh("worker", "F-004", "--dry-run", cwd=project)
    assert result.returncode == 2, result.stderr
    assert f"{name} line {line}: invalid YAML: unacceptable character #x0000" in result.stderr
    assert "<unicode string>" not in result.stderr
    path.write_text(good)
    assert run_sh("worker", "F-004", "--dry-run", cwd=project).returncode == 0


@pytest.mark.parametrize("damage", ["deep", "folder"])
def test_a_deep_or_folder_features_json_is_a_usage_error(state: Path, damage: str) -> None:
    path = state / "features.json"
    if damage == "deep":
        path.write_text("[" * 100_000 + "]" * 100_000)
    else:
        path.unlink()
        path.mkdir()
    for args in (["status"], ["worker", "next", "--dry-run"]):
        result = run_cli(state, *args)
        assert result.exit_code == 2 and "features.json" in result.output


@pytest.mark.parametrize("command", ["plan", "import"])
@pytest.mark.parametrize("content", [bytes(range(256)), b"[" * 100_000])
def test_random_bytes_to_plan_or_import_are_a_usage_error(state: Path, tmp_path: Path,
                                                          command: str, content: bytes) -> None:
    before = (state / "features.json").read_bytes()
    given = tmp_path / "given.json"
    given.write_bytes(content)
    result = run_cli(state, command, str(given))
    assert result.exit_code == 2 and "given.json" in result.output
    stdin = run_cli(state, command, "-", input=content)
    assert stdin.exit_code == 2
    assert (state / "features.json").read_bytes() == before


def test_a_non_utf8_identity_file_names_the_file(state: Path, isolated_env: Path) -> None:
    (isolated_env / "worker.md").write_bytes(b"# worker\n- a lesson\n- \xff\xfe bad\n")
    before = snapshot(state)
    for args in (["curator"], ["curator", "--dry-run"]):
        result = run_cli(state, *args)
        assert result.exit_code == 2
        assert "worker.md line 3: not UTF-8 text" in result.output
    assert snapshot(state) == before  # refused before the pass staged anything


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in folder.rglob("*")
            if p.is_file() and p.suffix != ".lock"}


@pytest.mark.parametrize("name, content, args", [
    ("features.json", b'{"a": ' + b"9" * 5000 + b"}", ["status"]),
    ("config.yaml", b"a: " + b"9" * 5000 + b"\n", ["worker", "F-004", "--dry-run"]),
])
def test_a_number_of_5000_digits_is_a_usage_error(state: Path, name: str, content: bytes,
                                                  args: list[str]) -> None:
    (state / name).write_bytes(content)
    result = run_cli(state, *args)
    assert result.exit_code == 2 and name in result.output and "4300 digits" in result.output


def test_a_deeply_nested_transcript_line_counts_as_not_parsed(invoke, state: Path,
                                                              tmp_path: Path) -> None:
    run_id = dry_run(invoke)
    (state / "runs" / run_id / "transcript.jsonl").write_text("[" * 100_000 + "\n")
    result = run_cli(state, "show", run_id)
    assert result.exit_code == 0 and "(1 transcript lines did not parse)" in result.output
    assert run_cli(state, "report", "--out", str(tmp_path / "report")).exit_code == 0


def test_an_identity_path_that_is_a_file_is_a_usage_error(state: Path,
                                                          isolated_env: Path) -> None:
    shutil.rmtree(isolated_env)
    isolated_env.write_text("not a folder\n")
    for args in (["curator"], ["curator", "--dry-run"], ["worker", "F-004", "--dry-run"]):
        result = run_cli(state, *args)
        assert result.exit_code == 2 and "is a file" in result.output


def test_init_in_a_read_only_folder_names_it(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    with unwritable(project):
        result = CliRunner().invoke(cli, ["init", str(project)])
    assert result.exit_code == 2 and str(project / ".harness") in result.output
    assert not (project / ".harness").exists()


def test_init_keeps_a_gitignore_in_another_encoding(tmp_path: Path) -> None:
    import subprocess

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_bytes(b"caf\xe9/\n")
    assert CliRunner().invoke(cli, ["init", str(tmp_path)]).exit_code == 0
    assert (tmp_path / ".gitignore").read_bytes() == b"caf\xe9/\n.harness/\n"


def test_the_cli_edge_names_the_file_of_an_unexpected_os_error(state: Path,
                                                              tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("in the way\n")
    result = run_cli(state, "report", "--out", str(blocker / "report"))
    assert result.exit_code == 2 and str(blocker) in result.output
    assert "Traceback" not in result.output


def test_the_note_path_names_the_file_of_an_unexpected_os_error(state: Path) -> None:
    shutil.rmtree(state / "memory")
    (state / "memory").write_text("a file where the notes' folder should be\n")
    result = run_sh("--state", str(state), "note", "--file", "slug", "a long note",
                    cwd=state.parent)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and str(state / "memory") in result.stderr


@pytest.mark.parametrize("content", [b"\xff", b"[1]", b'{"usd": "lots"}', b'{"usd": 1e400}'])
def test_a_damaged_spend_record_is_a_usage_error_before_a_run(project: Path, state: Path,
                                                              tmp_path: Path,
                                                              content: bytes) -> None:
    git_init(project)
    (state / "spend.json").write_bytes(content)
    script = tmp_path / "worker.yaml"
    script.write_text(yaml.safe_dump([{"tools": [{"name": "finish", "input": {"summary": "x"}}]}]))
    result = run_cli(state, "worker", "F-004", "--backend", "scripted", "--script", str(script))
    assert result.exit_code == 2 and "spend.json" in result.output
    assert not (state / "runs").exists()


@pytest.mark.parametrize("cache", [
    {"runs": {"r": 5}, "pages": {}},
    {"runs": {"r": {"stamp": [], "row": {"run_id": 5}}}, "pages": {}},
    {"runs": [], "pages": None},
])
def test_a_damaged_report_cache_is_made_again(state: Path, tmp_path: Path,
                                              cache: dict) -> None:
    from harness.ops.report import site

    out = tmp_path / "report"
    assert run_cli(state, "report", "--out", str(out)).exit_code == 0
    version = json.loads((out / site.CACHE).read_text())["version"]
    (out / site.CACHE).write_text(json.dumps({"version": version, **cache}))
    result = run_cli(state, "report", "--out", str(out))
    assert result.exit_code == 0 and (out / "index.html").is_file()


def test_show_prompt_of_a_damaged_prompt_names_the_file(invoke, state: Path) -> None:
    run_id = dry_run(invoke)
    (state / "runs" / run_id / "prompt.md").write_bytes(b"# You are a worker\n\xff\n")
    result = run_cli(state, "show", run_id, "--prompt")
    assert result.exit_code == 2 and "prompt.md line 2: not UTF-8 text" in result.output
    assert run_cli(state, "show", run_id).exit_code == 0


def test_a_manifest_with_nulls_is_not_damaged(invoke, state: Path) -> None:
    """A scripted run records no model, an unpriced one no cost: null is no damage."""
    run_id = dry_run(invoke)
    path = state / "runs" / run_id / "manifest.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "model": None,
                                "cost_usd": None, "started_at": None, "pid": None}))
    listed = run_cli(state, "runs")
    assert listed.exit_code == 0 and run_id in listed.output and "damaged" not in listed.output
    assert run_cli(state, "show", run_id).exit_code == 0
    assert run_cli(state, "reconstruct", run_id, "--check").exit_code == 0


@pytest.mark.parametrize("where", ["state:raw.md", "identity:.candidates.log",
                                   "identity:archive/worker.md"])
def test_a_curator_input_turned_folder_stops_the_pass_before_its_database_is_made(
        state: Path, isolated_env: Path, where: str) -> None:
    # a file the pass streams after it opens (makes, migrates) <identity>/.curator.db: the
    # property suite found raw.md as a folder gave exit 2 with the database made
    folder, name = where.split(":")
    path = (state if folder == "state" else isolated_env) / name
    if path.exists():
        path.unlink()
    path.mkdir(parents=True)
    before = sorted(p.relative_to(isolated_env) for p in isolated_env.rglob("*"))
    result = run_cli(state, "curator")
    assert result.exit_code == 2 and f"{path} is a folder, not a file" in result.output
    assert sorted(p.relative_to(isolated_env) for p in isolated_env.rglob("*")) == before


@pytest.mark.slow  # one run.sh run per case: CI runs them all (HARNESS_SLOW=1)
@pytest.mark.parametrize("name, content", [
    ("tree.json", b"[]"), ("tree.json", b"null"), ("tree.json", b'"x"'),
    ("tree.json", b"[" * 100_000), ("tree.json", b'{"format": 1, "open": "x", "left": []}'),
    ("tree.json", b'{"format": 1, "open": null, "left": {"a.py": 5}}'),
    ("tree.json", "caf\xe9".encode("latin-1")),
    ("repository.json", b"[" * 100_000),
])
def test_a_damaged_tree_or_repository_record_is_never_a_traceback(project: Path, state: Path,
                                                                  name: str,
                                                                  content: bytes) -> None:
    git_init(project)
    with (state / "config.yaml").open("a") as config:
        config.write("stuck_after: 10\n")  # runs that change nothing: not blocked here
    script = project.parent / "turns.yaml"
    script.write_text("- tools: [{name: finish, input: {summary: done}}]\n")
    worker = ("worker", "F-004", "--backend", "scripted", "--script", str(script))
    assert run_sh(*worker, cwd=project).returncode == 0
    (state / name).write_bytes(content)
    for args in (worker, ("planner", "--backend", "scripted", "--script", str(script))):
        result = run_sh(*args, cwd=project)
        assert "Traceback" not in result.stderr, result.stderr
        assert result.returncode in (0, 2), result.stderr
        if result.returncode == 2:
            assert str(state / name) in result.stderr
    (state / name).unlink()  # the way out the message gives
    assert run_sh(*worker, cwd=project).returncode == 0


@pytest.mark.parametrize("key, value", [("verify", "make test\x00; rm -rf /"), ("attempts", -3)])
def test_a_plan_with_a_nul_in_verify_or_negative_attempts_is_refused(project: Path, state: Path,
                                                                    key: str, value) -> None:
    plan = json.loads((state / "features.json").read_text())
    good = (state / "features.json").read_bytes()
    plan[3][key] = value
    (state / "features.json").write_text(json.dumps(plan))
    for args in (("validator", "F-004", "--dry-run"), ("status",)):
        result = run_sh(*args, cwd=project)
        assert "Traceback" not in result.stderr, result.stderr
        assert result.returncode == 2, result.stderr
        assert "features.json: feature [3] (F-004) key" in result.stderr and key in result.stderr
    proposed = project.parent / "plan.json"
    proposed.write_text(json.dumps(plan))
    (state / "features.json").write_bytes(good)
    result = run_sh("plan", str(proposed), cwd=project)  # as a planner agent would give it
    assert result.returncode == 2 and key in result.stderr, result.stderr
    assert (state / "features.json").read_bytes() == good
