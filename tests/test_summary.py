"""The morning view through run.sh: `summary --since`, a worker run's real outcome, and each
failure's reason in `runs --failed`."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import git_init, run_sh

from harness.errors import UsageError
from harness.ops.summary import parse_since

WRITE = ("- tools: [{name: str_replace_based_edit_tool, input: {command: create, "
         "path: json_out.py, file_text: \"print('{}')\\n\"}}]\n"
         "- tools: [{name: finish, input: {summary: wrote json_out.py}}]\n")
FAIL = "- tools: [{name: verdict, input: {verdict: fail, reason: no tests for --top}}]\n"
PASS = "- tools: [{name: verdict, input: {verdict: pass, reason: all criteria hold}}]\n"


def scripted(project: Path, tmp_path: Path, role: str, fid: str, turns: str) -> int:
    script = tmp_path / f"{role}-{fid}.yaml"
    script.write_text(turns)
    result = run_sh(role, fid, "--backend", "scripted", "--script", str(script), cwd=project)
    return result.returncode


def a_night(project: Path, tmp_path: Path) -> None:
    """F-004 worked on, committed and failed for good; F-003 passed; F-002 blocked; one run
    that erred (its manifest written as an outage leaves it)."""
    state = project / ".harness"
    plan = json.loads((state / "features.json").read_text())
    for f in plan:
        f.pop("verify", None)
    plan[2]["status"] = "in_progress"
    plan[1].update(status="blocked", blocked_reason="worker r1 needs: the staging DB password")
    (state / "features.json").write_text(json.dumps(plan))
    with (state / "config.yaml").open("a") as config:
        config.write("max_attempts: 1\n")
    git_init(project)
    assert scripted(project, tmp_path, "worker", "F-004", WRITE) == 0
    assert scripted(project, tmp_path, "validator", "F-004", FAIL) == 1
    assert scripted(project, tmp_path, "validator", "F-003", PASS) == 0
    erred = state / "runs" / "1900000000-worker-F-001"
    erred.mkdir()
    (erred / "manifest.json").write_text(json.dumps({
        "run_id": erred.name, "role": "worker", "feature": "F-001", "status": "finished",
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "exit_code": 6,
        "result": "backend-error", "error": "BackendError: API overloaded after 5 retries"}))


def test_summary_tells_the_night(project: Path, tmp_path: Path) -> None:
    a_night(project, tmp_path)
    result = run_sh("summary", "--since", "2h", cwd=project)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "(2h): 4 runs (2 validator, 2 worker), $0.0000 spent" in out
    assert "Done (1):\n  F-003 " in out
    assert "Failed (1):\n  F-004 --json output: " in out and "no tests for --top" in out
    assert "Blocked, waiting for you (1):" in out
    assert "needs: worker r1 needs: the staging DB password" in out
    assert "answer: run.sh answer F-002 TEXT" in out
    assert "Commits (1):" in out and "F-004: --json output" in out
    assert "json_out.py | 1 +" in out and "1 file changed, 1 insertion(+)" in out
    assert "Runs that erred (1):\n  1900000000-worker-F-001 exit 6 backend-error: " \
           "BackendError: API overloaded" in out
    data = json.loads(run_sh("summary", "--json", cwd=project).stdout)
    assert [d["feature"] for d in data["done"]] == ["F-003"]


def test_a_worker_run_awaits_validation_and_failed_runs_say_why(project: Path,
                                                               tmp_path: Path) -> None:
    a_night(project, tmp_path)
    runs = run_sh("runs", cwd=project).stdout
    worker_line = next(line for line in runs.splitlines() if "-worker-F-004" in line)
    assert worker_line.endswith("awaits validation") and "in_progress" not in runs
    failed = run_sh("runs", "--failed", cwd=project).stdout
    assert "fail: F-004 failed (failed, attempt 1 of 1): no tests for --top" in failed
    assert "backend-error: BackendError: API overloaded after 5 retries" in failed


def test_an_empty_span_and_a_bad_span(project: Path) -> None:
    result = run_sh("summary", "--since", "30m", cwd=project)
    assert result.returncode == 0 and "0 runs" in result.stdout
    bad = run_sh("summary", "--since", "yesterday", cwd=project)
    assert bad.returncode == 2 and "--since takes a span such as 30m" in bad.stderr


@pytest.mark.parametrize("span, seconds", [("30m", 1800), ("12h", 43200), ("2d", 172800),
                                           ("1.5h", 5400), ("90s", 90)])
def test_spans(span: str, seconds: float) -> None:
    assert parse_since(span) == seconds
    with pytest.raises(UsageError):
        parse_since("12 hours")


def test_show_names_the_commit_a_run_made_and_the_report_says_why_runs_failed(
        project: Path, tmp_path: Path) -> None:
    a_night(project, tmp_path)
    worker_run = next((project / ".harness" / "runs").glob("*-worker-F-004")).name
    shown = run_sh("show", worker_run, cwd=project).stdout
    assert "commit: " in shown and "F-004: --json output" in shown
    assert "json_out.py | 1 +" in shown
    assert run_sh("report", cwd=project).returncode == 0
    pages = (project / ".harness" / "report" / "runs").glob("page-*.html")
    table = "".join(page.read_text() for page in pages)
    assert "no tests for --top" in table and "awaits validation" in table


@pytest.mark.parametrize("span", ["99999999999999999999d", "1000000000w"])
def test_a_span_longer_than_the_clock_covers_everything(project: Path, span: str) -> None:
    text = run_sh("summary", "--since", span, cwd=project)
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith(f"Since 1970-01-01T00:00:00Z ({span}): ")
    data = run_sh("summary", "--since", span, "--json", cwd=project)
    assert data.returncode == 0, data.stderr
    assert json.loads(data.stdout)["since"] == "1970-01-01T00:00:00Z"


def test_a_damaged_manifests_commit_is_never_an_option_to_git(project: Path,
                                                              tmp_path: Path) -> None:
    git_init(project)
    script = tmp_path / "finish.yaml"
    script.write_text("- tools: [{name: finish, input: {summary: done}}]\n")
    assert run_sh("worker", "F-004", "--backend", "scripted", "--script", str(script),
                  cwd=project).returncode == 0
    (run,) = (project / ".harness" / "runs").iterdir()
    manifest = json.loads((run / "manifest.json").read_text())
    written = tmp_path / "written-by-git.txt"
    manifest["commit"] = f"--output={written}"
    (run / "manifest.json").write_text(json.dumps(manifest))
    for args in (["summary"], ["show", run.name], ["report"]):
        result = run_sh(*args, cwd=project)
        assert result.returncode == 0, result.stderr
        assert not written.exists(), args


def test_a_night_of_outages_is_counted_not_listed_run_by_run(project: Path) -> None:
    """A loop retrying through an outage all night: each erred run was a line of the
    morning's summary (and of the report), burying what was done and what is blocked."""
    now = int(time.time())
    for n in range(200):
        erred = project / ".harness" / "runs" / f"{now - 1000 + n}-worker-F-004"
        erred.mkdir(parents=True)
        (erred / "manifest.json").write_text(json.dumps({
            "run_id": erred.name, "role": "worker", "feature": "F-004", "status": "finished",
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 1000 + n)),
            "exit_code": 6, "result": "backend-error", "error": f"BackendError: overloaded {n}"}))
    shown = run_sh("summary", "--since", "1d", cwd=project)
    assert shown.returncode == 0, shown.stderr
    assert "Runs that erred (200)" in shown.stdout and "and 150 earlier" in shown.stdout
    assert "overloaded 199" in shown.stdout and "overloaded 149\n" not in shown.stdout
    assert shown.stdout.count("backend-error") == 50
    data = json.loads(run_sh("summary", "--since", "1d", "--json", cwd=project).stdout)
    assert len(data["erred"]) == 50 and data["erred_not_shown"] == 150
    assert run_sh("report", cwd=project).returncode == 0
    index = (project / ".harness" / "report" / "index.html").read_text()
    since = index.split('<section id="since">')[1].split("</section>")[0]
    assert since.count("backend-error") == 50 and "and 150 earlier" in since
