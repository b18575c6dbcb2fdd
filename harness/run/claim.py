"""Which feature a run takes, and the locks it holds while it runs.

Every run holds its role's lock on its feature. A worker or validator also holds the lock on
the tree it works in: with `workspace: shared` the one working tree (so two runs never mix
their changes in one commit), with `workspace: worktrees` the feature's own worktree. In
worktrees mode `next` takes the first feature of its status that no live run holds, so N
loops share the plan out among themselves.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

from harness.config import MissionConfig
from harness.errors import BusyError, NothingToDo
from harness.paths import Paths
from harness.run.prepare import FEATURE_ROLES, NEXT_STATUS, resolve_feature
from harness.run.worktree import Workspace, base_branch, open_worktree, workspace_of
from harness.state import ledger
from harness.state.plan import Feature, load_plan
from harness.state.store import hold_lock, lock_path


@dataclass
class Claim:
    """A run's feature, the paths it works with (workdir: its tree) and its tree lock."""

    feature: Feature | None
    paths: Paths
    workspace: Workspace | None
    tree_lock: hold_lock | None

    def label(self, run_id: str) -> None:
        """Name the run in the tree lock, so a run turned away says who holds it."""
        if self.tree_lock is not None:
            self.tree_lock.label(f"run {run_id}")


def tree_lock_name(mission: MissionConfig, feature_id: str) -> str:
    """The lock on the tree a feature's run works in."""
    return f"tree-{feature_id}" if mission.workspace == "worktrees" else "tree"


@contextmanager
def claim(paths: Paths, mission: MissionConfig, role: str, target: str | None,
          plan: list[Feature], *, dry_run: bool = False) -> Iterator[Claim]:
    """Resolve the run's feature and hold its locks for the `with` block (BusyError: exit 3)."""
    feature = resolve_feature(role, target, plan)
    shared_out = target == "next" and feature is not None and mission.workspace == "worktrees"
    candidates = [f for f in plan if f.status == NEXT_STATUS[role]] if shared_out else [feature]
    if shared_out and role == "validator":  # a pass whose merge waits on the person: last
        candidates.sort(key=lambda f: ledger.merge_waits(paths.state, f.id))
    first_busy: BusyError | None = None
    for candidate in candidates:
        with ExitStack() as stack:
            try:
                tree_lock = _take_locks(stack, paths, mission, role, candidate, dry_run)
            except BusyError as busy:
                first_busy = first_busy or busy
                continue
            if shared_out and not _still(paths, candidate):
                continue  # another loop's run moved it on after our plan was read
            yield _claimed(paths, mission, candidate, tree_lock, dry_run)
            return
    if first_busy is None:
        raise NothingToDo(f"nothing to do: every {NEXT_STATUS[role]} feature was taken")
    if shared_out:
        raise BusyError(f"busy: every {NEXT_STATUS[role]} feature is held by a live run "
                        f"(first: {first_busy})")
    raise first_busy


def _still(paths: Paths, feature: Feature) -> bool:
    """Whether `feature` has the status it was chosen by, in the plan on disk now."""
    now = next((f for f in load_plan(paths.state) if f.id == feature.id), None)
    return now is not None and now.status == feature.status


def _take_locks(stack: ExitStack, paths: Paths, mission: MissionConfig, role: str,
                feature: Feature | None, dry_run: bool) -> hold_lock | None:
    fid = feature.id if feature else None
    stack.enter_context(hold_lock(lock_path(paths.state, f"{role}-{fid or 'mission'}"),
                                  wait=False, what=f"{role} on {fid or 'the mission'}"))
    if fid is None or role not in FEATURE_ROLES or dry_run:
        return None
    what = (f"the worktree of {fid}" if mission.workspace == "worktrees"
            else f"the working tree {paths.workdir}")
    return stack.enter_context(hold_lock(lock_path(paths.state, tree_lock_name(mission, fid)),
                                         wait=False, what=what))


def _claimed(paths: Paths, mission: MissionConfig, feature: Feature | None,
             tree_lock: hold_lock | None, dry_run: bool) -> Claim:
    """The claim, with the feature's worktree taken over or made (worktrees mode)."""
    if feature is None or mission.workspace != "worktrees" or dry_run:
        return Claim(feature, paths, None, tree_lock)
    base = base_branch(paths.workdir, mission.base_branch)
    workspace = open_worktree(paths.state, workspace_of(paths.workdir, paths.state,
                                                        feature.id, base))
    return Claim(feature, paths._replace(workdir=workspace.tree), workspace, tree_lock)
