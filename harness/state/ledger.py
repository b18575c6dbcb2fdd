"""The harness's own outcome records: per-feature verdict ledgers, progress.log and the
mission's spend. Appends are single locked writes; spend is a locked read-modify-write.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from harness.errors import UsageError
from harness.state.memory import utc_now
from harness.state.reading import parse_json_line, read_json_object
from harness.state.store import (
    append_record,
    hold_lock,
    lock_path,
    read_tail,
    write_json,
    write_record,
)


def ledger_path(state: Path, feature_id: str) -> Path:
    return state / "ledger" / f"{feature_id}.jsonl"


def append_verdict(state: Path, feature_id: str, record: dict[str, Any]) -> dict[str, Any]:
    """Append one verdict to `<state>/ledger/<feature>.jsonl`; returns the line's record."""
    record = {"time": utc_now(), **record}
    path = ledger_path(state, feature_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(record, ensure_ascii=False) + "\n"
    append_record(path, line, lock_path(state, f"ledger-{feature_id}"))
    return record


def merge_waits(state: Path, feature_id: str) -> bool:
    """Whether the feature's last verdict is a pass whose merge waits on the person."""
    lines = read_tail(ledger_path(state, feature_id), 1)
    last = parse_json_line(lines[-1]) if lines else None
    return isinstance(last, dict) and str(last.get("merge", "")).startswith("waiting:")


def append_progress(state: Path, role: str, feature: str | None, run_id: str, result: str,
                    exit_code: int, cost: float | None) -> str:
    """One progress.log line per run outcome (`cost=unknown` for an unpriced model)."""
    spent = "unknown" if cost is None else f"${cost:.4f}"
    line = f"{utc_now()} {role} {feature or '-'} {run_id} {result} exit={exit_code} cost={spent}"
    append_record(state / "progress.log", line + "\n", lock_path(state, "progress"))
    return line


def append_merge(state: Path, feature_id: str, run_id: str, result: str, detail: str) -> str:
    """One `<state>/merges.log` line per landing of a feature on its base branch."""
    line = f"{utc_now()} {feature_id} {run_id} {result}: {' '.join(detail.split())}"
    append_record(merges_path(state), line + "\n", lock_path(state, "merges"))
    return line


def merges_path(state: Path) -> Path:
    return state / "merges.log"


def spent(state: Path) -> float:
    """Dollars spent by all finished runs of the mission; UsageError when spend.json is
    damaged (the budget cannot be checked against it)."""
    path = state / "spend.json"
    try:
        record = read_json_object(path)
    except UsageError as e:
        raise UsageError(f"{e}; it holds the mission's spend, {{\"usd\": DOLLARS}}: repair "
                         "it from progress.log's costs") from None
    if record is None:
        return 0.0
    usd = record.get("usd")
    if isinstance(usd, bool) or not isinstance(usd, int | float) or not 0 <= usd < 1e12:
        raise UsageError(f"{path}: key 'usd': expected the dollars spent, found {usd!r:.40}")
    return float(usd)


class MissionSpend:
    """The mission's spend as a run sees it before each model call: what finished runs
    spent (spend.json) and what the other runs in progress have spent so far (their
    transcripts' latest cost), so runs at once share one budget. Runs seen closed are not
    read again (a closed run never reopens)."""

    def __init__(self, state: Path, run_id: str) -> None:
        self.state, self.closed = state, {run_id}

    def total(self) -> float:
        running = self.running()  # before spend.json: a run finishing between is counted
        return spent(self.state) + running

    def running(self) -> float:
        from harness.state.runs import load_manifest, run_progress, runs_dir

        try:
            names = set(os.listdir(runs_dir(self.state))) - self.closed
        except FileNotFoundError:
            return 0.0
        total = 0.0
        for name in names:
            try:
                if load_manifest(self.state, name).get("status") != "started":
                    self.closed.add(name)  # finished, or its process is gone
                    continue
                cost = (run_progress(self.state, name) or {}).get("cost_usd")
            except (UsageError, OSError):
                continue  # a run being claimed (no manifest yet), or a damaged record
            if isinstance(cost, int | float) and not isinstance(cost, bool) and 0 < cost < 1e12:
                total += float(cost)
        return total


def add_spend(state: Path, usd: float) -> float:
    """Add a run's cost to the mission's spend under its lock; returns the new total."""
    if usd <= 0:
        return spent(state)
    with hold_lock(lock_path(state, "spend")):
        total = spent(state) + usd
        write_json(state / "spend.json", {"usd": round(total, 6)})
    return total


def settle_killed(state: Path, role: str, feature: str | None) -> float:
    """The spend of the last run of `role` on `feature` when it was killed outright (SIGKILL,
    a power cut) and never closed: the cost its transcript last reported reaches spend.json
    and progress.log once (its manifest, still `started`, is marked `settled_usd`). Called
    by the next such run, under that run's lock, before the budget is checked."""
    from harness.state.runs import recent_runs, run_progress, runs_dir

    last = recent_runs(state, role, feature, 1)
    if not last or last[-1].get("status") != "interrupted" or last[-1].get("finished_at") \
            or "settled_usd" in last[-1]:
        return 0.0
    manifest, run_id = last[-1], last[-1]["run_id"]
    cost = (run_progress(state, run_id) or {}).get("cost_usd")
    if isinstance(cost, bool) or not isinstance(cost, int | float):
        cost = 0.0  # unpriced, or no model turn before the kill
    cost = max(float(cost), 0.0)
    manifest.update(status="started", settled_usd=round(cost, 6))  # on disk it is `started`
    write_record(runs_dir(state) / run_id / "manifest.json",
                 json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    append_progress(state, role, feature, run_id, "killed", 137, cost)
    add_spend(state, cost)
    return cost
