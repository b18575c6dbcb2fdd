"""What happened in a mission, told to the person: each event goes to the mission's hooks
(harness/agent/hooks.py) and notifications (notify.py). Firing never fails a run.
"""

from __future__ import annotations

import contextlib
from typing import Any

from harness.agent.hooks import run_hooks
from harness.config import MissionConfig, mission_name
from harness.errors import BUDGET, DONE
from harness.paths import Paths
from harness.run.notify import notify
from harness.state import actions
from harness.state import plan as plan_mod
from harness.state.memory import utc_now
from harness.state.redact import redact_data
from harness.state.run_summary import RESULT_WORDS
from harness.state.store import append_record, lock_path


def emit(paths: Paths, mission: MissionConfig, event: str, **fields: Any) -> None:
    """Fire `event` with `fields` (None values left out, secrets redacted): hooks first, then
    notifications."""
    payload = redact_data({"event": event, "mission": mission_name(mission, paths.state),
                           "time": utc_now(), **{k: v for k, v in fields.items() if v is not None}})
    try:
        commands = mission.hooks.get(event, [])  # type: ignore[call-overload]
        if commands:
            run_hooks(paths.state, paths.workdir, commands, payload, mission.hook_timeout)
        notify(paths.state, mission.notify, payload, mission.hook_timeout)
    except Exception as e:  # a hook or a notification never fails the run
        with contextlib.suppress(OSError):
            append_record(paths.state / "hooks.log",
                          f"{utc_now()} {event} not fired: {type(e).__name__}: {e}\n",
                          lock_path(paths.state, "hooks"))


def after_run(paths: Paths, prepared: Any, judged: Any, cost: float | None) -> None:
    """The events a closed run (run/prepare.Prepared, run/outcome.Judged) makes:
    run.finished, and what it did to its feature."""
    mission, feature, run_id = prepared.mission, prepared.feature, prepared.record.run_id
    if prepared.workspace is not None:  # hooks run in the person's checkout: a merged
        paths = paths._replace(workdir=prepared.workspace.repo)  # feature's worktree is gone
    exit_code, result, fields = judged.exit_code, judged.result, judged.fields
    base = {"run_id": run_id, "role": prepared.role, "feature": feature.id if feature else None,
            "title": feature.title if feature else None, "exit_code": exit_code,
            "result": RESULT_WORDS.get(result, result), "reason": judged.message, "cost": cost,
            "commit": fields.get("commit")}
    if prepared.role == "validator" and result in ("pass", "fail"):
        base["verdict"] = result
    # what the run did, read before any hook runs: a hook may rewrite the plan
    events = feature_events(paths, prepared, exit_code, result, fields)
    emit(paths, mission, "run.finished", **base)
    for event, extra in events:
        emit(paths, mission, event, **{**base, **extra})


def feature_events(paths: Paths, prepared: Any, exit_code: int, result: str,
                   fields: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(event, extra fields) for what the run did to its feature and the mission."""
    if exit_code == BUDGET:
        return [("budget.exhausted", {})]
    feature = prepared.feature
    if feature is None:
        return []
    if result == "blocked":
        needs = actions.read_block(paths.state, prepared.record.run_id)
        return [("feature.blocked", {"needs": needs or fields.get("blocked_reason"),
                                     "reason": fields.get("blocked_reason")})]
    if result == "merge-waiting":
        return [("merge.waiting", {})]
    plan = plan_mod.load_plan(paths.state)
    now = next((f for f in plan if f.id == feature.id), None)
    if result == "pass" and exit_code == DONE:
        done = [("feature.done", {})]
        if all(f.status == "done" for f in plan):
            done.append(("mission.done", {"features": len(plan)}))
        return done
    if result == "fail" and now is not None and now.status == "failed":
        return [("feature.failed", {"attempts": now.attempts})]
    return []
