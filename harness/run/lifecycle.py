"""Calling the model and closing the record: every run that calls a model (worker,
validator, planner, and the curator in model mode) goes through `call_and_close`, so
whatever happens after its record is opened, the record is finished and its spend reaches
the ledger before the runner returns or raises.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

from harness.backends import load_backend
from harness.config import mission_name, run_caps
from harness.errors import BACKEND, BackendError, BudgetError, HarnessError
from harness.paths import Paths
from harness.run.events import after_run
from harness.run.outcome import Interrupted, Judged, judge_error, outcome_fields
from harness.run.prepare import Prepared, sandbox_policy
from harness.state import ledger
from harness.state.store import DISK_ERRNOS
from harness.types import Outcome, RunResult, Session

# Decides a finished call: status flips, ledger, commits; returns what the record says.
Judge = Callable[[Paths, Prepared, Outcome | None, BaseException | None], Judged]


def call_and_close(paths: Paths, prepared: Prepared, judge: Judge) -> RunResult:
    """Call the backend, judge, and close the record on every path (see the module doc).

    A backend's HarnessError or a SIGTERM is the run's result; any other exception, from
    the backend or from `judge`, is raised after the record is closed.
    """
    outcome, error = call_backend(paths, prepared)
    try:
        judged = judge(paths, prepared, outcome, error)
    except BaseException as failure:
        failure = no_room(failure)
        code, result, message = judge_error(failure)
        fields, message = outcome_fields(outcome, error or failure, message)
        closed = close_run(paths, prepared, outcome, error or failure,
                           Judged(code, result, message, {**fields, "result": result}))
        if isinstance(failure, NoRoom):
            return closed
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
        return getattr(e, "outcome", None), no_room(e)
    finally:
        signal.signal(signal.SIGTERM, previous)


def close_run(paths: Paths, prepared: Prepared, outcome: Outcome | None,
              error: BaseException | None, judged: Judged) -> RunResult:
    """Spend to the ledger, a progress line, and the finished record."""
    record, feature = prepared.record, prepared.feature
    cost = outcome.cost_usd if outcome else 0.0  # None: the model has no price
    interrupted = isinstance(error, Interrupted | KeyboardInterrupt | NoRoom)
    unknown = {"cost_unknown": True} if cost is None else {}
    unwritten = _each_written(
        lambda: ledger.add_spend(paths.state, cost or 0.0),
        lambda: ledger.append_progress(paths.state, prepared.role, feature.id if feature else None,
                                       record.run_id, judged.result, judged.exit_code, cost),
        lambda: record.finish("interrupted" if interrupted else "finished", judged.exit_code,
                              cost_usd=None if cost is None else round(cost, 6),
                              **{"result": judged.result, "message": judged.message,
                                 **unknown, **judged.fields}))
    if unwritten:  # its manifest may say "started": with no live process, status says interrupted
        return RunResult(BACKEND, record.run_id, f"{record.run_id}: {judged.message}; and "
                         f"{unwritten[0]}, so its records are not finished")
    after_run(paths, prepared, judged, cost)
    return RunResult(judged.exit_code, record.run_id, f"{record.run_id}: {judged.message}")


class NoRoom(BackendError):
    """A record of the run could not be written (a full disk, a read-only folder): the run
    stops, interrupted, with exit 6; every record stays whole lines and parseable."""


def no_room(error: BaseException) -> BaseException:
    """`error` as NoRoom if it is a full disk's or a read-only folder's, else as it is."""
    if not isinstance(error, OSError) or error.errno not in DISK_ERRNOS:
        return error
    room = NoRoom(f"cannot write {error.filename or 'a record'}: {error.strerror}; the run "
                  "stopped (not counted as an attempt): free some space or make the folder "
                  "writable, then run again")
    room.outcome = getattr(error, "outcome", None)
    return room


def _each_written(*writes: Callable[[], None]) -> list[str]:
    """Carry out each write, whatever the others did; what a full disk stopped, said."""
    unwritten = []
    for write in writes:
        try:
            write()
        except OSError as e:
            if e.errno not in DISK_ERRNOS:
                raise
            unwritten.append(f"cannot write {e.filename or 'a record'}: {e.strerror}")
    return unwritten


def make_session(paths: Paths, prepared: Prepared) -> Session:
    """The Session a backend runs with, its budget check counting what the mission spent."""
    cfg, record, mission = prepared.role_config, prepared.record, prepared.mission
    spend = ledger.MissionSpend(paths.state, record.run_id)

    def check_budget(run_cost: float) -> None:
        if mission.budget_usd is None:
            return
        already = spend.total()  # finished runs, and the others in progress so far
        if already + run_cost >= mission.budget_usd:
            raise BudgetError(f"mission budget ${mission.budget_usd:.2f} spent "
                              f"(${already + run_cost:.4f})")

    def budget_left() -> float | None:
        return None if mission.budget_usd is None else max(mission.budget_usd - spend.total(), 0)

    return Session(
        run_id=record.run_id, role=prepared.role,
        feature_id=prepared.feature.id if prepared.feature else None,
        workdir=paths.workdir, state=paths.state, home=paths.home, model=cfg.model,
        caps=run_caps(cfg.caps, mission), tools=list(cfg.tools), prices=mission.prices,
        record=record.record, check_budget=check_budget, budget_left=budget_left,
        options=dict(cfg.options),
        sandbox=sandbox_policy(cfg, paths), mission=mission_name(mission, paths.state),
        tool_hooks=list(mission.hooks.get("tool.before", [])), hook_timeout=mission.hook_timeout,
    )


def _raise_interrupted(signum: int, _frame: Any) -> None:
    raise Interrupted(signal.Signals(signum).name)

