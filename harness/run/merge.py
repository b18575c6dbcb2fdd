"""Landing a passed feature (`workspace: worktrees`): its branch into the base branch, under
the mission's merge lock, one feature at a time.

The base is merged into the feature's branch first, in the feature's worktree; when that
brings anything new, the feature's `verify` runs again there. The base branch then only ever
moves by fast-forward to the branch's tested head (a merge commit, where one was needed, is
on the branch). Nothing is forced and nothing a person made is reset: when the base branch
is checked out in a person's tree, that tree is fast-forwarded by `git merge --ff-only`,
which keeps their uncommitted changes as they are or refuses; a refusal means the landing
waits, and says why.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.run.git import run_git
from harness.run.verify import run_verify
from harness.run.worktree import (
    Workspace,
    is_ancestor,
    merge_base_in,
    remove_worktree,
    rev,
    worktrees_dir,
)
from harness.state.store import hold_lock, lock_path
from harness.types import SandboxPolicy

MERGED, UNMERGED, WAITING = "merged", "unmerged", "waiting"
TRIES = 3  # a person committing to the base mid-landing makes us merge it in again
PERSONS_GIT = 10.0  # seconds a lock of the person's git in their checkout is waited out


@dataclass
class Landing:
    """How a landing ended: merged, unmerged (back to the worker) or waiting, and why."""

    result: str
    detail: str
    paths: list[str] = field(default_factory=list)


@dataclass
class VerifySpec:
    """The feature's `verify`, to run again once the base is merged in."""

    command: str | None
    timeout: float
    max_chars: int
    sandbox: SandboxPolicy | None = None  # the validator's: verify runs confined as it says


def land(state: Path, ws: Workspace, verify: VerifySpec) -> Landing:
    """Merge the feature's branch into the base branch; the worktree and branch go once it is."""
    with hold_lock(lock_path(state, "merge")):
        for _ in range(TRIES):
            before = rev(ws.tree, "HEAD")
            conflicts = merge_base_in(state, ws, keep_conflicts=False)
            if conflicts:
                return Landing(UNMERGED, f"merge conflict with {ws.base} in: "
                                         f"{', '.join(conflicts)}", conflicts)
            if verify.command and rev(ws.tree, "HEAD") != before:
                checked = run_verify(verify.command, ws.tree, verify.timeout, verify.max_chars,
                                     verify.sandbox)
                if checked["exit_code"] != 0:
                    return Landing(UNMERGED, f"verify `{verify.command}` exited "
                                             f"{checked['exit_code']} once {ws.base} was merged "
                                             f"in: {checked['output'][-600:]}")
            if into := into_state(state, ws):
                return Landing(UNMERGED, f"{ws.branch} writes into the mission's state folder, "
                                         f"which no landing may touch: {', '.join(into[:10])}; "
                                         "take these out of the branch", into)
            landing = advance_base(state, ws)
            if landing is not None:
                if landing.result == MERGED:
                    remove_worktree(state, ws)
                return landing
        return Landing(WAITING, f"{ws.base} moved under every one of {TRIES} merges")


def advance_base(state: Path, ws: Workspace) -> Landing | None:
    """Fast-forward the base branch to the branch's head; None if the base moved meanwhile."""
    new = rev(ws.tree, "HEAD")
    with hold_lock(lock_path(state, "git")):
        old = rev(ws.repo, f"refs/heads/{ws.base}")
        if not is_ancestor(ws.repo, old, new):
            return None
        checkout = checked_out_at(state, ws)
        if checkout is None:
            moved = run_git(ws.repo, "update-ref", "-m", f"harness: land {ws.branch}",
                            f"refs/heads/{ws.base}", new, old, check=False)
            if moved.returncode != 0:
                return None
            where = "not checked out anywhere"
        else:
            in_the_way = ignored_in_the_way(checkout, old, new)
            if in_the_way:
                return Landing(WAITING, f"{ws.base} is checked out in {checkout}, where "
                                        f"fast-forwarding would overwrite what git ignores "
                                        f"there and {ws.branch} adds: "
                                        f"{', '.join(in_the_way[:10])}; move it aside there "
                                        "and run the validator again")
            dirty = run_git(checkout, "status", "--porcelain", "--untracked-files=no").stdout
            merged = fast_forward(checkout, new)
            if merged.returncode != 0:
                if rev(ws.repo, f"refs/heads/{ws.base}") != old:
                    return None
                said = " ".join((merged.stderr or merged.stdout).split())[:400]
                return Landing(WAITING, f"{ws.base} is checked out in {checkout}, where git "
                                        f"would not fast-forward it ({said}); commit or stash "
                                        "there and run the validator again")
            where = f"checked out in {checkout}: fast-forwarded there" + (
                ", its uncommitted changes kept as they were" if dirty.strip() else "")
    how = "already contained" if old == new else f"fast-forwarded to {new[:10]}"
    return Landing(MERGED, f"{ws.base} {how} ({where})")


