"""The harness's git: commit a run's changes (never the state directory) and show a
feature's diff to its validator. Agents never commit; the harness does it for them.

Whatever the agent can write is hostile (docs/SANDBOX.md): in the shared workspace that
includes `.git` (its config, hooks, attributes). So every git the harness runs honours no
hooks, fsmonitor, signing program, external diff or textconv (HARDENED, --no-textconv),
with no secret in its environment; and on the tree a run's agent works in (`confine_tree`)
it runs only after `gitdir.check` and, under `sandbox: bwrap`, inside the agent's sandbox,
so that a filter or an `include.path` the agent configured runs confined, without secrets
or network, and dies with the run.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from harness import platform
from harness.agent import sandbox
from harness.errors import GitFailed, UsageError
from harness.run import gitdir
from harness.state.redact import scrubbed_environ
from harness.state.store import hold_lock, lock_path
from harness.types import SandboxPolicy

DEFAULT_IDENTITY = ("-c", "user.name=autonomous-harness", "-c", "user.email=harness@localhost")
HARDENED = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
            "-c", "commit.gpgSign=false", "-c", "tag.gpgSign=false", "-c", "gpg.program=false",
            # a signature is checked by the program its format names (log.showSignature has
            # `git show` check one on a commit the agent swapped in with `git replace`)
            "-c", "log.showSignature=false", "-c", "gpg.x509.program=false",
            "-c", "gpg.ssh.program=false",
            "-c", "core.sshCommand=false", "-c", "diff.external=", "-c", "core.pager=cat",
            "-c", "credential.helper=", "-c", "protocol.allow=never",
            # a file over this is diffed as binary: git's diff of a 260 MB file the agent wrote
            # took 4.5 GB (the validator's `log -p`, `show --stat` for a report)
            "-c", "core.bigFileThreshold=16m")
GIT_TIMEOUT = 120.0  # seconds, unless $HARNESS_GIT_TIMEOUT says otherwise


@dataclass(frozen=True)
class ConfinedTree:
    """A tree a run's agent works in: its repository as recorded, and the run's sandbox."""

    tree: Path
    repository: gitdir.Repository | None
    top: Path | None  # where git found `.git` from the tree before the agent acted
    git_folder: Path | None  # the git folder it used then
    policy: SandboxPolicy

    def git_policy(self) -> SandboxPolicy:
        """The agent's sandbox without network, with the repository writable where it lies
        outside the tree (a worktree's)."""
        common = self.repository[0] if self.repository else None
        outside = common is not None and not common.is_relative_to(self.tree)
        return replace(self.policy, network=False, paths={str(common): "rw"} if outside else {})


_confined: list[ConfinedTree] = []


def confine_tree(tree: Path, repo: Path, state: Path, policy: SandboxPolicy) -> None:
    """From now on, in this process, git on `tree` (the checkout `repo`, or a worktree of
    it) checks the repository first and runs as the run's agent does (docs/SANDBOX.md).
    Call it before the agent acts: the repository is recorded on first use."""
    repository = gitdir.recorded(state) or gitdir.record(state, repo)
    tree = tree.resolve()
    _confined.append(ConfinedTree(tree, repository, gitdir.toplevel(tree),
                                  gitdir.git_folder(tree), policy))


def run_git(workdir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """`git ARGS` in `workdir`, hardened, output captured as text; GitFailed if it fails
    and `check`, or if it did not finish in time (then no more git runs there)."""
    argv = ["git", *HARDENED, *args]
    env = {**scrubbed_environ(), "GIT_TERMINAL_PROMPT": "0"}
    here = workdir.resolve()
    if here in _hung:  # a fifo it waits on for ever: one wait a process, not one a call
        raise GitFailed(subprocess.CompletedProcess(argv, -9, "", _hung[here]), workdir, args)
    confined = next((c for c in _confined if here.is_relative_to(c.tree)), None)
    if confined is not None and confined.repository is not None:
        gitdir.check(here, confined.repository, confined.top, confined.git_folder)
    if confined is not None and confined.top is not None:  # not a core.worktree it set
        argv.insert(len(HARDENED) + 1, f"--work-tree={confined.top}")
    try:
        if confined is None or confined.policy.kind != "bwrap":
            result = subprocess.run(argv, cwd=workdir, capture_output=True, text=True,
                                    check=False, timeout=git_timeout(), env=env,
                                    stdin=subprocess.DEVNULL)
        else:
            result = _run_confined(argv, confined, workdir, env)
    except subprocess.TimeoutExpired:
        _hung[here] = _stuck(confined.top if confined and confined.top else here)
        raise GitFailed(subprocess.CompletedProcess(argv, -9, "", _hung[here]), workdir,
                        args) from None
    if check and result.returncode != 0:
        raise GitFailed(result, workdir, args)
    return result


_hung: dict[Path, str] = {}  # where git did not finish in time, and why it may have waited


def git_timeout() -> float:
    """Seconds a git command may take: $HARNESS_GIT_TIMEOUT, else GIT_TIMEOUT."""
    value = os.environ.get("HARNESS_GIT_TIMEOUT", "").strip()
    if not value:
        return GIT_TIMEOUT
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds <= 86400:
        raise UsageError(f"$HARNESS_GIT_TIMEOUT is {value[:40]!r}; give the seconds a git "
                         "command may take, more than 0 and at most 86400")
    return seconds


def _stuck(top: Path) -> str:
    waits = gitdir.waits_on(top)
    if waits:
        return (f"git did not finish in {git_timeout():g} s: it waits for ever on what it "
                f"reads there and is no file: {', '.join(waits)}; remove it")
    return (f"git did not finish in {git_timeout():g} s (a repository this big needs more: "
            "set HARNESS_GIT_TIMEOUT)")


def _run_confined(argv: list[str], confined: ConfinedTree, workdir: Path,
                  env: dict[str, str]) -> subprocess.CompletedProcess:
    proc = sandbox.start(argv, confined.git_policy(), workdir, cwd=workdir, env=env,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=git_timeout())
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def is_repo(workdir: Path) -> bool:
    """Whether `workdir` is inside a git work tree."""
    try:
        result = run_git(workdir, "rev-parse", "--is-inside-work-tree", check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0 and result.stdout.strip() == "true"


def identity_args(workdir: Path) -> tuple[str, ...]:
    """A committer identity where the tree's git sees none (in the sandbox, which hides
    $HOME, it sees no global config): the person's own from outside, else the harness's."""
    seen = run_git(workdir, "config", "--get-regexp", r"^user\.(name|email)$", check=False)
    if {line.split(" ", 1)[0] for line in seen.stdout.splitlines()} >= {"user.name",
                                                                        "user.email"}:
        return ()
    return _global_identity() or DEFAULT_IDENTITY


@cache
def _global_identity() -> tuple[str, ...]:
    """The person's name and email from their global config, read outside any repository."""
    found: list[str] = []
    for key in ("user.name", "user.email"):
        got = subprocess.run(["git", *HARDENED, "config", "--global", "--get", key],
                             capture_output=True, text=True, cwd="/", check=False,
                             stdin=subprocess.DEVNULL, env=scrubbed_environ())
        if got.returncode != 0 or not got.stdout.strip():
            return ()
        found += ["-c", f"{key}={got.stdout.strip()}"]
    return tuple(found)


STALE_AFTER = 2.0  # seconds a git lock file must sit unchanged before it counts as stale


def clear_stale_locks(workdir: Path) -> tuple[str, str] | None:
    """Remove the lock files a git killed mid-commit left behind.

    `git commit` takes index.lock, then HEAD.lock and the branch's ref lock (and
    packed-refs.lock); a SIGKILL in between leaves one, and every later commit fails
    on it. Our own git commands are serialised by the state's git lock, so a lock we
    find while holding it is a dead git's, or a person's git at work right now: one
    that does not change for STALE_AFTER seconds is taken to be dead, unless a live git
    works in the tree (`git commit -a` holds index.lock, unchanged, while its editor is
    open). Then nothing is removed, and that git's pid and command line are returned.
    """
    dirs = run_git(workdir, "rev-parse", "--path-format=absolute", "--absolute-git-dir",
                   "--git-common-dir").stdout.split("\n")
    git_dir, common = Path(dirs[0]), Path(dirs[1] or dirs[0])
    candidates = [git_dir / "index.lock", git_dir / "HEAD.lock", common / "packed-refs.lock",
                  *_ref_locks(common / "refs")]
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
    holder = platform.git_at_work(workdir.resolve()) if seen else None
    for lock in [] if holder else seen:
        lock.unlink(missing_ok=True)
    return holder


def _ref_locks(refs: Path) -> list[Path]:
    """The lock files under refs/, never through a symlink (one could lead out of the
    repository, to files the harness must not delete)."""
    if refs.is_symlink() or not refs.is_dir():
        return []
    return [Path(entry.path) for entry in gitdir.entries_under(refs)
            if entry.name.endswith(".lock") and entry.is_file(follow_symlinks=False)]


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
    # never into a nested repository (a gitlink): git would run its config, the agent's
    links = [entry.split("\t", 1)[1] for entry in run_git(workdir, "ls-files", "-s", "-z")
             .stdout.split("\0") if entry.startswith("160000 ")]
    exclude += [f":(exclude,top,literal){link}" for link in links]
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
        result = run_git(workdir, "diff", "--no-textconv", "--no-ext-diff", f"{base}...HEAD",
                         check=False)
    else:
        result = run_git(workdir, "log", "--no-textconv", "--no-ext-diff", "--reverse", "-p",
                         "--format=commit %h %s",
                         f"--grep=^{feature_id}: ", check=False)
    text = result.stdout if result.returncode == 0 else ""
    if len(text) > max_chars:
        text = text[:max_chars] + "\n[... diff truncated ...]"
    return text
