"""Writes the report: index.html (plan board, chart, latest runs), memory.html, runs/page-N.html
(every run, newest first, paginated) and runs/<run-id>.html, one page per run.

Incremental: `.report-cache.json` in the output keeps each run's summary and the size and
mtime of the files its page came from, and a digest of what each index page was made from.
A second report reads and renders only runs whose files changed (or that were still
running), and only the index pages whose rows changed: the runs are cut into pages from the
oldest, so a new run lands on page 1 (the newest) and the older pages stay as they are until
the page count grows. index.html and memory.html are rendered every time.
"""

from __future__ import annotations

import base64
import hashlib
import os
import time
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
from harness.ops.report.parallel import render_runs
from harness.ops.report.run_page import run_context
from harness.ops.report.since import last_report, record_report, since_last
from harness.state.memory import utc_now
from harness.state.run_summary import RunSummary, format_duration, format_tokens, summarize
from harness.state.runs import damaged_run, load_manifest, runs_dir
from harness.state.store import atomic_write

TEMPLATES = Path(__file__).resolve().parent / "templates"
REPORT_FORMAT = 1  # bump when the code changes what a page shows: every page is rewritten
PAGE_SIZE = 200  # runs per index page
LATEST = 25  # runs on the mission page
CACHE = ".report-cache.json"
MARKER = ".harness-report"  # in a folder a report was written to: later reports may rewrite it
_NUMBER, _COUNT = (int, float), (int,)
ROW_TYPES = {**{k: (str,) for k in ("run_id", "role", "feature", "status", "started_at",
                                    "result", "detail", "reason")},
             **{k: _COUNT for k in ("turns", "input_tokens", "output_tokens",
                                    "cache_read_tokens", "cache_write_tokens")},
             "seconds": (*_NUMBER, type(None)), "cost_usd": _NUMBER,
             "exit_code": (int, type(None)), "cost_unknown": (bool,)}  # a RunSummary's fields
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
    # auto_reload off: templates are compiled once per report, not stat'ed on every page
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True, auto_reload=False,
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


def _cached_run(entry: Any) -> bool:
    """Whether a cache entry is one this code wrote: a stamp, and a row of a RunSummary."""
    if not (isinstance(entry, dict) and isinstance(entry.get("stamp"), list)
            and isinstance(entry.get("row"), dict) and entry["row"].keys() == ROW_TYPES.keys()):
        return False
    return all(isinstance(entry["row"][k], t) for k, t in ROW_TYPES.items())


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

    def __init__(self, state: Path, identity: Path, out: Path, workdir: Path) -> None:
        self.state, self.identity, self.out, self.workdir = state, identity, out, workdir
        self.env = environment()
        text, digest = script()
        self.common = {"mission": mission_name(load_mission_config(state), state),
                       "script": text, "script_hash": digest}
        self.written = Written(out, 0, 0, 0, 0)
        self.version = version()
        self.cache = self.read_cache()
        self.page_keys: dict[str, str] = {}
        folder = out / "runs"
        # one listing instead of an exists() per run: 10,000 stats of a nothing-new report
        self.existing = set(os.listdir(folder)) if folder.is_dir() else set()

    def read_cache(self) -> dict[str, Any]:
        """The previous report's cache; empty when missing, unreadable or of another version."""
        try:
            cache = orjson.loads((self.out / CACHE).read_bytes())
        except (FileNotFoundError, orjson.JSONDecodeError):
            return {}
        if not isinstance(cache, dict) or cache.get("version") != self.version:
            return {}
        runs, pages = cache.get("runs"), cache.get("pages")
        if not isinstance(runs, dict) or not isinstance(pages, dict) or not all(
                _cached_run(entry) for entry in runs.values()):
            return {}  # damaged: every page is made again
        return cache

    def write_cache(self, entries: dict[str, Any]) -> None:
        # orjson: the cache of 10,000 runs is read and written on every report
        atomic_write(self.out / CACHE, orjson.dumps(
            {"version": self.version, "runs": entries, "pages": self.page_keys}))

    def write_unless_same(self, relative: str, template: str, root: str, **context: Any) -> None:
        """`write`, skipped when the page was last made from the same context and still exists."""
        key = hashlib.sha256(orjson.dumps([self.common["mission"], template, root, context]))
        digest = key.hexdigest()
        self.page_keys[relative] = digest
        name = relative.removeprefix("runs/")
        if self.cache.get("pages", {}).get(relative) == digest and name in self.existing:
            return
        self.write(relative, template, root, **context)

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

    def runs(self) -> tuple[list[RunSummary], dict[str, Any]]:
        """Every run's summary, oldest first, and the cache entries; pages written for new or
        changed runs."""
        known, entries, stale = self.cache.get("runs", {}), {}, []
        folder = str(runs_dir(self.state))
        names = sorted(e.name for e in os.scandir(folder) if e.is_dir()) if os.path.isdir(
            folder) else []
        for name in names:
            now = stamp(f"{folder}/{name}")
            cached = known.get(name)
            if now is None:
                continue
            if (cached and cached["stamp"] == now and cached["row"]["status"] != "started"
                    and f"{name}.html" in self.existing):
                entries[name] = cached
            else:
                stale.append((name, now))
        entries.update(render_runs(self.render_run, self.written, stale))
        rows = sorted((RunSummary(**e["row"]) for e in entries.values()),
                      key=lambda r: (r.started_at, r.run_id))
        return rows, entries

    def render_run(self, run_id: str, now: list[list[int]]) -> dict[str, Any]:
        """Render one run's page; its cache entry."""
        try:
            manifest = load_manifest(self.state, run_id)
        except UsageError as e:
            manifest = damaged_run(run_id, e)
        summary = summarize(manifest)
        self.write(f"runs/{run_id}.html", "run.html.j2", "../",
                   **run_context(self.state, manifest, summary, self.workdir))
        self.written.run_pages += 1
        return {"stamp": now, "row": vars(summary)}