def fast_forward(checkout: Path, new: str) -> subprocess.CompletedProcess:
    """`git merge --ff-only` in the person's checkout, tried again for up to PERSONS_GIT
    seconds while a git of theirs holds a lock there (an editor's `git status`, their
    commit): their lock is never removed, and a short one is no reason to wait a round."""
    give_up = time.monotonic() + PERSONS_GIT
    index_lock = Path(run_git(checkout, "rev-parse", "--absolute-git-dir").stdout.strip(),
                      "index.lock")
    while True:
        merged = run_git(checkout, "merge", "--ff-only", "--quiet", new, check=False)
        held = ".lock': File exists" in merged.stderr or index_lock.exists()  # any language
        if merged.returncode == 0 or not held or time.monotonic() >= give_up:
            return merged
        time.sleep(0.25)


def ignored_in_the_way(checkout: Path, old: str, new: str) -> list[str]:
    """What `git merge --ff-only` from `old` to `new` would overwrite or remove in the
    person's `checkout` without a word: the paths `new` adds where the checkout holds an
    untracked (ignored) file, folder or link, or a non-folder above one (git refuses only for
    an untracked file it does not ignore; it replaces an ignored `.env` with the branch's)."""
    added = run_git(checkout, "diff", "--name-only", "-z", "--no-renames", "--diff-filter=A",
                    "--no-textconv", "--no-ext-diff", old, new).stdout.split("\0")
    found = []
    for path in filter(None, added):
        parts = path.split("/")
        above = [checkout.joinpath(*parts[:i]) for i in range(1, len(parts))]
        if os.path.lexists(checkout / path) or any(
                os.path.lexists(p) and (os.path.islink(p) or not p.is_dir()) for p in above):
            found.append(path)
    return found


def into_state(state: Path, ws: Workspace) -> list[str]:
    """What the branch changes beneath the state folder, where that lies in the person's
    checkout: landing it (or the person's next checkout of the base) would write the agent's
    files into the live state, a roles/worker.yaml saying `sandbox: none`, say."""
    try:
        inside = state.resolve().relative_to(ws.repo.resolve()).as_posix()
    except ValueError:
        return []
    changed = run_git(ws.repo, "diff", "--name-only", "-z", "--no-renames", "--no-textconv",
                      "--no-ext-diff", f"refs/heads/{ws.base}", rev(ws.tree, "HEAD")).stdout
    return [p for p in changed.split("\0") if p == inside or p.startswith(f"{inside}/")]


def checked_out_at(state: Path, ws: Workspace) -> Path | None:
    """The tree (not one of ours) where the base branch is checked out, if any."""
    listing = run_git(ws.repo, "worktree", "list", "--porcelain").stdout
    ours = worktrees_dir(state).resolve()
    for block in listing.split("\n\n"):
        lines = dict(line.split(" ", 1) for line in block.splitlines() if " " in line)
        if lines.get("branch") == f"refs/heads/{ws.base}" and "worktree" in lines:
            tree = Path(lines["worktree"])
            if not tree.resolve().is_relative_to(ours):
                return tree
    return None
