"""A role's run from the command line: claim the feature and the tree it works in (`claim`),
then either render and record the prompt only (a dry run) or prepare and call the model
through the one lifecycle (`lifecycle.call_and_close`: call, judge, close the record on every
path).
"""

from __future__ import annotations

from typing import Any

from harness.config import MissionConfig, load_mission_config
from harness.errors import BudgetError
from harness.paths import Paths, check_state
from harness.run.claim import Claim, claim
from harness.run.prepare import prepare, role_config_for, sandbox_policy
from harness.run.worktree import commit_leftovers, merge_base_in
from harness.state import ledger
from harness.state import plan as plan_mod
from harness.state.envfile import load_env_files
from harness.types import RunResult, SandboxPolicy


def run_role(paths: Paths, role: str, target: str | None, *, dry_run: bool = False,
             backend: str | None = None, backend_options: dict[str, Any] | None = None,
             sandbox: str | None = None) -> RunResult:
    """One run of `role` on `target` (FEATURE_ID, `next`, or None), exit code per DESIGN.md."""
    check_state(paths.state)
    mission = load_mission_config(paths.state)
    plan = plan_mod.load_plan(paths.state)
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

        check_budget_left(paths, mission)
        load_env_files(paths.state)  # cron reads no profile: keys may live in env files
        config = role_config_for(paths, role, backend, backend_options, sandbox)[0]
        policy = sandbox_policy(config, work_paths)
        require_sandbox(policy)  # exit 2 before anything runs: never unsandboxed instead
        git.confine_tree(work_paths.workdir, paths.workdir, paths.state, policy)
        extra = before_call(work_paths, role, claimed, mission, config.options, policy)
        prepared = prepare(work_paths, role, feature, plan, mission, extra=extra,
                           backend=backend, backend_options=backend_options, sandbox=sandbox,
                           workspace=claimed.workspace)
        claimed.label(prepared.record.run_id)
        if extra and extra.get("verify"):
            prepared.record.manifest["verify"] = {k: extra["verify"][k]
                                                  for k in ("command", "exit_code", "timed_out")}
        return call_and_close(work_paths, prepared, judge_role_run)


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
    """BudgetError (exit 4) when the mission's budget is already spent."""
    if mission.budget_usd is not None and ledger.spent(paths.state) >= mission.budget_usd:
        raise BudgetError(f"mission budget ${mission.budget_usd:.2f} is spent")


