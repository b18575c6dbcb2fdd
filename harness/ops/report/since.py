"""What the report opens with: what happened since the last report, the content of
`run.sh summary` (ops/summary.py) over the runs that ended after the previous report was
written. When that was is kept in `<state>/last-report.json`, with the runs it already showed
that ended in its last second (stamps are to the second); the first report covers the whole
mission.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson

from harness import FORMAT_VERSION
from harness.errors import UsageError
from harness.ops.summary import collect_since
from harness.state.reading import read_json_object
from harness.state.run_summary import RunSummary, parse_time
from harness.state.runs import damaged_run, load_manifest
from harness.state.store import atomic_write

LAST_REPORT = "last-report.json"


def last_report(state: Path) -> tuple[float, set[str]] | None:
    """When the previous report was written (seconds since the epoch) and the runs it showed
    that ended in that second; None before the first report. UsageError naming the file and
    the key when the record is damaged."""
    path = state / LAST_REPORT
    data = read_json_object(path)
    if data is None:
        return None
    when, seen = parse_time(data.get("time")), data.get("seen", [])
    if when is None:
        raise UsageError(f"{path}: key 'time': expected a time such as 2026-01-31T08:00:00Z, "
                         f"found {data.get('time')!r}; delete the file to report the whole "
                         "mission again")
    if not (isinstance(seen, list) and all(isinstance(s, str) for s in seen)):
        raise UsageError(f"{path}: key 'seen': expected a list of run ids; delete the file to "
                         "report the whole mission again")
    return when, set(seen)


def ended(row: RunSummary) -> float:
    """When a run ended, or began if it has not ended (as ops/summary.ended_at)."""
    return (parse_time(row.started_at) or 0.0) + (row.seconds or 0.0)


def since_last(state: Path, workdir: Path, rows: list[RunSummary],
               previous: tuple[float, set[str]] | None) -> dict[str, Any]:
    """The summary since the previous report (`last_report`; None: the first report, which
    covers the whole mission), with `first` saying which. Of `rows`, the report's runs, only
    the manifests of those that ended after it (and it did not show) are read."""
    cutoff, seen = previous or (0.0, set())
    manifests = []
    for row in rows:
        if ended(row) >= cutoff and row.run_id not in seen:
            try:
                manifests.append(load_manifest(state, row.run_id))
            except UsageError as e:
                manifests.append(damaged_run(row.run_id, e))
    return {**collect_since(state, workdir, cutoff, manifests), "first": previous is None}


def record_report(state: Path, rows: list[RunSummary], now: float) -> None:
    """Note that a report of `rows` was made at `now`: the next one opens with what came
    after (the runs that ended in this second and were shown are named, not shown again)."""
    second = float(int(now))
    # a run still going is left out: it is shown when it ends. One that ended with no time
    # of its end (an outage's record) counts as ending when it began, and is named too
    seen = [r.run_id for r in rows if r.status != "started" and ended(r) >= second]
    atomic_write(state / LAST_REPORT, orjson.dumps({
        "format": FORMAT_VERSION, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
        "seen": seen}))
