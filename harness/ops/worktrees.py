"""The features' worktrees (`workspace: worktrees`) as `status` and `doctor` see them: which
are held by a live run, which wait for their next run, and which are orphaned (their feature
is done, failed or gone from the plan, or their folder is gone), each with how to clear it.
Read-only.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from harness.ops.checks import Check
from harness.paths import Paths
from harness.run.git import is_repo, run_git
from harness.run.worktree import BRANCH_PREFIX, worktrees_dir
from harness.state.ledger import merges_path
from harness.state.plan import load_plan
from harness.state.store import lock_holder, lock_path, read_tail

FINISHED = ("done", "failed")


def worktree_rows(state: Path, repo: Path) -> list[dict[str, Any]]:
    """One row per feature branch of ours, with its worktree (if any) and its state."""
    if not is_repo(repo):
        return []
    statuses = {f.id: f.status for f in load_plan(state)}
    trees = _trees_by_branch(repo)
    branches = run_git(repo, "for-each-ref", "--format=%(refname:short)",
                       f"refs/heads/{BRANCH_PREFIX}").stdout.split()
    rows = []
    for branch in sorted(set(branches) | set(trees)):
        fid = branch.removeprefix(BRANCH_PREFIX)
        tree = trees.get(branch)
        row = {"feature": fid, "branch": branch, "path": str(tree) if tree else None,
               "feature_status": statuses.get(fid, "not in the plan")}
        row["state"], row["fix"] = _state_of(state, repo, row, tree)
        rows.append(row)
    return rows


def _trees_by_branch(repo: Path) -> dict[str, Path]:
    listing = run_git(repo, "worktree", "list", "--porcelain").stdout
    trees = {}
    for block in listing.split("\n\n"):
        fields = dict(line.split(" ", 1) for line in block.splitlines() if " " in line)
        branch = fields.get("branch", "").removeprefix("refs/heads/")
        if branch.startswith(BRANCH_PREFIX) and "worktree" in fields:
            trees[branch] = Path(fields["worktree"])
    return trees


def _state_of(state: Path, repo: Path, row: dict[str, Any], tree: Path | None) -> tuple[str, str]:
    """`held by ...`, `idle`, or `orphaned: why`; and the fix for an orphan."""
    fid = row["feature"]
    for name in (f"tree-{fid}", f"worker-{fid}", f"validator-{fid}"):
        holder = lock_holder(lock_path(state, name))
        if holder:
            return f"held by {holder}", ""
    at = f"git -C {shlex.quote(str(repo))}"  # a command to paste: a name may hold `;` or `$(`
    remove = f"{at} worktree remove --force {shlex.quote(str(tree))}; " if tree else ""
    drop = f"{remove}{at} branch -D {shlex.quote(row['branch'])}"
    if tree is not None and not tree.exists():
        return "orphaned: its folder is gone", f"{at} worktree prune"
    if row["feature_status"] in FINISHED or row["feature_status"] == "not in the plan":
        return f"orphaned: the feature is {row['feature_status']}", drop
    if tree is not None and not tree.resolve().is_relative_to(worktrees_dir(state).resolve()):
        return f"checked out in {tree}, not by the harness: its runs cannot start there", ""
    return "idle: the next run on the feature takes it over", ""


def recent_merges(state: Path, n: int = 5) -> list[str]:
    """The last landings of features on the base branch (merges.log)."""
    return read_tail(merges_path(state), n)


def worktree_check(paths: Paths) -> Check:
    """Orphaned feature worktrees or branches, each with the command that clears it."""
    try:
        rows = worktree_rows(paths.state, paths.workdir)
    except Exception as e:  # a broken plan is reported by its own check
        return Check("worktrees", False, str(e), "correct the file named")
    orphans = [r for r in rows if r["state"].startswith("orphaned")]
    if not orphans:
        return Check("worktrees", True, "no orphaned feature worktree or branch")
    return Check("worktrees", True, f"{len(orphans)} orphaned: " + "; ".join(
        f"{r['branch']} ({r['state']})" for r in orphans),
        " && ".join(r["fix"] for r in orphans), warn=True)
