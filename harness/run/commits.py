"""The commit policy: what the harness commits of a run's work, and when a run in the shared
working tree may not start. (How git itself is invoked is `git.py`'s.)

Chosen: in `workspace: shared` a worker or validator refuses to start (exit 3) while the tree
holds changes the harness did not make, naming them and the ways out (commit or stash them,
or `workspace: worktrees`). Committing only what changed during the run was turned down: a
file both the person and the agent changed cannot be split between them, so either the
person's edit lands in the feature's commit or the agent's work stays out of it; the
validator would judge a tree holding the person's half-done work; and an agent working among
uncommitted edits can destroy them (`git checkout .`, `git stash`), which it cannot do to
work that is committed. From a clean start, every change at the end is the run's.

The harness keeps what it changed and did not commit in `<state>/tree.json`: `left`, each
path with its stamp (git's status letters, mtime, size) and the run that made it, and
`open`, the run in flight. What a validator leaves (a `verify`'s build output) stays its own
and is never swept into a worker's commit; a path whose stamp has changed since is no longer
the harness's. A run killed before it could close (SIGKILL) leaves `open` set: the next run
takes what the tree holds as that run's and commits a killed worker's work at once in its
feature's name, so a loop never wedges on the harness's own leftovers. Ignored files and the
state directory are never changes. A run whose agent never acted (a CLI not logged in)
commits nothing; what changed during it (a CLI's start-up files) is kept as the harness's
but never committed as a worker's work.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.config import MissionConfig
from harness.errors import BusyError, UsageError
from harness.paths import Paths
from harness.run.git import clear_stale_locks, commit_all, identity_args, is_repo, run_git
from harness.state import reading
from harness.state.store import hold_lock, lock_path, write_json
from harness.types import Outcome

RECORD = "tree.json"
SHOWN = 10  # paths a refusal names
IN_PROGRESS = {"MERGE_HEAD": "a merge", "rebase-merge": "a rebase", "rebase-apply": "a rebase",
               "CHERRY_PICK_HEAD": "a cherry-pick", "REVERT_HEAD": "a revert"}


@dataclass
class TreeRecord:
    """`<state>/tree.json`: the run in flight, and the changes the harness left uncommitted."""

    open: dict[str, Any] | None = None
    left: dict[str, dict[str, Any]] = field(default_factory=dict)

    def owns(self, path: str, stamp: list[Any]) -> bool:
        return path in self.left and self.left[path]["stamp"] == stamp


def agent_acted(outcome: Outcome | None, error: BaseException | None) -> bool:
    """Whether the agent did anything: it made a model call, or its CLI ran to an end (a
    generic CLI reports no turns). A run that failed before its first call did not."""
    return outcome is not None and (outcome.turns > 0 or error is None)


def require_git(paths: Paths, mission: MissionConfig) -> None:
    """UsageError (exit 2), before anything changes, when runs are to commit and cannot."""
    config = paths.state / "config.yaml"
    if not mission.commit:
        if mission.workspace == "worktrees":
            raise UsageError(f"{config}: key 'commit': false cannot go with workspace: "
                             "worktrees, which commits each feature on its own branch; "
                             "remove one of the two")
        return
    fix = f"or set `commit: false` in {config} to run without commits"
    if shutil.which("git") is None:
        raise UsageError(f"git is not installed (not on PATH={os.environ.get('PATH', '')}): "
                         f"the harness commits each worker run's changes; install git, {fix}")
    if not is_repo(paths.workdir):
        raise UsageError(f"{paths.workdir} is not in a git repository: the harness commits "
                         f"each worker run's changes there; run `git init` and commit what "
                         f"is there, {fix}")
    if mission.workspace == "shared" and run_git(paths.workdir, "symbolic-ref", "-q", "HEAD",
                                                 check=False).returncode != 0:
        at = run_git(paths.workdir, "rev-parse", "--short", "HEAD", check=False).stdout.strip()
        raise UsageError(f"{paths.workdir}: HEAD is detached (at {at or '?'}): a run's commit "
                         f"would be on no branch; check out a branch (`git switch NAME`), "
                         f"{fix}")


def check_tree(paths: Paths, mission: MissionConfig, role: str,
               feature_id: str | None) -> list[str]:
    """Before a run in the shared tree (its tree lock held): BusyError (exit 3) on changes the
    harness did not make or a git operation in progress; a killed worker's leftovers are
    committed first. The shas of those commits; the run is then recorded as in flight."""
    if not mission.commit or mission.workspace != "shared":
        return []
    tree = paths.workdir  # git runs there: on the agent's tree, as git.py confines it
    _refuse_operation(tree)
    with hold_lock(lock_path(paths.state, "git")):
        if holder := clear_stale_locks(tree):
            raise BusyError(f"{tree}: a git is at work there (pid {holder[0]}: {holder[1]}), "
                            "holding its lock: a commit's editor still open? the run "
                            "starts once it has finished")
        record, changes = load_record(paths.state), tree_changes(tree, paths.state)
        if record.open is not None:  # its run died without closing: what is here is its
            record.left.update({p: {"stamp": s, **record.open} for p, s in changes.items()
                                if not record.owns(p, s)})
            record.open = None
        record.left = {p: v for p, v in record.left.items() if p in changes}
        theirs = sorted(p for p, s in changes.items() if not record.owns(p, s))
        shas = [] if theirs else _commit_leftovers(tree, record)
        if not theirs:
            record.open = {"role": role, "feature": feature_id, "run": None}
        save_record(paths.state, record)
    if theirs:
        raise BusyError(_refusal(_top(tree), theirs, paths.state))
    return shas


def opened(paths: Paths, mission: MissionConfig, run_id: str) -> None:
    """Name the run in flight, once it has an id."""
    if mission.commit and mission.workspace == "shared":
        record = load_record(paths.state)
        if record.open is not None:
            record.open["run"] = run_id
            save_record(paths.state, record)


def close_tree(paths: Paths, mission: MissionConfig, run: dict[str, Any], acted: bool,
               message: str) -> str | None:
    """After a run in the shared tree: a worker whose agent acted commits what changed during
    the run (`message`); what is left uncommitted is recorded as this run's. The new sha."""
    tree = paths.workdir
    with hold_lock(lock_path(paths.state, "git")):
        clear_stale_locks(tree)
        record, changes = load_record(paths.state), tree_changes(tree, paths.state)
        mine = sorted(p for p, s in changes.items() if not record.owns(p, s))
        sha = None
        try:
            if acted and run["role"] == "worker" and mine:
                sha = commit_paths(tree, mine, message)
                changes = tree_changes(tree, paths.state)
        finally:
            # kept as this run's; what changed in a run whose agent never acted (a CLI's
            # start-up files) is never committed as a worker's work
            record.left = {p: v for p, v in record.left.items() if record.owns(p, changes.get(p))}
            record.left.update({p: {"stamp": s, **run, "acted": acted}
                                for p, s in changes.items() if p not in record.left})
            record.open = None
            save_record(paths.state, record)
    return sha


