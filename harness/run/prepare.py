"""Before the model is called: which feature a run is for, and its prompt rendered from
disk and recorded (run id, template and context objects, prompt.md) so that it can be
rebuilt byte for byte later.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.backends.cli_answer import wants_answer
from harness.backends.cli_presets import docs_read_by, requested_model
from harness.config import (
    MissionConfig,
    RoleConfig,
    load_mission_config,
    load_role_config,
    mission_name,
)
from harness.errors import BlockedError, BudgetError, NothingToDo, UsageError
from harness.paths import Paths
from harness.run import gitdir
from harness.run.prompt import (
    RecordingLoader,
    Rendered,
    build_context,
    canonical,
    read_sources,
    render,
    template_dirs,
)
from harness.run.worktree import Workspace
from harness.state import plan as plan_mod
from harness.state.plan import Feature
from harness.state.redact import redact_data
from harness.state.runs import RunRecord, claim_run_id, start_run
from harness.state.store import put_object, sha256
from harness.types import SandboxPolicy

FEATURE_ROLES = ("worker", "validator")
NEXT_STATUS = {"worker": "pending", "validator": "in_progress"}


@dataclass
class Prepared:
    """A rendered prompt and the open record of its run."""

    record: RunRecord
    rendered: Rendered
    feature: Feature | None
    role_config: RoleConfig
    mission: MissionConfig
    workspace: Workspace | None = None  # the feature's own worktree (workspace: worktrees)

    @property
    def role(self) -> str:
        return self.record.manifest["role"]


def resolve_feature(role: str, target: str | None, plan: list[Feature]) -> Feature | None:
    """The feature a run is for: an explicit id, or `next` by status; None for mission roles."""
    if role not in FEATURE_ROLES:
        if target not in (None, "next"):
            raise UsageError(f"the {role} works on the whole mission; it takes no feature id")
        return None
    if target is None:
        raise UsageError(f"{role} needs a FEATURE_ID or `next`")
    if target == "next":
        feature = plan_mod.select_next(plan, NEXT_STATUS[role])
        if feature is None:
            raise NothingToDo(f"nothing to do: no {NEXT_STATUS[role]} feature for the {role}")
        return feature
    feature = plan_mod.find_feature(plan, target)
    if feature.status == "blocked":
        reason = feature.blocked_reason or "no reason given"
        raise BlockedError(f"{feature.id} is blocked: {reason}")
    if feature.status == "failed":
        raise BudgetError(f"{feature.id} failed: attempt cap reached ({feature.attempts} attempts)")
    if feature.status == "done" and role == "worker":
        raise NothingToDo(f"nothing to do: {feature.id} is already done")
    return feature


def role_config_for(paths: Paths, role: str, backend: str | None,
                    backend_options: dict[str, Any] | None,
                    sandbox: str | None = None) -> tuple[RoleConfig, Path, str]:
    """The role's config with the command line's backend, options and sandbox over it; its
    file and text."""
    role_config, role_path, role_text = load_role_config(role, paths.state, paths.home)
    role_config = with_mission_sandbox(role_config, load_mission_config(paths.state))
    options = dict(backend_options or {})
    role_config = role_config.model_copy(update={
        "backend": backend or role_config.backend,
        "model": options.pop("model", None) or role_config.model,
        "options": {**role_config.options, **options},
        "sandbox": sandbox or role_config.sandbox,
    })
    check_flags(options, role_config.backend, f"this {role} run's", role_path)
    return role_config, role_path, role_text


# the command line's backend flags and the one backend that reads each
FLAG_BACKENDS = {"preset": "command", "command": "command", "script": "scripted"}


def check_flags(flags: dict[str, Any], backend: str, whose: str, role_path: Path) -> None:
    """UsageError for a flag of `flags` that `backend` would never read (--preset with the
    anthropic backend): it would be ignored without a word."""
    for flag, wants in FLAG_BACKENDS.items():
        if flags.get(flag) and backend != wants:
            raise UsageError(f"--{flag} goes with --backend {wants}; {whose} backend is "
                             f"{backend} ({role_path}): add --backend {wants}")


def with_mission_sandbox(role: RoleConfig, mission: MissionConfig) -> RoleConfig:
    """The role's config with the mission's sandbox settings where the role sets none."""
    return role.model_copy(update={
        "sandbox": role.sandbox or mission.sandbox,
        "sandbox_network": (mission.sandbox_network if role.sandbox_network is None
                            else role.sandbox_network),
    })


def sandbox_policy(config: RoleConfig, paths: Paths) -> SandboxPolicy:
    """Where the role's commands may reach, and what the sandbox hides from them. In a
    feature's worktree (or a project that is a linked worktree), git reads the repository's
    git folder: shown read-only (where the mission recorded it, not where the agent's `.git`
    file says); so it is to a role in the person's checkout in worktrees mode."""
    shown = dict(config.sandbox_paths)
    repository = gitdir.recorded(paths.state)
    in_checkout = not paths.workdir.is_relative_to(paths.state / "worktrees")
    # in worktrees mode a role in the person's checkout (the planner) may not write .git
    guarded = in_checkout and load_mission_config(paths.state).workspace == "worktrees"
    if guarded and repository is None:
        repository = gitdir.record(paths.state, paths.workdir)
    if repository and (guarded or not in_checkout or (paths.workdir / ".git").is_file()):
        shown.setdefault(str(repository[0]), "ro")
    return SandboxPolicy(kind=config.sandbox or "none", paths=shown,
                         network=bool(config.sandbox_network), state=paths.state,
                         identity=paths.identity, harness_home=paths.home)


