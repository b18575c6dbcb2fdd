"""Stuck detection: a feature that makes no progress is blocked instead of retried until
the budget is gone. Pure functions over run manifests and ledger records.
"""

from __future__ import annotations

from typing import Any

from rapidfuzz import fuzz

SAME_REASON = 90  # rapidfuzz ratio at which two failure reasons count as the same
FRESH_START = ("retry", "answer")  # a person's say in the ledger after which runs count anew


def agent_worked(manifest: dict[str, Any]) -> bool:
    """Whether the agent worked in a run: it made a model call and the run did not end in
    an error (an outage, a refused key, a spent budget) that kept it from working."""
    return "error" not in manifest and manifest.get("turns", 1) > 0


def no_change_streak(worker_runs: list[dict[str, Any]], n: int) -> bool:
    """Whether the last `n` finished worker runs in which the agent worked all committed
    nothing (git work trees only)."""
    recent = [m for m in worker_runs
              if m.get("status") == "finished" and agent_worked(m)][-n:]
    return len(recent) == n and all("commit" in m and m["commit"] is None for m in recent)


def since_fresh_start(worker_runs: list[dict[str, Any]],
                      records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs (oldest first) after the worker run that was the feature's latest when a
    person last retried or answered it (its ledger `records` name it): those up to it do not
    count toward a block the person has just lifted. By run, not by time: a retry in the
    second a run ended is after it."""
    fresh = [r for r in records if r.get("verdict") in FRESH_START and "after_run" in r]
    if not fresh:
        return worker_runs
    ids = [m.get("run_id") for m in worker_runs]
    after = fresh[-1]["after_run"]
    return worker_runs[ids.index(after) + 1:] if after in ids else worker_runs


def repeated_failure(verdicts: list[dict[str, Any]], n: int) -> str | None:
    """The failure reason, if the last `n` verdicts all failed for the same reason."""
    recent = verdicts[-n:]
    if len(recent) < n or any(v.get("verdict") != "fail" for v in recent):
        return None
    first = " ".join(str(recent[0].get("reason", "")).lower().split())
    for v in recent[1:]:
        if fuzz.ratio(first, " ".join(str(v.get("reason", "")).lower().split())) < SAME_REASON:
            return None
    return str(recent[-1].get("reason", ""))
