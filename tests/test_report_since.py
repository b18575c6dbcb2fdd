"""The report opens with what happened since the last report (harness/ops/report/since.py):
the content of `run.sh summary`, through real run.sh subprocesses; the first report covers
the whole mission, the next only what came after; a run page names its commit."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from conftest import run_sh
from test_summary import WRITE, a_night, scripted


def since_section(project: Path) -> str:
    result = run_sh("report", cwd=project)
    assert result.returncode == 0, result.stderr
    page = (project / ".harness" / "report" / "index.html").read_text()
    section = re.search(r'<section id="since">.*?</section>', page, re.S)
    assert section is not None and page.index('id="since"') < page.index('id="board"')
    return html.unescape(re.sub(r"<[^>]+>", " ", section.group(0)))


def words(text: str) -> str:
    return " ".join(text.split())


def test_the_first_report_opens_with_the_whole_mission(project: Path, tmp_path: Path) -> None:
    a_night(project, tmp_path)
    text = words(since_section(project))
    assert "Since the mission began" in text
    assert "4 runs (2 validator, 2 worker), $0.0000 spent" in text
    assert "Done (1) F-003" in text
    assert "Failed (1) F-004 --json output: F-004 failed (failed, attempt 1 of 1): " \
           "no tests for --top" in text
    assert "Blocked, waiting for you (1) F-002" in text
    assert "needs: worker r1 needs: the staging DB password" in text
    assert "run.sh answer F-002 TEXT" in text
    assert "Commits (1)" in text and "F-004: --json output" in text
    assert "json_out.py | 1 + 1 file changed, 1 insertion(+)" in text
    assert "Runs that erred (1) 1900000000-worker-F-001 exit 6 backend-error: " \
           "BackendError: API overloaded after 5 retries" in text
    recorded = json.loads((project / ".harness" / "last-report.json").read_text())
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", recorded["time"])


def test_the_next_report_shows_only_what_came_after(project: Path, tmp_path: Path) -> None:
    a_night(project, tmp_path)
    since_section(project)
    last = json.loads((project / ".harness" / "last-report.json").read_text())["time"]
    nothing = words(since_section(project))
    assert f"Since the last report ({last})" in nothing and "0 runs" in nothing
    assert "Done" not in nothing and "Commits" not in nothing and "erred" not in nothing
    assert "Blocked, waiting for you (1) F-002" in nothing  # still waiting: shown each time

    assert run_sh("answer", "F-002", "it is in the vault", cwd=project).returncode == 0
    assert scripted(project, tmp_path, "worker", "F-002", WRITE.replace("json_out", "one")) == 0
    text = words(since_section(project))
    assert "1 runs (1 worker)" in text and "Commits (1)" in text and "one.py | 1 +" in text
    assert "F-003" not in text and "json_out.py" not in text and "erred" not in text
    assert "Blocked" not in text


def test_a_run_page_names_the_commit_its_run_made(project: Path, tmp_path: Path) -> None:
    a_night(project, tmp_path)
    run_sh("report", cwd=project)
    worker = next((project / ".harness" / "runs").glob("*-worker-F-004")).name
    page = (project / ".harness" / "report" / "runs" / f"{worker}.html").read_text()
    commit = json.loads(run_sh("show", worker, "--json", cwd=project).stdout)["commit"]
    cell = re.search(r'<td colspan="3" id="commit">(.*?)</td>', page, re.S)
    assert cell is not None and commit in cell.group(1)
    assert "F-004: --json output" in cell.group(1) and "json_out.py | 1 +" in cell.group(1)


def test_a_damaged_record_of_the_last_report_is_exit_2_naming_it(project: Path) -> None:
    record = project / ".harness" / "last-report.json"
    record.write_text('{"time": "yesterday"}')
    result = run_sh("report", cwd=project)
    assert result.returncode == 2
    assert f"{record}: key 'time'" in result.stderr and "delete the file" in result.stderr
    assert not (project / ".harness" / "report").exists()
    record.write_text("[1, 2")
    result = run_sh("report", cwd=project)
    assert result.returncode == 2 and str(record) in result.stderr


def test_a_commit_made_in_a_worktree_is_named_after_its_merge(tmp_path: Path) -> None:
    from test_worktrees import make_mission

    project = make_mission(tmp_path, "worktrees")
    args = ("--backend", "scripted", "--script")
    assert run_sh("worker", "F-001", *args, str(tmp_path / "work.yaml"),
                  cwd=project).returncode == 0
    merged = run_sh("validator", "F-001", *args, str(tmp_path / "pass.yaml"), cwd=project)
    assert merged.returncode == 0, merged.stderr
    worker = next((project / ".harness" / "runs").glob("*-worker-F-001")).name
    manifest = json.loads(run_sh("show", worker, "--json", cwd=project).stdout)
    assert manifest["commit"] and not Path(manifest["workdir"]).exists()  # its tree is gone
    shown = run_sh("show", worker, cwd=project).stdout
    assert f"commit: {manifest['commit']} F-001: feature F-001" in shown
    assert "own-F-001.txt | 1 +" in shown
    text = words(since_section(project))
    assert "Commits (1)" in text and "own-F-001.txt | 1 +" in text