def abandon(paths: Paths, mission: MissionConfig, role: str, feature_id: str) -> None:
    """A run that failed before its model was called: nothing is committed; what changed
    (a `verify`'s output) is kept as the harness's, and no run is left in flight."""
    if mission.commit and mission.workspace == "shared":
        close_tree(paths, mission, {"role": role, "feature": feature_id, "run": None},
                   False, "")


def commit_run(paths: Paths, mission: MissionConfig, run: dict[str, Any], in_worktree: bool,
               acted: bool, message: str) -> tuple[dict[str, Any], str]:
    """Close a worker's or validator's run in its tree: a worker's work committed (`message`)
    when its agent acted and the mission commits. The manifest fields and the words the
    run's message gets."""
    worker = run["role"] == "worker"
    if not mission.commit:
        return {}, "; nothing committed (commit: false in config.yaml)" if worker else ""
    try:
        if in_worktree:  # the feature's own worktree: all it holds is the harness's
            sha = commit_all(paths.workdir, paths.state, message) if worker and acted else None
        else:
            sha = close_tree(paths, mission, run, acted, message)
    except (subprocess.SubprocessError, OSError) as e:
        error = getattr(e, "stderr", None) or str(e)
        return {"commit": None, "commit_error": error}, "; git commit failed (see the manifest)"
    if not worker:
        return {}, ""
    if not acted:
        return {"commit": None}, "; nothing committed: the agent never acted"
    return {"commit": sha}, f"; committed {sha[:10]}" if sha else "; no changes to commit"


