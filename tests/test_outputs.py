"""What the harness writes outside its state: crontab lines that survive cron's `%`, and a
report that never replaces a person's files (issue 31, point 8)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from click.testing import CliRunner

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
    lines = [ln for ln in crontab(paths, ("worker", "curator")).splitlines()
             if not ln.startswith("#")]
    assert len(lines) == 2
    for line in lines:
        words = shlex.split(as_cron_runs(line))
        assert words[:2] == ["cd", str(project)]
        assert words[3] == str(paths.home / "run.sh")
        assert words[5] == str(paths.state)


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
