"""Judge a finished run: the harness, never the agent, flips status, writes the ledger,
commits the worker's changes and blocks a stuck feature. What it decides comes back as a
`Judged`; the runner writes the spend, the progress line and the finished record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.errors import BACKEND, BLOCKED, BUDGET, BUSY, DONE, TASK_FAILED, HarnessError
from harness.paths import Paths
from harness.run import commits, stuck
from harness.run.merge import MERGED, WAITING, VerifySpec, land
from harness.run.prepare import FEATURE_ROLES, Prepared, sandbox_policy
from harness.state import actions, ledger
from harness.state import plan as plan_mod
from harness.state.reading import parse_json_line
from harness.state.runs import recent_runs
from harness.state.store import read_tail
from harness.types import CAPPED, FINISHED, Outcome

LOOK_BACK = 5  # worker runs read per run the no-progress rule needs
LEDGER_LOOK_BACK = 50  # ledger lines read for the last retry or answer before them
SIGNAL_EXIT = 143  # the shell's code for a process ended by SIGTERM


class Interrupted(BaseException):
    """SIGTERM reached the runner; the record is finished on the way out."""


@dataclass
class Judged:
    """What the harness made of a run: exit code, one-word result, message, manifest fields."""

    exit_code: int
    result: str
    message: str
    fields: dict[str, Any] = field(default_factory=dict)


def outcome_fields(outcome: Outcome | None, error: BaseException | None,
                   message: str) -> tuple[dict[str, Any], str]:
    """The manifest fields any run gets from its outcome and error, and the message with the
    usage limit's reset time added."""
    fields: dict[str, Any] = {}
    if outcome:
        fields.update(usage=vars(outcome.usage), turns=outcome.turns, outcome=outcome.status,
                      detail=outcome.detail, summary=outcome.summary)
        if outcome.model:  # the model that served the run, over the one it asked for
            fields["model"] = outcome.model
    if error is not None:
        fields["error"] = f"{type(error).__name__}: {error}"
        reset_at = getattr(error, "reset_at", None) or (outcome.reset_at if outcome else None)
        if reset_at:
            fields["reset_at"] = reset_at
            message += f" (usage limit resets at {reset_at})"
    return fields, message


def judge_role_run(paths: Paths, prepared: Prepared, outcome: Outcome | None,
                   error: BaseException | None) -> Judged:
    """A planner, worker or validator run: status, ledger, commit and blocking."""
    role, record, feature = prepared.role, prepared.record, prepared.feature
    exit_code, result, message = _judge(paths, role, prepared, outcome, error)
    fields, message = outcome_fields(outcome, error, message)
    fields["result"] = result
    if role in FEATURE_ROLES and feature is not None:
        partial = "" if exit_code == DONE else f" [partial: {result}]"
        run = {"role": role, "feature": feature.id, "run": record.run_id}
        said, words = commits.commit_run(
            paths, prepared.mission, run, prepared.workspace is not None,
            commits.agent_acted(outcome, error),
            f"{feature.id}: {feature.title} (run {record.run_id}){partial}")
        fields.update(said)
        message += words
    if feature is not None and error is None:
        reason = _block_reason(paths, role, prepared, fields) or _blocked_meanwhile(paths,
                                                                                feature.id)
        if reason:
            plan_mod.update_feature(paths.state, feature.id, lambda f: f.model_copy(
                update={"status": "blocked", "blocked_reason": reason}))
            exit_code, result = BLOCKED, "blocked"
            # a worker's feature waits on a person now, not on a validator
            message = message.replace(f"{feature.id} awaits validation",
                                      f"{feature.id}: the worker finished", 1)
            message += f"; {feature.id} is now blocked: {reason}"
            fields.update(result=result, blocked_reason=reason)
    return Judged(exit_code, result, message, fields)


def judge_error(error: BaseException) -> tuple[int, str, str]:
    """Exit code, one-word result and message of a run that ended in `error`."""
    if isinstance(error, Interrupted | KeyboardInterrupt):
        return SIGNAL_EXIT, "interrupted", f"interrupted by {str(error) or 'SIGINT'}"
    if isinstance(error, HarnessError):
        # Backend trouble and a spent budget are not the agent's attempt: status stays.
        result = {BACKEND: "backend-error", BUDGET: "budget"}.get(error.exit_code, "error")
        return error.exit_code, result, str(error)
    # unexpected: not the agent's attempt either
    return TASK_FAILED, "error", f"{type(error).__name__}: {error}"


def _block_reason(paths: Paths, role: str, prepared: Prepared,
                  fields: dict[str, Any]) -> str | None:
    """Why the feature must wait for a person: the agent said so, or it is stuck."""
    feature, run_id, n = prepared.feature, prepared.record.run_id, prepared.mission.stuck_after
    assert feature is not None
    asked = actions.read_block(paths.state, run_id)
    if asked:
        return f"{role} {run_id} needs: {asked}"
    if role == "worker":
        # Runs the agent could not work in (outages, refused keys) do not count, so look
        # further back than n.
        earlier = [m for m in recent_runs(paths.state, "worker", feature.id, LOOK_BACK * n)
                   if m["run_id"] != run_id] if n > 1 else []
        said = read_tail(ledger.ledger_path(paths.state, feature.id), LEDGER_LOOK_BACK)
        earlier = stuck.since_fresh_start(
            earlier, [v for v in map(parse_json_line, said) if v is not None])
        if stuck.no_change_streak([*earlier, {"status": "finished", **fields}], n):
            return f"stuck: the last {n} worker runs changed nothing in the working tree"
    if role == "validator" and fields.get("result") == "fail":
        lines = read_tail(ledger.ledger_path(paths.state, feature.id), n)
        verdicts = [v for v in map(parse_json_line, lines) if v is not None]
        same = stuck.repeated_failure(verdicts, n)
        if same:
            return f"stuck: the same validator failure {n} times in a row: {same}"
    return None


