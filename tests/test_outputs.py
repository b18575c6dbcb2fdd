"""What the harness writes outside its state: crontab lines that survive cron's `%`, and a
report that never replaces a person's files (issue 31, point 8)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

from click.testing import CliRunner
from conftest import ROOT, run_sh

from harness.cli.app import cli
from harness.ops.cron import crontab
from harness.paths import Paths


def as_cron_runs(line: str) -> str:
    """The command cron would hand to the shell: cut at the first unescaped %, `\\%` -> %."""
    command = line.split(" ", 5)[5]
    command = re.split(r"(?<!\\)%", command)[0]
    return command.replace("\\%", "%")


def test_cron_lines_escape_percent_signs(tmp_path: Path) -> None:
    project = tmp_path / "100% done"
    paths = Paths(home=tmp_path / "tool 50%", state=project / ".harness", workdir=project,
                  identity=tmp_path / "identity")
    shutil.copytree(ROOT / "roles", paths.home / "roles")  # the lines name the roles' backends
    lines = [ln for ln in crontab(paths, ("worker", "curator")).splitlines()
             if not ln.startswith("#")]
    assert len(lines) == 2
    for line in lines:
        words = shlex.split(as_cron_runs(line))
        assert words[:2] == ["cd", str(project)]
        at = words.index(str(paths.home / "run.sh"))
        assert words[at + 1:at + 3] == ["--state", str(paths.state)]


def report(state: Path, out: Path):
    return CliRunner().invoke(cli, ["--state", str(state), "report", "--out", str(out)])


def test_report_refuses_a_folder_holding_a_persons_files(state: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    out.mkdir()
    (out / "index.html").write_text("<p>my own page</p>\n")
    result = report(state, out)
    assert result.exit_code == 2 and str(out) in result.output and "index.html" in result.output
    assert (out / "index.html").read_text() == "<p>my own page</p>\n"
    assert sorted(p.name for p in out.iterdir()) == ["index.html"]


def test_report_writes_into_a_new_empty_or_earlier_report_folder(state: Path,
                                                                 tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    for out in (tmp_path / "new", empty, tmp_path / "new"):  # the last: our earlier report
        result = report(state, out)
        assert result.exit_code == 0, result.output
        assert (out / "index.html").is_file() and (out / ".harness-report").is_file()


def test_report_rewrites_a_report_written_before_the_marker(state: Path, tmp_path: Path) -> None:
    out = tmp_path / "old"
    assert report(state, out).exit_code == 0
    (out / ".harness-report").unlink()  # as an earlier version left it: the cache only
    assert report(state, out).exit_code == 0


def test_report_out_a_file_is_a_usage_error(state: Path, tmp_path: Path) -> None:
    out = tmp_path / "file.html"
    out.write_text("mine\n")
    result = report(state, out)
    assert result.exit_code == 2 and "is a file" in result.output
    assert out.read_text() == "mine\n"


def test_what_an_agent_wrote_cannot_drive_the_terminal(project: Path, tmp_path: Path) -> None:
    """A blocked reason, a note and a summary holding escape sequences (a title change, a
    screen clear, a colour) are printed by run.sh with their control characters visible,
    never raw; JSON output stays JSON."""
    attack = "\x1b]0;PWNED\x07\x1b[2J\x1b[31mRED\x9b31m\r"
    turns = [{"tools": [{"name": "note", "input": {"kind": "GOTCHA", "text": "n " + attack}}]},
             {"tools": [{"name": "finish", "input": {"summary": "s " + attack,
                                                     "status": "blocked",
                                                     "reason": "r " + attack}}]}]
    script = tmp_path / "escapes.yaml"
    script.write_text(json.dumps(turns))
    worker = run_sh("worker", "F-004", "--backend", "scripted", "--script", str(script),
                    cwd=project)
    assert worker.returncode == 7, worker.stderr
    run_id = next((project / ".harness" / "runs").iterdir()).name
    shown = [worker] + [run_sh(*command, cwd=project) for command in (
        ["status"], ["summary"], ["show", run_id], ["runs"])]
    for result in shown:
        assert result.returncode in (0, 7), (result.args, result.stderr)
        for out in (result.stdout, result.stderr):
            assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", out), (result.args, out)
    assert "\\u001b]0;PWNED\\u0007" in shown[0].stdout + shown[1].stdout
    as_json = run_sh("show", run_id, "--json", cwd=project)
    assert json.loads(as_json.stdout)["run_id"] == run_id


def as_cronie_runs(line: str) -> str:
    """The command cronie hands to `sh -c` (do_command.c): a backslash before `%` is dropped,
    any other backslash kept, and an unescaped `%` ends the command."""
    out, escaped = [], False
    for ch in line.split(None, 5)[5]:
        if escaped:
            out[-1:] = [ch] if ch == "%" else [out[-1], ch]
            escaped = False
            continue
        if ch == "%":
            break
        escaped = ch == "\\"
        out.append(ch)
    return "".join(out)


def mission_in(folder: Path) -> Path:
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    assert run_sh("init", ".", cwd=folder).returncode == 0
    return folder


def test_cron_lines_for_a_folder_with_a_backslash_before_a_percent_run_there(
        tmp_path: Path) -> None:
    project = mission_in(tmp_path / "a\\%b")
    result = run_sh("cron", "worker", cwd=project)
    assert result.returncode == 0, result.stderr
    line = next(ln for ln in result.stdout.splitlines() if not ln.startswith("#"))
    command = as_cronie_runs(line)
    assert subprocess.run(["sh", "-n", "-c", command]).returncode == 0, command
    assert shlex.split(command)[:2] == ["cd", str(project)]


def test_cron_refuses_a_folder_whose_name_holds_a_newline(tmp_path: Path) -> None:
    project = mission_in(tmp_path / "two\nlines")
    result = run_sh("cron", cwd=project)
    assert result.returncode == 2, result.stdout  # a crontab line cannot hold it
    assert "newline" in result.stderr and "two\\nlines" in result.stderr, result.stderr
    assert result.stdout == ""
