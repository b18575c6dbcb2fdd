"""`run.sh report` without a browser: escaping, incremental writes, pagination, the chart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from report_mission import HOSTILE_NOTE, build_mission

from harness.cli.app import cli
from harness.ops.report import parallel, site
from harness.ops.report.chart import buckets, svg_chart
from harness.ops.report.since import LAST_REPORT
from harness.ops.report.site import write_report
from harness.state.run_summary import summarize
from harness.state.runs import start_run


@pytest.fixture(scope="module")
def mission(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("mission")
    paths, run_id = build_mission(base)
    return paths, run_id


@pytest.fixture
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Index pages of 20 runs, not 200: the same pagination, a tenth of the runs to write."""
    monkeypatch.setattr(site, "PAGE_SIZE", 20)


def fake_runs(state: Path, n: int, start: int = 1_800_000_000, month: int = 1) -> list[str]:
    """`n` finished run records, one a minute, every fifth one failed."""
    ids = []
    for i in range(n):
        run_id = f"{start + 60 * i}-worker-F-{i % 7 + 1:03d}"
        (state / "runs" / run_id).mkdir(parents=True)
        stamp = f"2027-{month:02d}-{1 + i // 1440:02d}T{i // 60 % 24:02d}:{i % 60:02d}:00Z"
        record = start_run(state, run_id, {"role": "worker", "feature": f"F-{i % 7 + 1:03d}"})
        record.manifest["started_at"] = stamp
        record.finish("finished", 1 if i % 5 == 0 else 0, cost_usd=0.01 * (i % 3),
                      result="fail" if i % 5 == 0 else "in_progress", finished_at=stamp)
        ids.append(run_id)
    return ids


def test_untrusted_text_is_escaped_on_every_page(mission, tmp_path: Path) -> None:
    paths, run_id = mission
    write_report(paths.state, paths.identity, tmp_path)
    memory_page = (tmp_path / "memory.html").read_text()
    run_page = (tmp_path / "runs" / f"{run_id}.html").read_text()
    assert "&lt;script&gt;window.pwned = 5&lt;/script&gt; in a long note" in memory_page
    assert "&lt;script&gt;window.pwned = 6" in memory_page  # summary.md
    assert "&lt;img src=x onerror=" in run_page
    for page in (memory_page, run_page):
        assert "<script>window" not in page and "<img" not in page
    assert HOSTILE_NOTE not in memory_page


def test_second_report_writes_only_new_and_changed_runs(mission, tmp_path: Path) -> None:
    paths, run_id = mission
    first = write_report(paths.state, paths.identity, tmp_path)
    runs = len(list((paths.state / "runs").iterdir()))
    assert first.runs == first.run_pages == runs
    page = tmp_path / "runs" / f"{run_id}.html"
    before = page.stat().st_mtime_ns
    again = write_report(paths.state, paths.identity, tmp_path)
    assert (again.runs, again.run_pages) == (runs, 0)
    assert page.stat().st_mtime_ns == before
    new = fake_runs(paths.state, 1)[0]
    third = write_report(paths.state, paths.identity, tmp_path)
    assert (third.runs, third.run_pages) == (runs + 1, 1)
    assert (tmp_path / "runs" / f"{new}.html").is_file()
    # a finished record that changes (a verdict arrives late) is rendered again
    (paths.state / "runs" / new / "verdict.json").write_text('{"verdict": "fail", "reason": "r"}')
    assert write_report(paths.state, paths.identity, tmp_path).run_pages == 1
    assert '<b>fail</b>: r' in (tmp_path / "runs" / f"{new}.html").read_text()


def test_runs_index_is_paginated_newest_first(tmp_path: Path, state: Path,
                                              small_pages: None) -> None:
    ids = fake_runs(state, site.PAGE_SIZE * 2 + 5)
    out = tmp_path / "report"
    written = write_report(state, tmp_path / "identity", out)
    assert written.runs == len(ids)
    pages = sorted(out.glob("runs/page-*.html"))
    assert [p.name for p in pages] == ["page-1.html", "page-2.html", "page-3.html"]
    first, last = (out / "runs/page-1.html").read_text(), (out / "runs/page-3.html").read_text()
    # pages are cut from the oldest run: page 1, the newest, holds the 5 left over
    assert first.index(ids[-1]) < first.index(ids[-2]) and ids[0] not in first
    assert first.count('<tr data-role=') == 5
    assert last.count('<tr data-role=') == site.PAGE_SIZE
    assert ids[0] in last and last.index(ids[site.PAGE_SIZE - 1]) < last.index(ids[0])
    index = (out / "index.html").read_text()
    assert f"{len(ids)} runs ({sum(1 for i in range(len(ids)) if i % 5 == 0)} failed)" in index


