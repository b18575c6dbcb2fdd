"""Writes the report: index.html (plan board, chart, latest runs), memory.html, runs/page-N.html
(every run, newest first, paginated) and runs/<run-id>.html, one page per run.

Incremental: `.report-cache.json` in the output keeps each run's summary and the size and
mtime of the files its page came from. A second report reads and renders only runs whose
files changed (or that were still running); their pages and the index pages are the only
ones written, and an index page whose text did not change is not rewritten either.
"""

from __future__ import annotations

import base64
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from harness.config import load_mission_config, mission_name
from harness.errors import UsageError
from harness.ops.report import mission
from harness.ops.report.chart import svg_chart
from harness.ops.report.run_page import run_context
from harness.state.memory import utc_now
from harness.state.run_summary import RunSummary, format_duration, format_tokens, summarize
from harness.state.runs import load_manifest, runs_dir
from harness.state.store import atomic_write

TEMPLATES = Path(__file__).resolve().parent / "templates"
REPORT_FORMAT = 1  # bump when the code changes what a page shows: every page is rewritten
PAGE_SIZE = 200  # runs per index page
LATEST = 25  # runs on the mission page
CACHE = ".report-cache.json"
SOURCES = ("manifest.json", "prompt.md", "transcript.jsonl", "verdict.json")


@dataclass
class Written:
    """What a report wrote: how many runs it covers, pages and bytes written, where."""

    out: Path
    runs: int
    run_pages: int
    pages: int
    bytes: int


def environment() -> Environment:
    """Jinja with autoescaping on: notes and tool output are untrusted text."""
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(duration=format_duration, tokens=format_tokens)
    return env


def script() -> tuple[str, str]:
    """The pages' one script and its CSP hash: no other script may run on a page."""
    text = (TEMPLATES / "report.js").read_text(encoding="utf-8")
    digest = base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
    return text, f"sha256-{digest}"


def version() -> str:
    """A digest of the templates and the report format: a change re-renders every page."""
    h = hashlib.sha256(str(REPORT_FORMAT).encode())
    for path in sorted(TEMPLATES.iterdir()):
        h.update(path.name.encode() + path.read_bytes())
    return h.hexdigest()


def stamp(folder: str) -> list[list[int]] | None:
    """Size and mtime of the files a run page is made from; None without a manifest."""
    out = []
    for name in SOURCES:
        try:
            st = os.stat(f"{folder}/{name}")
        except FileNotFoundError:
            if name == "manifest.json":
                return None
            out.append([0, 0])
            continue
        out.append([st.st_mtime_ns, st.st_size])
    return out


class Site:
    """One report being written into `out`."""

    def __init__(self, state: Path, identity: Path, out: Path) -> None:
        self.state, self.identity, self.out = state, identity, out
        self.env = environment()
        text, digest = script()
        self.common = {"mission": mission_name(load_mission_config(state), state),
                       "script": text, "script_hash": digest}
        self.written = Written(out, 0, 0, 0, 0)

    def write(self, relative: str, template: str, root: str, **context: Any) -> None:
        """Render a page; write it (atomically) unless the file already holds that text."""
        text = self.env.get_template(template).render(
            root=root, with_script=context.pop("with_script", False), **self.common, **context)
        path = self.out / relative
        data = text.encode("utf-8")
        try:
            if path.read_bytes() == data:
                return
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(data)  # no fsync: the report is derived and is rebuilt on demand
        os.replace(tmp, path)
        self.written.pages += 1
        self.written.bytes += len(data)

    def runs(self) -> list[RunSummary]:
        """Every run's summary, oldest first; pages written for new or changed runs."""
        cache_path, current = self.out / CACHE, version()
        try:
            cache = orjson.loads(cache_path.read_bytes())
        except (FileNotFoundError, orjson.JSONDecodeError):
            cache = {}
        known = cache.get("runs", {}) if cache.get("version") == current else {}
        entries, rows = {}, []
        folder = runs_dir(self.state)
        names = sorted(e.name for e in os.scandir(folder) if e.is_dir()) if folder.is_dir() else []
        for name in names:
            entry = self.run_entry(name, known.get(name))
            if entry is not None:
                entries[name] = entry
                rows.append(RunSummary(**entry["row"]))
        # orjson: the cache of 10,000 runs is read and written on every report
        atomic_write(cache_path, orjson.dumps({"version": current, "runs": entries}))
        rows.sort(key=lambda r: (r.started_at, r.run_id))
        return rows

    def run_entry(self, run_id: str, cached: dict[str, Any] | None) -> dict[str, Any] | None:
        """The cache entry of one run, its page rendered if its files changed since."""
        now = stamp(f"{runs_dir(self.state)}/{run_id}")
        if now is None:
            return None
        if (cached and cached["stamp"] == now and cached["row"]["status"] != "started"
                and (self.out / "runs" / f"{run_id}.html").exists()):
            return cached
        try:
            manifest = load_manifest(self.state, run_id)
        except UsageError as e:
            manifest = {"run_id": run_id, "status": "unreadable", "detail": str(e)}
        self.write(f"runs/{run_id}.html", "run.html.j2", "../",
                   **run_context(self.state, manifest))
        self.written.run_pages += 1
        return {"stamp": now, "row": vars(summarize(manifest))}


def write_report(state: Path, identity: Path, out: Path) -> Written:
    """Write (or bring up to date) the mission's report in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    site = Site(state, identity, out)
    rows = site.runs()
    dicts = [r.as_dict() for r in reversed(rows)]  # newest first
    pages = max(1, -(-len(dicts) // PAGE_SIZE))
    roles = sorted({r.role for r in rows})
    for page in range(1, pages + 1):
        site.write(f"runs/page-{page}.html", "runs.html.j2", "../", with_script=True,
                   rows=dicts[(page - 1) * PAGE_SIZE: page * PAGE_SIZE], page=page,
                   pages=pages, roles=roles)
    board = mission.plan_board(state, rows)
    counts = {status: len(features) for status, features in board.items()}
    totals = {"runs": len(rows), "failed": sum(r.failed for r in rows),
              "cost": sum(r.cost_usd for r in rows), "tokens": sum(r.tokens for r in rows)}
    site.write("index.html", "index.html.j2", "", with_script=True, board=board,
               counts=counts, totals=totals, chart=Markup(svg_chart(rows)), latest=dicts[:LATEST],
               pages=pages, known_runs={r.run_id for r in rows}, generated=utc_now())
    site.write("memory.html", "memory.html.j2", "", files=mission.memory_files(state),
               identity=mission.identity_files(identity), identity_dir=str(identity),
               notes=mission.long_notes(state))
    site.written.runs = len(rows)
    return site.written
