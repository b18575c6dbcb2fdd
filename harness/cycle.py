"""One real role run: check the budget, gather the validator's evidence, render and record,
call the backend, and let the harness apply the outcome (status, ledger, commit, progress).

Exit codes follow DESIGN.md. The agent's words never decide status: a worker run always
leaves its feature `in_progress`; a validator's recorded verdict (overridden by a failing
`verify`) decides pass or fail, and no verdict is a fail.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import Any

from harness import actions, gitops, ledger
from harness import features as plan_mod
from harness.backends import CAPPED, FINISHED, Caps, Outcome, Session, load_backend
from harness.config import MissionConfig
from harness.errors import BACKEND, BUDGET, DONE, TASK_FAILED, BudgetError, HarnessError
from harness.features import Feature
from harness.paths import Paths
from harness.prompt import cap_text
from harness.redact import scrubbed_environ
from harness.roles import Prepared, RunResult, prepare

SIGNAL_EXIT = 143  # the shell's code for a process ended by SIGTERM


class Interrupted(BaseException):
    """SIGTERM or SIGINT reached the runner; the record is finished on the way out."""


def _raise_interrupted(signum: int, _frame: Any) -> None:
    raise Interrupted(signal.Signals(signum).name)


def run_verify(command: str, workdir: Path, timeout: float, max_chars: int) -> dict[str, Any]:
    """Run a feature's `verify` command in its own process group; exit code and output tail."""
    proc = subprocess.Popen(command, shell=True, cwd=workdir, env=scrubbed_environ(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        timed_out = True
    output = out.decode(errors="replace")
    return {"command": command, "exit_code": 124 if timed_out else proc.returncode,
            "timed_out": timed_out, "output": cap_text(output, max_chars, keep="tail")}


def validator_evidence(paths: Paths, feature: Feature, mission: MissionConfig,
                       options: dict[str, Any]) -> dict[str, Any]:
    """What the harness shows the validator: the verify result and the workers' diff."""
    caps = mission.prompt
    verify = None
    if feature.verify:
        verify = run_verify(feature.verify, paths.workdir,
                            float(options.get("verify_timeout", 600)), caps.verify_chars)
    diff = None
    if gitops.is_repo(paths.workdir):
        diff = gitops.feature_diff(paths.workdir, feature.id, caps.diff_chars) or None
    return {"verify": verify, "diff": diff}


def make_session(paths: Paths, prepared: Prepared) -> Session:
    cfg, record, mission = prepared.role_config, prepared.record, prepared.mission
    already = ledger.spent(paths.state)

    def check_budget(run_cost: float) -> None:
        if mission.budget_usd is not None and already + run_cost >= mission.budget_usd:
            raise BudgetError(f"mission budget ${mission.budget_usd:.2f} spent "
                              f"(${already + run_cost:.4f})")

    return Session(
        run_id=record.run_id, role=record.manifest["role"],
        feature_id=prepared.feature.id if prepared.feature else None,
        workdir=paths.workdir, state=paths.state, home=paths.home, model=cfg.model,
        caps=Caps(**cfg.caps.model_dump()), tools=list(cfg.tools), prices=mission.prices,
        record=record.record, check_budget=check_budget,
        options=dict(cfg.options),
    )


def run_cycle(paths: Paths, role: str, feature: Feature | None, plan: list[Feature],
              mission: MissionConfig, *, backend: str | None = None,
              backend_options: dict[str, Any] | None = None) -> RunResult:
    """Run `role` with a model and apply what came of it."""
    if mission.budget_usd is not None and ledger.spent(paths.state) >= mission.budget_usd:
        raise BudgetError(f"mission budget ${mission.budget_usd:.2f} is spent")
    extra = None
    if role == "validator" and feature is not None:
        from harness.config import load_role_config

        options = load_role_config(role, paths.state, paths.home)[0].options
        extra = validator_evidence(paths, feature, mission, options)
    prepared = prepare(paths, role, feature, plan, mission, extra=extra, backend=backend,
                       backend_options=backend_options)
    record = prepared.record
    if extra and extra["verify"]:
        record.manifest["verify"] = {k: extra["verify"][k]
                                     for k in ("command", "exit_code", "timed_out")}
    outcome: Outcome | None = None
    error: BaseException | None = None
    old_handlers = {s: signal.signal(s, _raise_interrupted) for s in (signal.SIGTERM,)}
    try:
        session = make_session(paths, prepared)
        outcome = load_backend(prepared.role_config.backend).run(prepared.rendered.text, session)
    except (HarnessError, Interrupted, KeyboardInterrupt) as e:
        error = e
        outcome = getattr(e, "outcome", None)  # what was spent before it failed still counts
    finally:
        for sig, handler in old_handlers.items():
            signal.signal(sig, handler)
        result = apply_outcome(paths, role, prepared, outcome, error, mission)
    return result


def apply_outcome(paths: Paths, role: str, prepared: Prepared, outcome: Outcome | None,
                  error: BaseException | None, mission: MissionConfig) -> RunResult:
    """Status, ledger, commit, spend, progress line and the finished record, on every path."""
    record, feature = prepared.record, prepared.feature
    cost = outcome.cost_usd if outcome else 0.0
    exit_code, result, message = _judge(paths, role, prepared, outcome, error, mission)
    fields: dict[str, Any] = {"cost_usd": round(cost, 6), "result": result}
    if outcome:
        fields.update(usage=vars(outcome.usage), turns=outcome.turns, outcome=outcome.status,
                      detail=outcome.detail, summary=outcome.summary)
    if error is not None:
        fields["error"] = f"{type(error).__name__}: {error}"
        reset_at = getattr(error, "reset_at", None) or (outcome.reset_at if outcome else None)
        if reset_at:
            fields["reset_at"] = reset_at
            message += f" (usage limit resets at {reset_at})"
    if role == "worker" and feature is not None and gitops.is_repo(paths.workdir):
        partial = "" if exit_code == DONE else f" [partial: {result}]"
        try:
            sha = gitops.commit_all(paths.workdir, paths.state,
                                    f"{feature.id}: {feature.title} (run {record.run_id}){partial}")
        except (subprocess.SubprocessError, OSError) as e:
            sha, fields["commit_error"] = None, getattr(e, "stderr", None) or str(e)
            message += "; git commit failed (see the run's manifest)"
        else:
            message += f"; committed {sha[:10]}" if sha else "; no changes to commit"
        fields["commit"] = sha
    ledger.add_spend(paths.state, cost)
    ledger.append_progress(paths.state, role, feature.id if feature else None, record.run_id,
                           result, exit_code, cost)
    interrupted = isinstance(error, Interrupted | KeyboardInterrupt)
    record.finish("interrupted" if interrupted else "finished", exit_code, **fields)
    return RunResult(exit_code, record.run_id, f"{record.run_id}: {message}")


def _judge(paths: Paths, role: str, prepared: Prepared, outcome: Outcome | None,
           error: BaseException | None, mission: MissionConfig) -> tuple[int, str, str]:
    """Exit code, one-word result and message; flips the feature's status where due."""
    feature = prepared.feature
    if isinstance(error, Interrupted | KeyboardInterrupt):
        return SIGNAL_EXIT, "interrupted", f"interrupted by {error or 'SIGINT'}"
    if isinstance(error, HarnessError):
        # Backend trouble and a spent budget are not the agent's attempt: status stays.
        result = {BACKEND: "backend-error", BUDGET: "budget"}.get(error.exit_code, "error")
        return error.exit_code, result, str(error)
    assert outcome is not None
    if role == "worker" and feature is not None:
        _set_status(paths, feature.id, "in_progress")
        if outcome.status == FINISHED:
            return DONE, "in_progress", f"{feature.id} awaits validation"
        return TASK_FAILED, outcome.status, f"{feature.id}: {outcome.detail or outcome.status}"
    if role == "validator" and feature is not None:
        return _apply_verdict(paths, prepared, outcome, mission)
    if outcome.status == FINISHED:
        return DONE, "done", outcome.summary or "finished"
    return TASK_FAILED, outcome.status, outcome.detail or outcome.status


def _apply_verdict(paths: Paths, prepared: Prepared, outcome: Outcome,
                   mission: MissionConfig) -> tuple[int, str, str]:
    feature, run_id = prepared.feature, prepared.record.run_id
    assert feature is not None
    given = actions.read_verdict(paths.state, run_id)
    verify = prepared.record.manifest.get("verify")
    if given is None:
        cap = f" ({outcome.detail})" if outcome.status == CAPPED and outcome.detail else ""
        given = {"verdict": "fail", "reason": f"the validator gave no verdict{cap}"}
    verdict, reason = given["verdict"], given["reason"]
    if verdict == "pass" and verify and verify["exit_code"] != 0:
        verdict = "fail"
        reason = f"verify `{verify['command']}` exited {verify['exit_code']}; overrides: {reason}"
    ledger.append_verdict(paths.state, feature.id, {
        "run_id": run_id, "verdict": verdict, "reason": reason,
        "verify_exit": verify["exit_code"] if verify else None})
    if verdict == "pass":
        _set_status(paths, feature.id, "done")
        return DONE, "pass", f"{feature.id} passed: {reason}"
    updated = plan_mod.update_feature(paths.state, feature.id, lambda f: f.model_copy(update={
        "attempts": f.attempts + 1,
        "status": "failed" if f.attempts + 1 >= mission.max_attempts else "pending"}))
    return TASK_FAILED, "fail", (f"{feature.id} failed ({updated.status}, attempt "
                                 f"{updated.attempts} of {mission.max_attempts}): {reason}")


def _set_status(paths: Paths, fid: str, status: str) -> None:
    plan_mod.update_feature(paths.state, fid, lambda f: f.model_copy(update={"status": status}))