def test_a_new_run_rewrites_only_the_index_page_it_lands_on(tmp_path: Path, state: Path,
                                                            small_pages: None) -> None:
    fake_runs(state, site.PAGE_SIZE * 2 + 5)
    out = tmp_path / "report"
    write_report(state, tmp_path / "identity", out)
    mtimes = {p.name: p.stat().st_mtime_ns for p in out.glob("runs/*.html")}
    idle = write_report(state, tmp_path / "identity", out)
    assert idle.run_pages == 0 and idle.pages <= 1  # index.html: it says when it was made
    new = fake_runs(state, 1, start=1_900_000_000, month=2)[0]
    third = write_report(state, tmp_path / "identity", out)
    changed = {p.name for p in out.glob("runs/*.html")
               if p.stat().st_mtime_ns != mtimes.get(p.name)}
    assert changed == {"page-1.html", f"{new}.html"} and third.run_pages == 1
    assert new in (out / "runs/page-1.html").read_text()
    # a page whose file went missing is written again though its rows did not change
    (out / "runs/page-3.html").unlink()
    assert write_report(state, tmp_path / "identity", out).pages <= 2
    assert (out / "runs/page-3.html").is_file()


def test_a_new_page_renumbers_every_index_page(tmp_path: Path, state: Path,
                                               small_pages: None) -> None:
    ids = fake_runs(state, site.PAGE_SIZE)
    out = tmp_path / "report"
    write_report(state, tmp_path / "identity", out)
    fake_runs(state, 1, start=1_900_000_000, month=2)
    assert write_report(state, tmp_path / "identity", out).run_pages == 1
    assert ids[0] in (out / "runs/page-2.html").read_text()
    assert "page 1 of 2" in (out / "runs/page-1.html").read_text()


def test_report_command_writes_and_names_the_folder(invoke, state: Path, tmp_path: Path) -> None:
    fake_runs(state, 3)
    result = invoke("report", "--out", str(tmp_path / "r"))
    assert result.exit_code == 0, result.output
    assert "report of 3 runs: 3 run pages rendered" in result.output
    assert f"file://{tmp_path / 'r' / 'index.html'}" in result.output
    assert invoke("report").exit_code == 0 and (state / "report" / "index.html").is_file()


def test_a_run_of_unknown_cost_shows_unknown_not_zero(state: Path, tmp_path: Path) -> None:
    run_id = fake_runs(state, 2)[1]
    manifest = state / "runs" / run_id / "manifest.json"
    data = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**data, "cost_usd": None, "cost_unknown": True}))
    out = tmp_path / "report"  # tmp_path holds the project: no report may be written there
    write_report(state, state.parent / "identity", out)
    run_page = (out / "runs" / f"{run_id}.html").read_text()
    assert "<td colspan=\"3\">unknown</td>" in run_page
    assert ">unknown</td>" in (out / "runs" / "page-1.html").read_text()


def test_report_of_a_missing_state_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--state", str(tmp_path / "nope"), "report"])
    assert result.exit_code == 2 and "does not exist" in result.output


def test_unreadable_manifest_gets_a_page_and_counts_as_failed(state: Path, tmp_path: Path) -> None:
    folder = state / "runs" / "1800000000-worker-F-001"
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text("{broken")
    written = write_report(state, tmp_path / "identity", tmp_path / "out")
    page = (tmp_path / "out" / "runs" / "1800000000-worker-F-001.html").read_text()
    assert written.runs == 1 and "damaged" in page and "line 1" in page


def test_chart_buckets_cost_and_runs_per_hour_then_per_day() -> None:
    rows = [summarize({"run_id": f"r{i}", "started_at": stamp, "cost_usd": cost})
            for i, (stamp, cost) in enumerate([("2027-01-01T10:05:00Z", 0.5),
                                               ("2027-01-01T10:55:00Z", 0.25),
                                               ("2027-01-01T12:00:00Z", 1.0)])]
    start, step, data = buckets(rows)
    assert step == 3600 and data == [[0.75, 2], [0.0, 0], [1.0, 1]]
    far = rows + [summarize({"run_id": "x", "started_at": "2027-03-01T00:00:00Z"})]
    assert buckets(far)[1] >= 86400 and len(buckets(far)[2]) <= 90
    svg = svg_chart(rows)
    assert svg.count("<rect") == 3 and "max $1.00" in svg
    assert "no runs" in svg_chart([])


def test_cache_of_another_report_version_renders_everything(state: Path, tmp_path: Path) -> None:
    fake_runs(state, 2)
    write_report(state, tmp_path / "identity", tmp_path / "out")
    cache = tmp_path / "out" / site.CACHE
    data = json.loads(cache.read_text())
    cache.write_text(json.dumps({**data, "version": "older"}))
    assert write_report(state, tmp_path / "identity", tmp_path / "out").run_pages == 2


def test_runs_rendered_in_processes_match_those_rendered_in_one(
        tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = fake_runs(state, 6)
    serial = write_report(state, tmp_path / "identity", tmp_path / "serial")
    (state / LAST_REPORT).unlink()  # both open "since the mission began"
    monkeypatch.setattr(parallel, "PARALLEL_FROM", 2)
    forked = write_report(state, tmp_path / "identity", tmp_path / "forked")
    assert (forked.run_pages, forked.pages, forked.bytes) == (
        serial.run_pages, serial.pages, serial.bytes)
    for run_id in ids:
        page = f"runs/{run_id}.html"
        assert (tmp_path / "forked" / page).read_text() == (tmp_path / "serial" / page).read_text()
    assert write_report(state, tmp_path / "identity", tmp_path / "forked").run_pages == 0
