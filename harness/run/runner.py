"""The one run lifecycle: resolve the feature, lock it, prepare (render and record), call
the backend, judge what came of it, and close the record.

Every run that calls a model (worker, validator, planner, and the curator in model mode)
goes through `call_and_close`: whatever happens after the record is opened, its record is
finished and its spend reaches the ledger before the runner returns or raises.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

from harness.backends import load_backend
from harness.config import MissionConfig, load_mission_config
from harness.errors import BudgetError, HarnessError
from harness.paths import Paths, check_state
from harness.run.outcome import (
    Interrupted,
    Judged,
    RunResult,
    judge_error,
    judge_role_run,
    outcome_fields,
)
from harness.run.prepare import Prepared, prepare, resolve_feature, role_config_for
from harness.run.verify import validator_evidence
from harness.state import ledger
from harness.state import plan as plan_mod
from harness.state.store import hold_lock, lock_path
from harness.types import Outcome, Session

# Decides a finished call: status flips, ledger, commits; returns what the record says.
Judge = Callable[[Paths, Prepared, Outcome | None, BaseException | None], Judged]


def run_role(paths: Paths, role: str, target: str | None, *, dry_run: bool = False,
             backend: str | None = None,
             backend_options: dict[str, Any] | None = None) -> RunResult:
    """One run of `role` on `target` (FEATURE_ID, `next`, or None), exit code per DESIGN.md."""
    check_state(paths.state)
    mission = load_mission_config(paths.state)
    plan = plan_mod.load_plan(paths.state)
    feature = resolve_feature(role, target, plan)
    lock_name = f"{role}-{feature.id if feature else 'mission'}"
    with hold_lock(lock_path(paths.state, lock_name), wait=False,
                   what=f"{role} on {feature.id if feature else 'the mission'}"):
        if dry_run:
            prepared = prepare(paths, role, feature, plan, mission, backend=backend,
                               backend_options=backend_options, dry_run=True)
            prepared.record.finish("dry-run", 0)
            return RunResult(0, prepared.record.run_id,
                             f"dry run {prepared.record.run_id}: prompt at "
                             f"{prepared.record.folder / 'prompt.md'}")
        check_budget_left(paths, mission)
        extra = None
        if role == "validator" and feature is not None:
            options = role_config_for(paths, role, backend, backend_options)[0].options
            extra = validator_evidence(paths, feature, mission, options)
        prepared = prepare(paths, role, feature, plan, mission, extra=extra, backend=backend,
                           backend_options=backend_options)
        if extra and extra["verify"]:
            prepared.record.manifest["verify"] = {k: extra["verify"][k]
                                                  for k in ("command", "exit_code", "timed_out")}
        return call_and_close(paths, prepared, judge_role_run)


def check_budget_left(paths: Paths, mission: MissionConfig) -> None:
    """BudgetError (exit 4) when the mission's budget is already spent."""
    if mission.budget_usd is not None and ledger.spent(paths.state) >= mission.budget_usd:
        raise BudgetError(f"mission budget ${mission.budget_usd:.2f} is spent")


def call_and_close(paths: Paths, prepared: Prepared, judge: Judge) -> RunResult:
    """Call the backend, judge, and close the record on every path (see the module doc).

    A backend's HarnessError or a SIGTERM is the run's result; any other exception, from
    the backend or from `judge`, is raised after the record is closed.
    """
    outcome, error = call_backend(paths, prepared)
    try:
        judged = judge(paths, prepared, outcome, error)
    except BaseException as failure:
        code, result, message = judge_error(failure)
        fields, message = outcome_fields(outcome, error or failure, message)
        close_run(paths, prepared, outcome, error or failure,
                  Judged(code, result, message, {**fields, "result": result}))
        raise
    result = close_run(paths, prepared, outcome, error, judged)
    if error is not None and not isinstance(error, HarnessError | Interrupted | KeyboardInterrupt):
        raise error
    return result


def call_backend(paths: Paths, prepared: Prepared
                 ) -> tuple[Outcome | None, BaseException | None]:
    """The backend's outcome, or the error it ended in (with what it spent, if it says)."""
    previous = signal.signal(signal.SIGTERM, _raise_interrupted)
    try:
        backend = load_backend(prepared.role_config.backend)
        return backend.run(prepared.rendered.text, make_session(paths, prepared)), None
    except BaseException as e:  # the record is closed whatever happened; see call_and_close
        return getattr(e, "outcome", None), e
    finally:
        signal.signal(signal.SIGTERM, previous)


def close_run(paths: Paths, prepared: Prepared, outcome: Outcome | None,
              error: BaseException | None, judged: Judged) -> RunResult:
    """Spend to the ledger, a progress line, and the finished record."""
    record, feature = prepared.record, prepared.feature
    cost = outcome.cost_usd if outcome else 0.0
    ledger.add_spend(paths.state, cost)
    ledger.append_progress(paths.state, prepared.role, feature.id if feature else None,
                           record.run_id, judged.result, judged.exit_code, cost)
    interrupted = isinstance(error, Interrupted | KeyboardInterrupt)
    record.finish("interrupted" if interrupted else "finished", judged.exit_code,
                  cost_usd=round(cost, 6), **{"result": judged.result, **judged.fields})
    return RunResult(judged.exit_code, record.run_id, f"{record.run_id}: {judged.message}")


def make_session(paths: Paths, prepared: Prepared) -> Session:
    """The Session a backend runs with, its budget check counting what the mission spent."""
    cfg, record, mission = prepared.role_config, prepared.record, prepared.mission
    already = ledger.spent(paths.state)

    def check_budget(run_cost: float) -> None:
        if mission.budget_usd is not None and already + run_cost >= mission.budget_usd:
            raise BudgetError(f"mission budget ${mission.budget_usd:.2f} spent "
                              f"(${already + run_cost:.4f})")

    return Session(
        run_id=record.run_id, role=prepared.role,
        feature_id=prepared.feature.id if prepared.feature else None,
        workdir=paths.workdir, state=paths.state, home=paths.home, model=cfg.model,
        caps=cfg.caps.model_copy(), tools=list(cfg.tools), prices=mission.prices,
        record=record.record, check_budget=check_budget, options=dict(cfg.options),
    )


def _raise_interrupted(signum: int, _frame: Any) -> None:
    raise Interrupted(signal.Signals(signum).name)