def commit_paths(tree: Path, paths: list[str], message: str) -> str | None:
    """Commit exactly `paths` (relative to the top of the repository), whatever else is
    staged; the new sha, or None when they hold no change. Git runs in `tree`; the list goes
    through a file in the git folder, which a sandboxed git sees (its /tmp is its own), and
    keeps the argv short however many paths there are."""
    listing = Path(run_git(tree, "rev-parse", "--absolute-git-dir").stdout.strip()) / (
        f"harness-paths-{secrets.token_hex(8)}")
    # a new file of ours: never through a link the agent may have left in its .git
    fd = os.open(listing, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(b"".join(f":(top,literal){p}".encode() + b"\0" for p in paths))
    spec = (f"--pathspec-from-file={listing}", "--pathspec-file-nul")
    try:
        run_git(tree, "add", "--all", *spec)
        if not _staged(tree).intersection(paths):
            return None
        run_git(tree, *identity_args(tree), "commit", "-q", "--no-verify", "-m", message,
                "--only", *spec)
    finally:
        listing.unlink(missing_ok=True)
    return run_git(tree, "rev-parse", "HEAD").stdout.strip()


def tree_changes(tree: Path, state: Path) -> dict[str, list[Any]]:
    """Each changed path in the repository (tracked or not; never ignored ones or the state
    directory's), relative to its top, with its stamp."""
    out = run_git(tree, "status", "--porcelain=v1", "-z", "--untracked-files=all",
                  "--no-renames").stdout
    top = _top(tree)
    try:
        skip: str | None = state.resolve().relative_to(top.resolve()).as_posix() + "/"
    except ValueError:
        skip = None  # the state directory lives outside the work tree
    changes = {}
    for entry in out.split("\0"):
        path = entry[3:]
        if len(entry) > 3 and not (skip and (path + "/").startswith(skip)):
            changes[path] = _stamp(top / path, entry[:2])
    return changes


def _staged(tree: Path) -> set[str]:
    """The paths whose change is in the index, relative to the top of the repository."""
    out = run_git(tree, "status", "--porcelain=v1", "-z", "--no-renames").stdout
    return {entry[3:] for entry in out.split("\0") if len(entry) > 3 and entry[0] not in " ?"}


def load_record(state: Path) -> TreeRecord:
    """The tree record; none yet is an empty one."""
    path, fix = state / RECORD, ("it lists the changes the harness left uncommitted: repair "
                                 "it, or delete it if `git status` shows none")
    try:
        data = reading.read_json_object(path)  # not JSON, too deep, not UTF-8, a folder
    except UsageError as e:
        raise UsageError(f"{e}; {fix}") from None
    data = data if data is not None else {}
    opened, left = data.get("open"), data.get("left") or {}
    if not (opened is None or isinstance(opened, dict)) or not isinstance(left, dict) or not all(
            isinstance(v, dict) and isinstance(v.get("stamp"), list) for v in left.values()):
        raise UsageError(f"{path}: key 'open' or 'left' is not what the harness writes; {fix}")
    return TreeRecord(opened, dict(left))


def save_record(state: Path, record: TreeRecord) -> None:
    write_json(state / RECORD, {"format": 1, "open": record.open, "left": record.left})


def _stamp(path: Path, status: str) -> list[Any]:
    try:
        st = path.lstat()
    except OSError:
        return [status, None, None]
    return [status, st.st_mtime_ns, st.st_size]


def _top(workdir: Path) -> Path:
    return Path(run_git(workdir, "rev-parse", "--show-toplevel").stdout.strip())


def _refuse_operation(tree: Path) -> None:
    git_dir = Path(run_git(tree, "rev-parse", "--absolute-git-dir").stdout.strip())
    for name, what in IN_PROGRESS.items():
        if (git_dir / name).exists():
            raise BusyError(f"busy: {what} is in progress in {tree}: a run's commit would "
                            f"conclude it; finish it (git commit, git rebase --continue) or "
                            f"abort it, then run again")


def _commit_leftovers(tree: Path, record: TreeRecord) -> list[str]:
    """Commit, in its feature's name, what each killed or failed worker run left."""
    groups: dict[tuple[str, str], list[str]] = {}
    for path, made in record.left.items():
        if made.get("role") == "worker" and made.get("feature") and made.get("acted", True):
            groups.setdefault((made["feature"], made.get("run") or "?"), []).append(path)
    shas = []
    for (feature, run), paths in sorted(groups.items()):
        sha = commit_paths(tree, paths, f"{feature}: work run {run} left uncommitted")
        shas += [sha] if sha else []
        for path in paths:
            del record.left[path]
    return shas


def _refusal(top: Path, theirs: list[str], state: Path) -> str:
    more = f" and {len(theirs) - SHOWN} more" if len(theirs) > SHOWN else ""
    return (f"busy: {top} holds changes the harness did not make: "
            f"{', '.join(theirs[:SHOWN])}{more}. A run commits its work, so it starts only "
            f"where every change is its own; commit them (git add -A && git commit), stash "
            f"them (git stash -u), or set `workspace: worktrees` in {state / 'config.yaml'} "
            f"to give each feature its own worktree")
