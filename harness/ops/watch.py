"""`run.sh watch`: the runs in progress, refreshing in the terminal (rich's Live and Table).

What a run in progress has on disk is all it reads: its manifest (status `started`, its
process alive), the turns and cost so far that its newest transcript events report
(`so_far`, written by every backend), and the last tool call in its transcript's tail.
"""

from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from harness.errors import UsageError
from harness.names import visible
from harness.ops.show import clip, describe_call
from harness.state.reading import parse_json_line
from harness.state.run_summary import format_duration, parse_time
from harness.state.runs import load_manifest, run_progress, runs_dir
from harness.state.store import read_tail
from harness.state.transcript import fold_turns

TAIL_LINES = 40  # transcript lines read from a run's end to find its last tool call
CALL_CHARS = 70


@dataclass
class LiveRun:
    """A run in progress as the watch shows it."""

    run_id: str
    role: str
    feature: str
    started_at: str
    seconds: float | None
    turns: int
    last_call: str  # "" before the first tool call
    cost_usd: float | None  # None: not priced (an unknown model) or nothing reported yet


class Watcher:
    """Finds the runs in progress; remembers which folders were seen closed, so a refresh
    reads only the manifests of runs that may still be running (a closed run never reopens)."""

    def __init__(self, state: Path) -> None:
        self.state = state
        self.closed: set[str] = set()

    def live(self, now: float | None = None) -> list[LiveRun]:
        """The runs in progress, oldest first."""
        folder = runs_dir(self.state)
        names = sorted(os.listdir(folder)) if folder.is_dir() else []
        out = []
        for name in names:
            if name in self.closed:
                continue
            try:
                manifest = load_manifest(self.state, name)
            except UsageError:
                continue  # no manifest yet (a run being claimed), or a damaged one
            if manifest.get("status") != "started":
                self.closed.add(name)
                continue
            out.append(live_run(self.state, manifest, time.time() if now is None else now))
        return out


def live_run(state: Path, manifest: dict[str, Any], now: float) -> LiveRun:
    """What a started run's records say of it so far."""
    run_id = manifest["run_id"]
    progress = run_progress(state, run_id) or {}
    cost, turns = progress.get("cost_usd"), progress.get("turns")
    start = parse_time(manifest.get("started_at"))
    return LiveRun(run_id=run_id, role=str(manifest.get("role") or "?"),
                   feature=str(manifest.get("feature") or "-"),
                   started_at=str(manifest.get("started_at") or ""),
                   seconds=None if start is None else max(0.0, now - start),
                   turns=turns if isinstance(turns, int) else 0,  # a damaged line: 0
                   last_call=last_call(state, run_id),
                   cost_usd=float(cost) if isinstance(cost, int | float) and math.isfinite(cost)
                   else None)


def last_call(state: Path, run_id: str) -> str:
    """The newest tool call in a run's transcript tail, as `show` describes it."""
    lines = read_tail(runs_dir(state) / run_id / "transcript.jsonl", TAIL_LINES)
    events = [e for e in map(parse_json_line, lines) if e is not None]
    calls = [c for turn in fold_turns(events) for c in turn.calls]
    if not calls:
        return ""
    call = calls[-1]
    running = " (running)" if call.result is None else ""
    return f"{call.name}: {clip(describe_call(call), CALL_CHARS)}{running}"


def as_json(runs: list[LiveRun]) -> list[dict[str, Any]]:
    return [asdict(r) for r in runs]


def table(mission: str, runs: list[LiveRun], at: str) -> Table:
    """One frame: a table of the runs in progress, its caption the time and the count."""
    grid = Table(title=Text(visible(f"{mission}: {len(runs)} run{'s' * (len(runs) != 1)} "
                                    "in progress")),
                 caption=f"{at} · run.sh show RUN_ID for a run's turns", title_justify="left",
                 expand=False)
    for name, justify in (("run", "left"), ("role", "left"), ("feature", "left"),
                          ("time", "right"), ("turns", "right"), ("cost so far", "right"),
                          ("last tool call", "left")):
        grid.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for r in runs:
        cost = "-" if r.cost_usd is None else f"${r.cost_usd:.4f}"
        cells = (r.run_id, r.role, r.feature, format_duration(r.seconds), str(r.turns), cost,
                 r.last_call or "-")
        grid.add_row(*(Text(visible(cell)) for cell in cells))  # an agent's text: no markup
    if not runs:
        grid.add_row("no runs in progress", "", "", "", "", "", "")
    return grid


def frame(watcher: Watcher, mission: str) -> Table:
    return table(mission, watcher.live(), time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime()))


def watch(state: Path, mission: str, interval: float, once: bool) -> None:
    """Print the runs in progress: one frame when `once` or when stdout is no terminal (a
    script or a pipe gets one table, not a stream of them); else refresh every `interval`
    seconds until Ctrl-C."""
    from rich.console import Console
    from rich.live import Live

    # the terminal itself: run.sh's stdout shows escapes as text (cli/entry.Shown), and the
    # table's own must reach it; each cell an agent wrote is made visible (table)
    console = Console(file=getattr(sys.stdout, "unescaped", sys.stdout))
    watcher = Watcher(state)
    if once or not console.is_terminal:
        wide = Console(file=console.file, width=max(console.width, 160), soft_wrap=False)
        wide.print(frame(watcher, mission))
        return
    try:
        with Live(frame(watcher, mission), console=console, auto_refresh=False) as live:
            while True:
                time.sleep(interval)
                live.update(frame(watcher, mission), refresh=True)
    except KeyboardInterrupt:
        return
