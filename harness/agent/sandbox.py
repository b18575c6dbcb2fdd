"""Where an agent's commands run: the tool shell, the feature's `verify`, an agent CLI, and the
harness's own git on the agent's tree (docs/SANDBOX.md has the threat model).

`sandbox: bwrap` runs them under bubblewrap: only the system's program folders, read-only
(not `/`: a host service's unix socket elsewhere stays out of sight), with what only root
may read in /etc and /opt covered; the working directory writable; $HOME an empty tmpfs but
for the role's `sandbox_paths`; the state directory, the identity folder, the harness's home
and the user's env file hidden wherever they lie (the agent reaches them only through the
harness's tools); /tmp, /var and /run private; no network unless `sandbox_network`; an
unprivileged uid in a user namespace of its own, no capabilities; /proc/sys read-only; the
seccomp filter of harness/agent/seccomp.py; a PID namespace whose first process dies with
the harness. `sandbox: none` runs them under the keeper (harness/agent/keeper.py), which
stops what they started when the harness dies. Where bwrap cannot run, a role that asks for
it fails (SandboxError, exit 2); it never runs unsandboxed.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

from harness import platform
from harness.agent.seccomp import program_fd, seccomp_problem
from harness.errors import SandboxError
from harness.state import envfile
from harness.types import SandboxPolicy

RUN_SH_INSIDE = Path(__file__).with_name("sandboxed-run.sh")
FIX = "install bubblewrap (e.g. apt-get install bubblewrap), or set `sandbox: none` in the role"
INSIDE_UID = 1000  # the agent's uid inside when the harness runs as root: never uid 0
NAMESPACES = ["--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
              "--unshare-cgroup-try", "--unshare-user", "--new-session", "--cap-drop", "ALL",
              "--hostname", "sandbox"]
PROGRAM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
                "/nix", "/gnu")  # the last two: where Nix and Guix keep every program
COVERED_UNDER = ("/etc", "/opt")  # where a root-only file or a socket is covered
SCAN_LIMIT = 50_000  # entries looked at under each of those (a huge /opt is not scanned whole)
PRIVATE = ["--dev", "/dev", "--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys",
           "--tmpfs", "/tmp", "--tmpfs", "/var", "--dir", "/var/tmp", "--tmpfs", "/run"]
RESOLVER = "/run/systemd/resolve"  # /etc/resolv.conf may point into /run


def bwrap_problem() -> str | None:
    """Why bwrap cannot make the sandbox here (missing, user namespaces off, no libseccomp),
    or None."""
    if not platform.is_linux():
        return f"bubblewrap needs Linux; this is {platform.name()}"
    exe = shutil.which("bwrap")
    if exe is None:
        return "bwrap is not installed (not on PATH)"
    return seccomp_problem() or _probe(exe)


@cache
def _probe(exe: str) -> str | None:
    argv = [exe, *NAMESPACES, "--uid", str(inside_uid()), "--unshare-net", *_program_dirs(),
            *PRIVATE, "true"]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=30,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{exe} does not run: {e}"
    if proc.returncode == 0:
        return None
    why = " ".join(proc.stderr.split())[:300] or f"exit code {proc.returncode}"
    return (f"{exe} cannot make a sandbox here ({why}); if user namespaces are off, turn them "
            "on (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces=15000)")


def require(policy: SandboxPolicy) -> None:
    """SandboxError (exit 2) when the policy asks for bwrap and this machine cannot give it."""
    if policy.kind == "bwrap" and (problem := bwrap_problem()):
        raise SandboxError(f"the role asks for `sandbox: bwrap`, but {problem}; fix: {FIX}")


def start(argv: list[str], policy: SandboxPolicy, workdir: Path,
          **popen: Any) -> subprocess.Popen:
    """Popen `argv` in `workdir` as the policy says (`popen` goes to subprocess.Popen)."""
    if policy.kind != "bwrap":
        return subprocess.Popen(confine(argv, policy, workdir), **popen)
    require(policy)
    seccomp = program_fd()
    try:
        popen["pass_fds"] = (*popen.get("pass_fds", ()), seccomp)
        return subprocess.Popen(confine(argv, policy, workdir, seccomp), **popen)
    finally:
        os.close(seccomp)


def confine(argv: list[str], policy: SandboxPolicy, workdir: Path,
            seccomp_fd: int | None = None) -> list[str]:
    """The argv that runs `argv` in `workdir` as the policy says: under the keeper (on Linux;
    elsewhere as it is), and in bwrap, with the seccomp filter read from `seccomp_fd`.

    The keeper holds bwrap too: a sandbox whose first process was tampered with (it is the
    agent's uid; /proc/1/mem is writable to it) and no longer dies with bwrap is then
    still killed, from outside, with everything in it, when the harness dies.
    """
    if policy.kind == "bwrap":
        require(policy)
        filtered = [] if seccomp_fd is None else ["--seccomp", str(seccomp_fd)]
        argv = [str(shutil.which("bwrap")), *bwrap_args(policy, workdir), *filtered, "--", *argv]
    if platform.is_linux():
        return [sys.executable, "-I", "-m", "harness.agent.keeper", str(os.getpid()), "--", *argv]
    return list(argv)


def inside_uid() -> int:
    return os.getuid() or INSIDE_UID


def bwrap_args(policy: SandboxPolicy, workdir: Path, home: Path | None = None) -> list[str]:
    """bwrap's options. A later mount covers an earlier one, so mounts go outermost first:
    the working directory may lie inside what is hidden (a feature's worktree under the
    state) and what is hidden inside it (./.harness, a harness home in the tree)."""
    home = Path.home() if home is None else home
    uid = str(inside_uid())
    args = [*NAMESPACES, "--uid", uid, "--gid", str(os.getgid() or INSIDE_UID),
            *_program_dirs(), *_covers(), *PRIVATE]
    args += ["--ro-bind-try", RESOLVER, RESOLVER] if policy.network else ["--unshare-net"]
    mounts: list[tuple[Path, list[str]]] = [(home, ["--tmpfs", str(home)])]
    for path, mode in policy.paths.items():
        real = home / path[2:] if path.startswith("~/") else Path(path)
        if real.is_relative_to(workdir) and os.path.realpath(real) != str(real):
            continue  # a link the agent left in its tree: bwrap could not mount there
        mounts.append((real, ["--bind-try" if mode == "rw" else "--ro-bind-try",
                              str(real), str(real)]))
    mounts.append((workdir, ["--bind", str(workdir), str(workdir)]))
    for hidden in (policy.state, policy.identity, policy.harness_home,
                   home.joinpath(*envfile.USER_FOLDER)):  # the user's env file, keys in it
        if hidden is not None and hidden.is_dir() and hidden != Path("/"):
            mounts.append((hidden, ["--tmpfs", str(hidden)]))
    for _, mount in sorted(mounts, key=lambda m: len(m[0].parts)):  # stable: ties keep order
        args += mount
    if policy.harness_home is not None:
        args += ["--ro-bind", str(RUN_SH_INSIDE), str(policy.harness_home / "run.sh")]
    return args + ["--setenv", "TMPDIR", "/tmp", "--chdir", str(workdir)]


@cache
def _program_dirs() -> tuple[str, ...]:
    """The system's program folders, read-only; a merged-/usr symlink stays a symlink."""
    args: list[str] = []
    for folder in PROGRAM_DIRS:
        if os.path.islink(folder):
            args += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            args += ["--ro-bind", folder, folder]
    return tuple(args)


@cache
def _covers() -> tuple[str, ...]:
    """Any unix socket in /etc and /opt covered, and, when the harness runs as root, what
    there only its owner may read (the sandbox's uid maps to root's, the owner)."""
    args: list[str] = []
    for top in COVERED_UNDER:
        seen = 0
        for folder, dirs, files in os.walk(top):
            seen += len(dirs) + len(files)
            args += [a for name in files for a in _cover(os.path.join(folder, name))]
            kept = []
            for name in dirs:
                cover = _cover(os.path.join(folder, name))
                args += cover
                kept += [] if cover else [name]
            dirs[:] = kept  # nothing below a covered folder needs looking at
            if seen > SCAN_LIMIT:
                break
    return tuple(args)


def _cover(path: str) -> list[str]:
    try:
        st = os.lstat(path)
    except OSError:
        return []
    private = os.getuid() == 0 and not st.st_mode & 0o004
    if stat.S_ISDIR(st.st_mode):
        return ["--tmpfs", path] if private else []
    if stat.S_ISSOCK(st.st_mode) or (private and stat.S_ISREG(st.st_mode)):
        return ["--ro-bind", "/dev/null", path]
    return []
