"""The harness's git: commit a run's changes (never the state directory) and show a
feature's diff to its validator. Agents never commit; the harness does it for them.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from harness.state.store import hold_lock, lock_path

DEFAULT_IDENTITY = ("-c", "user.name=autonomous-harness", "-c", "user.email=harness@localhost")


def run_git(workdir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """`git -C workdir ARGS`, output captured as text."""
    return subprocess.run(["git", "-C", str(workdir), *args], capture_output=True, text=True,
                          check=check, timeout=120)


def is_repo(workdir: Path) -> bool:
    """Whether `workdir` is inside a git work tree."""
    try:
        result = run_git(workdir, "rev-parse", "--is-inside-work-tree", check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0 and result.stdout.strip() == "true"


def identity_args(workdir: Path) -> tuple[str, ...]:
    """A committer identity only where git has none configured, so commits never fail on it."""
    has_name = run_git(workdir, "config", "user.name", check=False).returncode == 0
    has_email = run_git(workdir, "config", "user.email", check=False).returncode == 0
    return () if has_name and has_email else DEFAULT_IDENTITY


STALE_AFTER = 2.0  # seconds a git lock file must sit unchanged before it counts as stale


def clear_stale_locks(workdir: Path) -> None:
    """Remove the lock files a git killed mid-commit left behind.

    `git commit` takes index.lock, then HEAD.lock and the branch's ref lock (and
    packed-refs.lock); a SIGKILL in between leaves one, and every later commit fails
    on it. Our own git commands are serialised by the state's git lock, so a lock we
    find while holding it is a dead git's, or a person's git at work right now: one
    that does not change for STALE_AFTER seconds is taken to be dead.
    """
    git_dir = Path(run_git(workdir, "rev-parse", "--absolute-git-dir").stdout.strip())
    common = Path(run_git(workdir, "rev-parse", "--path-format=absolute", "--git-common-dir",
                       check=False).stdout.strip() or git_dir)
    candidates = [git_dir / "index.lock", git_dir / "HEAD.lock", common / "packed-refs.lock",
                  *(common / "refs").rglob("*.lock")]
    seen = {lock: _stamp(lock) for lock in candidates}
    seen = {lock: stamp for lock, stamp in seen.items() if stamp is not None}
    deadline = time.monotonic() + STALE_AFTER
    while seen and time.monotonic() < deadline:
        time.sleep(0.1)
        for lock, stamp in list(seen.items()):
            now = _stamp(lock)
            if now is None:
                del seen[lock]  # its git finished
            elif now != stamp:
                seen[lock], deadline = now, time.monotonic() + STALE_AFTER
    for lock in seen:
        lock.unlink(missing_ok=True)


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_mtime_ns, st.st_size


def commit_all(workdir: Path, state: Path, message: str) -> str | None:
    """Commit every change in the work tree except the state directory; the new sha, or None."""
    with hold_lock(lock_path(state, "git")):
        clear_stale_locks(workdir)
        return _commit(workdir, state, message)


def _commit(workdir: Path, state: Path, message: str) -> str | None:
    exclude = []
    try:
        rel = state.resolve().relative_to(workdir.resolve()).as_posix()
    except ValueError:
        rel = None  # the state directory lives outside the work tree
    # git refuses a pathspec naming an ignored path, so exclude the state only if tracked-able.
    if rel and run_git(workdir, "check-ignore", "-q", rel, check=False).returncode != 0:
        exclude = [f":(exclude){rel}"]
    run_git(workdir, "add", "-A", "--", ".", *exclude)
    if (run_git(workdir, "diff", "--cached", "--quiet", check=False).returncode == 0
            and not merging(workdir)):
        return None
    run_git(workdir, *identity_args(workdir), "commit", "-q", "--no-verify", "-m", message)
    return run_git(workdir, "rev-parse", "HEAD").stdout.strip()


def merging(workdir: Path) -> bool:
    """Whether a merge is in progress in `workdir` (a commit concludes it, changes or not)."""
    git_dir = run_git(workdir, "rev-parse", "--absolute-git-dir", check=False).stdout.strip()
    return bool(git_dir) and (Path(git_dir) / "MERGE_HEAD").exists()


def feature_diff(workdir: Path, feature_id: str, max_chars: int, base: str | None = None) -> str:
    """The patches of every harness commit for `feature_id`, oldest first, within `max_chars`;
    with `base` (a feature's own branch), what the branch changes against that base instead."""
    if base:
        result = run_git(workdir, "diff", f"{base}...HEAD", check=False)
    else:
        result = run_git(workdir, "log", "--reverse", "-p", "--format=commit %h %s",
                         f"--grep=^{feature_id}: ", check=False)
    text = result.stdout if result.returncode == 0 else ""
    if len(text) > max_chars:
        text = text[:max_chars] + "\n[... diff truncated ...]"
    return text