def prepare(paths: Paths, role: str, feature: Feature | None, plan: list[Feature],
            mission: MissionConfig, *, extra: dict[str, Any] | None = None,
            backend: str | None = None, backend_options: dict[str, Any] | None = None,
            sandbox: str | None = None, dry_run: bool = False,
            workspace: Workspace | None = None,
            role_update: dict[str, Any] | None = None) -> Prepared:
    """Claim a run id, render the prompt from disk and write the run's starting record.

    `backend`, `backend_options` and `sandbox` (from the command line) override the role's
    config; `role_update`, the harness's own, any of its fields (the curator's judge: its
    template, no tools, one turn).
    """
    role_config, role_path, role_text = role_config_for(paths, role, backend, backend_options,
                                                        sandbox)
    role_config = role_config.model_copy(update=role_update or {})
    fid = feature.id if feature else None
    # the prompt says how to give the verdict and notes: the CLI's structured answer, or tools
    answer = role_config.backend == "command" and wants_answer(role_config.options,
                                                               role_config.tools)
    run_id = claim_run_id(paths.state, role, fid)
    skip = docs_read_by(role_config.backend, role_config.options)
    context_json = _context_json(paths, role, run_id, feature, plan, mission,
                                 {**(extra or {}), "structured_answer": answer}, skip)
    loader = RecordingLoader(template_dirs(paths.state, paths.home))
    try:
        rendered = render(role_config.template, context_json, loader)
    except UsageError:
        (paths.state / "runs" / run_id).rmdir()  # nothing was recorded; release the id
        raise
    record = start_run(paths.state, run_id, {
        "role": role,
        "feature": fid,
        "backend": role_config.backend,
        # what the run asks for; the finished record says what served it, where told
        "model": requested_model(role_config.backend, role_config.options, role_config.model),
        "options": role_config.options,
        "sandbox": role_config.sandbox,
        "dry_run": dry_run,
        "template": rendered.template,
        "templates": {n: put_object(paths.state, s) for n, s in sorted(rendered.sources.items())},
        "context_sha256": put_object(paths.state, context_json),
        "role_config": {"path": str(role_path), "sha256": put_object(paths.state, role_text)},
        "prompt_sha256": sha256(rendered.text),
        "workdir": str(paths.workdir),
        **_recorded_extras(workspace, role_update),
    })
    record.write_file("prompt.md", rendered.text)
    return Prepared(record, rendered, feature, role_config, mission, workspace)


def _recorded_extras(workspace: Workspace | None,
                     role_update: dict[str, Any] | None) -> dict[str, Any]:
    """What a run's starting record adds when there is any: its worktree, the harness's
    changes to the role's config."""
    extras: dict[str, Any] = {}
    if workspace:
        extras["workspace"] = {"branch": workspace.branch, "base": workspace.base}
    if role_update:
        extras["role_update"] = {k: getattr(v, "model_dump", lambda v=v: v)()
                                 for k, v in role_update.items()}
    return extras


def _context_json(paths: Paths, role: str, run_id: str, feature: Feature | None,
                  plan: list[Feature], mission: MissionConfig,
                  extra: dict[str, Any] | None, skip_docs: tuple[str, ...] = ()) -> str:
    """The render context, secrets redacted, as the canonical JSON that is recorded."""
    fid = feature.id if feature else None
    runtime = {
        "FEATURE_ID": fid or "-",
        "role": role,
        "run_id": run_id,
        "workdir": str(paths.workdir),
        "state": str(paths.state),
        "mission": mission_name(mission, paths.state),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    sources = read_sources(role, fid, paths.state, paths.workdir, paths.identity, mission.prompt,
                           skip_docs)
    context = build_context(role=role, feature=feature, plan=plan, sources=sources,
                            caps=mission.prompt, runtime=runtime, extra=extra)
    return canonical(redact_data(context))
