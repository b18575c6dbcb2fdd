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

from harness.agent.procs import die_with_parent
from harness.backends import load_backend
from harness.config import MissionConfig
from harness.errors import BudgetError, HarnessError
from harness.paths import Paths
from harness.run import git as gitops
from harness.run.outcome import Interrupted, apply_outcome
from harness.run.prompt import cap_text
from harness.run.runner import Prepared, RunResult, prepare
from harness.state import ledger
from harness.state.plan import Feature
from harness.state.redact import scrubbed_environ
from harness.types import Outcome, Session


def _raise_interrupted(signum: int, _frame: Any) -> None:
    raise Interrupted(signal.Signals(signum).name)


def run_verify(command: str, workdir: Path, timeout: float, max_chars: int) -> dict[str, Any]:
    """Run a feature's `verify` command in its own process group; exit code and output tail."""
    proc = subprocess.Popen(command, shell=True, cwd=workdir, env=scrubbed_environ(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True, preexec_fn=die_with_parent)
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
        caps=cfg.caps.model_copy(), tools=list(cfg.tools), prices=mission.prices,
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
    previous = signal.signal(signal.SIGTERM, _raise_interrupted)
    try:
        session = make_session(paths, prepared)
        outcome = load_backend(prepared.role_config.backend).run(prepared.rendered.text, session)
    except (HarnessError, Interrupted, KeyboardInterrupt) as e:
        error = e
        outcome = getattr(e, "outcome", None)  # what was spent before it failed still counts
    except Exception as e:  # a bug: the record is finished all the same, then it surfaces
        apply_outcome(paths, role, prepared, getattr(e, "outcome", None), e, mission)
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
    return apply_outcome(paths, role, prepared, outcome, error, mission)