def _blocked_meanwhile(paths: Paths, fid: str) -> str | None:
    """Why a person blocked the feature while the run worked on it (`run.sh block
    --feature`): a blocked feature starts no run, so a block seen at its end is theirs."""
    now = next((f for f in plan_mod.load_plan(paths.state) if f.id == fid), None)
    return (now.blocked_reason or "blocked by a person") if now and now.status == "blocked" \
        else None


def _judge(paths: Paths, role: str, prepared: Prepared, outcome: Outcome | None,
           error: BaseException | None) -> tuple[int, str, str]:
    """Exit code, one-word result and message; flips the feature's status where due."""
    feature = prepared.feature
    if error is not None:
        return judge_error(error)
    assert outcome is not None
    if role == "worker" and feature is not None:
        _set_status(paths, feature.id, "in_progress")
        if outcome.status == FINISHED:
            return DONE, "in_progress", f"{feature.id} awaits validation"
        return TASK_FAILED, outcome.status, f"{feature.id}: {outcome.detail or outcome.status}"
    if role == "validator" and feature is not None:
        return _apply_verdict(paths, prepared, outcome)
    if outcome.status == FINISHED:
        return DONE, "done", outcome.summary or "finished"
    return TASK_FAILED, outcome.status, outcome.detail or outcome.status


def _apply_verdict(paths: Paths, prepared: Prepared, outcome: Outcome) -> tuple[int, str, str]:
    feature, run_id, mission = prepared.feature, prepared.record.run_id, prepared.mission
    assert feature is not None
    given = actions.read_verdict(paths.state, run_id)
    verify = prepared.record.manifest.get("verify")
    if given is None:
        cap = f" ({outcome.detail})" if outcome.status == CAPPED and outcome.detail else ""
        given = {"verdict": "fail", "reason": f"the validator gave no verdict{cap}"}
    elif given["verdict"] == "damaged":
        given = {"verdict": "fail", "reason": f"the validator's verdict is damaged: "
                                              f"{given['reason']}"}
    verdict, reason = given["verdict"], given["reason"]
    if verdict == "pass" and verify and verify["exit_code"] != 0:
        verdict = "fail"
        reason = f"verify `{verify['command']}` exited {verify['exit_code']}; overrides: {reason}"
    record = {"run_id": run_id, "verdict": verdict, "reason": reason,
              "verify_exit": verify["exit_code"] if verify else None}
    if verdict == "pass" and prepared.workspace is not None:
        return _land(paths, prepared, record)
    ledger.append_verdict(paths.state, feature.id, record)
    if verdict == "pass":
        _set_status(paths, feature.id, "done")
        return DONE, "pass", f"{feature.id} passed: {reason}"
    updated = plan_mod.update_feature(paths.state, feature.id, lambda f: f.model_copy(update={
        "attempts": f.attempts + 1, "status": "blocked" if f.status == "blocked"  # a person's
        else "failed" if f.attempts + 1 >= mission.max_attempts else "pending"}))
    return TASK_FAILED, "fail", (f"{feature.id} failed ({updated.status}, attempt "
                                 f"{updated.attempts} of {mission.max_attempts}): {reason}")


def _land(paths: Paths, prepared: Prepared, record: dict[str, Any]) -> tuple[int, str, str]:
    """A pass in a worktree: merge the branch into the base; a conflict, or a verify that
    fails with the base merged in, sends the feature back to its worker (no attempt spent)."""
    feature, ws, options = prepared.feature, prepared.workspace, prepared.role_config.options
    assert feature is not None and ws is not None
    landing = land(paths.state, ws, VerifySpec(feature.verify,
                                               float(options.get("verify_timeout", 600)),
                                               prepared.mission.prompt.verify_chars,
                                               sandbox_policy(prepared.role_config, paths)))
    ledger.append_merge(paths.state, feature.id, prepared.record.run_id, landing.result,
                        landing.detail)
    if landing.result == MERGED:
        ledger.append_verdict(paths.state, feature.id, {**record, "merge": landing.detail})
        _set_status(paths, feature.id, "done")
        return DONE, "pass", f"{feature.id} passed and merged: {landing.detail}"
    if landing.result == WAITING:
        ledger.append_verdict(paths.state, feature.id,
                              {**record, "merge": f"waiting: {landing.detail}"})
        return BUSY, "merge-waiting", f"{feature.id} passed; its merge waits: {landing.detail}"
    reason = (f"passed, but did not merge into {ws.base}: {landing.detail}. The next worker "
              f"starts with {ws.base} merged into {ws.branch}")
    ledger.append_verdict(paths.state, feature.id, {**record, "verdict": "unmerged",
                                                    "reason": reason, "paths": landing.paths})
    _set_status(paths, feature.id, "pending")
    return TASK_FAILED, "unmerged", f"{feature.id} back to pending: {reason}"


def _set_status(paths: Paths, fid: str, status: str) -> None:
    """The feature's new status, but a block a person set during the run stands."""
    plan_mod.update_feature(paths.state, fid, lambda f: f if f.status == "blocked"
                            else f.model_copy(update={"status": status}))
