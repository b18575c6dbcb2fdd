"""A feature's own git worktree (`workspace: worktrees`): `<state>/worktrees/<FEATURE_ID>` on
the branch `harness/<FEATURE_ID>`, cut from the mission's base branch. It shares the
repository's objects (a `git worktree`, not a clone). Every git command here runs under the
state's git lock, as the commits in `git.py` do, so two runs never race on git's own locks.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness.errors import UsageError
from harness.run import gitdir
from harness.run.git import (
    clear_stale_locks,
    commit_all,
    identity_args,
    is_repo,
    merging,
    run_git,
)
from harness.state.store import hold_lock, lock_path

BRANCH_PREFIX = "harness/"


@dataclass(frozen=True)
class Workspace:
    """Where one feature's run works: its worktree and branch, and the base it merges into."""

    repo: Path  # the person's checkout the mission runs in
    tree: Path
    branch: str
    base: str

    @property
    def feature_id(self) -> str:
        return self.branch.removeprefix(BRANCH_PREFIX)


def worktrees_dir(state: Path) -> Path:
    return state / "worktrees"


def workspace_of(repo: Path, state: Path, feature_id: str, base: str) -> Workspace:
    """The workspace a feature's runs use (nothing is created)."""
    return Workspace(repo, worktrees_dir(state) / feature_id, BRANCH_PREFIX + feature_id, base)


def base_branch(repo: Path, configured: str | None) -> str:
    """The base branch: the configured one, else the branch checked out in `repo`."""
    if not is_repo(repo):
        raise UsageError(f"workspace: worktrees needs a git repository; {repo} is not in one")
    name = configured
    if not name:
        head = run_git(repo, "symbolic-ref", "-q", "--short", "HEAD", check=False).stdout.strip()
        if not head:
            raise UsageError(f"{repo} has no branch checked out (detached HEAD): set "
                             "base_branch in the state's config.yaml")
        name = head
    if not has_branch(repo, name):
        raise UsageError(f"config.yaml: key 'base_branch': no branch {name!r} in {repo}")
    return name


def has_branch(repo: Path, name: str) -> bool:
    return run_git(repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{name}",
                   check=False).returncode == 0


def rev(workdir: Path, name: str) -> str:
    """The commit `name` points at."""
    return run_git(workdir, "rev-parse", "--verify", f"{name}^{{commit}}").stdout.strip()


def is_ancestor(workdir: Path, older: str, newer: str) -> bool:
    return run_git(workdir, "merge-base", "--is-ancestor", older, newer,
                   check=False).returncode == 0


def is_live_tree(ws: Workspace) -> bool:
    """Whether the feature's folder is a worktree of ours on its own branch."""
    if not gitdir.links_into(ws.tree, ws.repo):
        return False  # not a worktree, or one an agent pointed elsewhere: made anew
    head = run_git(ws.tree, "symbolic-ref", "-q", "HEAD", check=False).stdout.strip()
    return head == f"refs/heads/{ws.branch}"


def open_worktree(state: Path, ws: Workspace) -> Workspace:
    """Take the feature's worktree over (a killed run's leftovers and all), or make it.

    A folder that is no longer a working worktree is pruned and made again from the
    branch, or from the base branch when the feature has no branch yet.
    """
    with hold_lock(lock_path(state, "git")):
        if is_live_tree(ws):
            clear_stale_locks(ws.tree)
            return ws
        if ws.tree.exists():
            remove_folder(ws.tree)  # ours, and broken: its committed work is on the branch
        run_git(ws.repo, "worktree", "prune")
        ws.tree.parent.mkdir(parents=True, exist_ok=True)
        if has_branch(ws.repo, ws.branch):
            run_git(ws.repo, "worktree", "add", "--quiet", str(ws.tree), ws.branch)
        else:
            run_git(ws.repo, "worktree", "add", "--quiet", "-b", ws.branch, str(ws.tree), ws.base)
    return ws


def commit_leftovers(state: Path, ws: Workspace) -> str | None:
    """Commit what an earlier run left uncommitted in the worktree, so the base can merge in.

    A merge in progress is left alone: it is the worker's to resolve, and its commit ends it.
    """
    with hold_lock(lock_path(state, "git")):
        in_merge = merging(ws.tree)
    if in_merge:
        return None
    return commit_all(ws.tree, state, f"{ws.feature_id}: work an earlier run left in the "
                                      "worktree")


def merge_base_in(state: Path, ws: Workspace, *, keep_conflicts: bool) -> list[str]:
    """Merge the base branch into the feature's branch; the paths in conflict, if any.

    With `keep_conflicts` the merge stays in progress for the worker to resolve (the commit
    after its run concludes it); without, it is aborted and the worktree is as it was.
    """
    with hold_lock(lock_path(state, "git")):
        if is_ancestor(ws.tree, ws.base, "HEAD"):
            return []
        merged = run_git(ws.tree, *identity_args(ws.tree), "merge", "--no-ff", "--no-edit",
                         "-m", f"{ws.feature_id}: merge {ws.base} into {ws.branch}",
                         ws.base, check=False)
        if merged.returncode == 0:
            return []
        conflicts = run_git(ws.tree, "diff", "--name-only", "--diff-filter=U",
                            "--ignore-submodules=all").stdout.split()
        if not conflicts or not keep_conflicts:
            run_git(ws.tree, "merge", "--abort", check=False)
        if not conflicts:  # not a conflict: say what git said
            detail = (merged.stderr or merged.stdout).strip().splitlines()
            return [f"(git merge failed: {detail[0] if detail else merged.returncode})"]
        return conflicts


def remove_worktree(state: Path, ws: Workspace) -> None:
    """Remove a merged feature's worktree and branch."""
    with hold_lock(lock_path(state, "git")):
        if ws.tree.exists():
            run_git(ws.repo, "worktree", "remove", "--force", str(ws.tree), check=False)
            remove_folder(ws.tree, check=False)
        run_git(ws.repo, "worktree", "prune")
        run_git(ws.repo, "branch", "-D", ws.branch, check=False)


def remove_folder(path: Path, check: bool = True) -> None:
    """`rm -rf` of a feature's folder, through no symlink and however deep its agent nested
    folders (shutil.rmtree recurses: a RecursionError past ~1,000 levels); UsageError, naming
    it, if it stays and `check`."""
    gone = subprocess.run(["rm", "-rf", "--", str(path)], capture_output=True, text=True,
                          check=False, stdin=subprocess.DEVNULL)
    if check and os.path.lexists(path):
        said = " ".join(gone.stderr.split())[-300:]
        raise UsageError(f"{path}: cannot remove it to make the feature's worktree anew "
                         f"({said or 'rm failed'}); remove it by hand, then run again")
