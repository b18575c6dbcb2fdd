"""The HTML report in a real browser: headless Chromium driven by Playwright.

Skipped, with the reason, where Chromium or Playwright is missing; `.ci/run` installs
Chromium so CI runs these. Screenshots of the mission page and of one run page go to
$REPORT_SCREENSHOTS (else a pytest temp folder), named in the test output.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from report_mission import build_mission, feature_ids, tool_calls

from harness.ops.report.site import write_report

pytestmark = pytest.mark.slow  # a real Chromium: seconds a page

CHROMIUM = next((p for name in ("chromium", "chromium-browser")
                 if (p := shutil.which(name))), None)
# Chromium stalls on a closed network without the background-networking flags.
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]

playwright = pytest.importorskip("playwright.sync_api",
                                 reason="Playwright's Python package is not installed")
if CHROMIUM is None:
    pytest.skip("Chromium is not installed (Debian: apt-get install chromium)",
                allow_module_level=True)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("report-mission")
    identity = base / "identity"
    paths, run_id = build_mission(base / "mission")
    out = base / "report"
    write_report(paths.state, identity, out)
    return paths, out, run_id


@pytest.fixture(scope="module")
def browser():
    with playwright.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    """A page that collects console errors and uncaught exceptions in `page.problems`."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.problems = []
    page.on("console", lambda m: page.problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.problems.append(str(e)))
    page.on("request", lambda r: None if r.url.startswith(("file:", "data:"))
            else page.problems.append(f"network request: {r.url}"))
    yield page
    page.close()


def test_every_page_loads_without_console_errors_or_network(report, page) -> None:
    _, out, _ = report
    pages = sorted(out.rglob("*.html"))
    assert len(pages) >= 9  # index, memory, one runs page, six run pages
    for path in pages:
        page.goto(path.as_uri())
        assert page.title(), path
    assert page.problems == []


def test_plan_board_shows_every_feature(report, page) -> None:
    paths, out, _ = report
    page.goto((out / "index.html").as_uri())
    board = page.locator("#board")
    for fid in feature_ids(paths.state):
        assert board.locator(f"[id='{fid}']").count() == 1, fid
    assert page.locator("#status-done .card").count() == 4
    assert page.locator("#chart rect").count() >= 1


def test_run_page_shows_its_tool_calls_and_folds_long_output(report, page) -> None:
    paths, out, run_id = report
    page.goto((out / "runs" / f"{run_id}.html").as_uri())
    calls = page.locator(".call")
    assert calls.count() == tool_calls(paths.state, run_id) == 4
    assert calls.locator(".name").all_inner_texts() == ["bash", "bash", "note", "finish"]
    folded = calls.nth(1).locator("details")
    assert folded.count() == 1 and not folded.evaluate("d => d.open")
    assert "201 lines" in folded.locator("summary").inner_text()
    assert page.locator(".section").count() >= 5  # the prompt, folded by section
    assert page.problems == []


def test_markup_in_notes_and_tool_output_shows_as_text_and_runs_nothing(report, page) -> None:
    _, out, run_id = report
    for path in (out / "memory.html", out / "runs" / f"{run_id}.html"):
        page.goto(path.as_uri())
        assert page.evaluate("typeof window.pwned") == "undefined", path
        assert page.locator("script").count() == 0  # neither page needs the report's script
        assert "<script>window.pwned = " in page.inner_text("body"), path
    assert page.locator("img").count() == 0
    assert page.problems == []


def test_filters_and_sorting_on_the_runs_page(report, page) -> None:
    _, out, _ = report
    page.goto((out / "runs" / "page-1.html").as_uri())
    rows = page.locator("#runs tbody tr")
    assert rows.count() == 6
    page.check("input[name=failed]")
    visible = rows.filter(visible=True)
    assert visible.count() == 1 and "validator" in visible.inner_text()
    page.uncheck("input[name=failed]")
    page.select_option("select[name=role]", "worker")
    assert rows.filter(visible=True).count() == 3
    page.select_option("select[name=role]", "")
    page.click("th:text('cost')")  # descending first
    costs = [float(c) for c in rows.locator("td:nth-child(11)").evaluate_all(
        "cells => cells.map(c => c.dataset.v)")]
    assert costs == sorted(costs, reverse=True)
    assert page.problems == []


def test_screenshots_of_the_mission_and_a_run(report, page, tmp_path_factory) -> None:
    _, out, run_id = report
    folder = Path(os.environ.get("REPORT_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    shots = {"report-index.png": out / "index.html",
             "report-run.png": out / "runs" / f"{run_id}.html"}
    for name, path in shots.items():
        page.goto(path.as_uri())
        page.screenshot(path=str(folder / name), full_page=True)
        assert (folder / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    print(f"screenshots in {folder}")


def test_the_report_opens_with_what_happened_since_the_last_report(report, page) -> None:
    paths, out, _ = report
    page.goto((out / "index.html").as_uri())
    since = page.locator("#since")
    assert since.locator("h2").inner_text() == "Since the mission began"
    assert since.bounding_box()["y"] < page.locator("#board").bounding_box()["y"]
    assert "6 runs (1 planner, 2 validator, 3 worker)" in page.inner_text("#since-totals")
    assert page.locator("#since-done li").all_inner_texts() == ["F-004 --json output"]
    commits = page.locator("#since-commits li")
    assert commits.count() == 2
    for n in range(2):
        assert "F-004: --json output" in commits.nth(n).inner_text()
        assert "2 files changed" in commits.nth(n).locator("pre").inner_text()
    short = commits.nth(0).locator("code").inner_text()
    commits.nth(0).locator("a").click()  # to the run that made it, whose page names it
    assert page.locator("#commit code").inner_text().startswith(short) and len(short) == 10
    assert "textstats/__main__.py" in page.locator("#commit pre").inner_text()
    assert page.problems == []