def write_run_index(site: Site, rows: list[RunSummary]) -> int:
    """runs/page-N.html, page 1 the newest; returns the number of pages.

    Pages are cut from the oldest run, so page 1 holds the 1 to PAGE_SIZE newest runs and
    a new run changes only page 1 until a new page starts (then every page's number shifts).
    """
    pages = max(1, -(-len(rows) // PAGE_SIZE))
    roles = sorted({r.role for r in rows})
    for k in range(pages):
        chunk = [r.as_dict() for r in reversed(rows[k * PAGE_SIZE: (k + 1) * PAGE_SIZE])]
        site.write_unless_same(f"runs/page-{pages - k}.html", "runs.html.j2", "../",
                               with_script=True, rows=chunk, page=pages - k, pages=pages,
                               roles=roles)
    return pages


def check_folder(out: Path) -> None:
    """UsageError unless `out` is new, empty, or holds an earlier report (its marker, or the
    cache of a report written before there was one): a person's files are never replaced."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out} is a file; give --out a folder")
    if out.is_dir() and not (out / MARKER).is_file() and not (out / CACHE).is_file():
        found = sorted(os.listdir(out))
        if found:
            listed = ", ".join(found[:3]) + (", ..." if len(found) > 3 else "")
            raise UsageError(f"{out} holds files no report of ours wrote ({listed}); give "
                             "--out an empty or new folder, or one an earlier report wrote")


def write_report(state: Path, identity: Path, out: Path, workdir: Path | None = None) -> Written:
    """Write (or bring up to date) the mission's report in `out` (see `check_folder`),
    opening with what happened since the last report; commits are read in `workdir` (the
    project, by default the state folder's parent)."""
    check_folder(out)
    previous, now = last_report(state), time.time()  # a damaged record: refused before writing
    site = Site(state, identity, out, workdir or state.parent)
    out.mkdir(parents=True, exist_ok=True)
    if not (out / MARKER).is_file():
        atomic_write(out / MARKER, "A report of autonomous-harness (run.sh report); the next "
                                   "report rewrites the files in this folder.\n")
    rows, entries = site.runs()
    since = since_last(state, site.workdir, rows, previous)
    pages = write_run_index(site, rows)
    board = mission.plan_board(state, rows)
    counts = {status: len(features) for status, features in board.items()}
    totals = {"runs": len(rows), "failed": sum(r.failed for r in rows),
              "cost": sum(r.cost_usd for r in rows), "tokens": sum(r.tokens for r in rows)}
    site.write("index.html", "index.html.j2", "", with_script=True, board=board, since=since,
               counts=counts, totals=totals, chart=Markup(svg_chart(rows)),
               latest=[r.as_dict() for r in reversed(rows[-LATEST:])],
               pages=pages, known_runs={r.run_id for r in rows}, generated=utc_now())
    site.write("memory.html", "memory.html.j2", "", files=mission.memory_files(state),
               identity=mission.identity_files(identity), identity_dir=str(identity),
               notes=mission.long_notes(state))
    site.write_cache(entries)
    record_report(state, rows, now)
    site.written.runs = len(rows)
    return site.written
