"""A role's run from the command line: claim the feature and the tree it works in (`claim`),
then either render and record the prompt only (a dry run) or prepare and call the model
through the one lifecycle (`lifecycle.call_and_close`: call, judge, close the record on every
path).
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any

from harness.config import MissionConfig, RoleConfig, load_mission_config
from harness.errors import BudgetError
from harness.paths import Paths, check_identity, check_state
from harness.run import commits
from harness.run.claim import Claim, claim
from harness.run.prepare import (
    FEATURE_ROLES,
    Prepared,
    prepare,
    role_config_for,
    sandbox_policy,
)
from harness.run.worktree import commit_leftovers, merge_base_in
from harness.state import ledger
from harness.state import plan as plan_mod
from harness.state.envfile import load_env_files
from harness.types import RunResult, SandboxPolicy


def run_role(paths: Paths, role: str, target: str | None, *, dry_run: bool = False,
             backend: str | None = None, backend_options: dict[str, Any] | None = None,
             sandbox: str | None = None) -> RunResult:
    """One run of `role` on `target` (FEATURE_ID, `next`, or None); its exit code is one of
    docs/contracts.md's."""
    check_state(paths.state)
    check_identity(paths.identity)
    mission = load_mission_config(paths.state)
    plan = plan_mod.load_plan(paths.state)
    if role in FEATURE_ROLES and not dry_run:
        commits.require_git(paths, mission)  # exit 2 before a worktree or a lock is made
    with claim(paths, mission, role, target, plan, dry_run=dry_run) as claimed:
        feature, work_paths = claimed.feature, claimed.paths
        if dry_run:
            prepared = prepare(paths, role, feature, plan, mission, backend=backend,
                               backend_options=backend_options, sandbox=sandbox, dry_run=True)
            prepared.record.finish("dry-run", 0)
            return RunResult(0, prepared.record.run_id,
                             f"dry run {prepared.record.run_id}: prompt at "
                             f"{prepared.record.folder / 'prompt.md'}")
        # the model-calling side (backends, verify, git, judging) is imported only when a
        # model is called: a dry run starts 50 ms sooner (0.44 s against 0.49 s here)
        from harness.agent.sandbox import require as require_sandbox
        from harness.run import git
        from harness.run.lifecycle import call_and_close
        from harness.run.outcome import judge_role_run

        ledger.settle_killed(paths.state, role, feature.id if feature else None)
        check_budget_left(paths, mission)
        load_env_files(paths.state)  # cron reads no profile: keys may live in env files
        config = role_config_for(paths, role, backend, backend_options, sandbox)[0]
        policy = sandbox_policy(config, work_paths)
        require_sandbox(policy)  # exit 2 before anything runs: never unsandboxed instead
        git.confine_tree(work_paths.workdir, paths.workdir, paths.state, policy)
        prepared = prepare_call(work_paths, role, claimed, plan, mission, config, policy,
                                {"backend": backend, "backend_options": backend_options,
                                 "sandbox": sandbox})
        return call_and_close(work_paths, prepared, judge_role_run)


def prepare_call(paths: Paths, role: str, claimed: Claim, plan: list[plan_mod.Feature],
                 mission: MissionConfig, config: RoleConfig, policy: SandboxPolicy,
                 overrides: dict[str, Any]) -> Prepared:
    """The tree checked (commits.py), what comes before the call done, the prompt rendered
    and recorded. A failure on the way leaves what changed as the harness's, no run in
    flight: only a run killed outright is left for the next run to take over."""
    from harness.run.verify import keep_verify_log, verify_log

    fid = claimed.feature.id if claimed.feature else None
    leftovers = commits.check_tree(paths, mission, role, fid) if fid else []
    try:
        extra = before_call(paths, role, claimed, mission, config.options, policy)
        prepared = prepare(paths, role, claimed.feature, plan, mission, extra=extra,
                           workspace=claimed.workspace, **overrides)
    except BaseException:
        verify_log(paths.state).unlink(missing_ok=True)  # no run folder came to keep it
        if fid:
            with suppress(Exception):  # the error that stopped the run is the one to tell
                commits.abandon(paths, mission, role, fid)
        raise
    claimed.label(prepared.record.run_id)
    commits.opened(paths, mission, prepared.record.run_id)
    if leftovers:
        prepared.record.manifest["leftovers_committed"] = leftovers
    if extra and extra.get("verify"):
        prepared.record.manifest["verify"] = {k: extra["verify"][k]
                                              for k in ("command", "exit_code", "timed_out")}
        prepared.record.manifest["verify"]["log"] = keep_verify_log(paths.state,
                                                                    prepared.record.folder)
    return prepared


def before_call(paths: Paths, role: str, claimed: Claim, mission: MissionConfig,
                options: dict[str, Any], policy: SandboxPolicy) -> dict[str, Any] | None:
    """What the harness does before the model is called, and what the prompt shows of it.

    A worker in its worktree starts from the branch with the base merged in (conflicts left
    for it to resolve); a validator gets the `verify` output and the diff.
    """
    from harness.run.verify import validator_evidence

    ws, feature = claimed.workspace, claimed.feature
    if role == "worker" and ws is not None:
        commit_leftovers(paths.state, ws)
        conflicts = merge_base_in(paths.state, ws, keep_conflicts=True)
        return {"merge": {"base": ws.base, "branch": ws.branch, "conflicts": conflicts}}
    if role == "validator" and feature is not None:
        return validator_evidence(paths, feature, mission, options, policy,
                                  base=ws.base if ws else None)
    return None


def check_budget_left(paths: Paths, mission: MissionConfig) -> None:
    """BudgetError (exit 4) when the mission's budget is already spent (the event
    `budget.exhausted` fired); UsageError (exit 2) when its spend record is damaged, before
    a run could add to it."""
    spent = ledger.spent(paths.state)
    if mission.budget_usd is not None and spent >= mission.budget_usd:
        from harness.run.events import emit

        error = BudgetError(f"mission budget ${mission.budget_usd:.2f} is spent")
        emit(paths, mission, "budget.exhausted", reason=str(error), exit_code=error.exit_code)
        raise error


