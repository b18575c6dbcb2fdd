"""Where an agent's commands run: the tool shell, the feature's `verify` and an agent CLI.

`sandbox: bwrap` runs them under bubblewrap: the system read-only, the working directory
writable, $HOME an empty tmpfs but for the role's `sandbox_paths`, the state directory, the
identity folder and the harness's home hidden (the agent reaches them only through the
harness's tools; `run.sh` there says so), /tmp private, no network unless
`sandbox_network`, no capabilities, and a PID namespace of its own that dies with the
harness. `sandbox: none` runs them under the keeper (harness/agent/keeper.py), which stops
what they started when the harness dies. Where bwrap cannot run, a role that asks for it
fails (SandboxError, exit 2); it never runs unsandboxed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

from harness import platform
from harness.errors import SandboxError
from harness.types import SandboxPolicy

RUN_SH_INSIDE = Path(__file__).with_name("sandboxed-run.sh")
FIX = "install bubblewrap (e.g. apt-get install bubblewrap), or set `sandbox: none` in the role"
NAMESPACES = ["--die-with-parent", "--unshare-pid", "--unshare-ipc", "--cap-drop", "ALL"]
SYSTEM = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
          "--tmpfs", "/tmp", "--tmpfs", "/var/tmp", "--tmpfs", "/run"]
RESOLVER = "/run/systemd/resolve"  # /etc/resolv.conf may point into /run


def bwrap_problem() -> str | None:
    """Why bwrap cannot make the sandbox here (missing, or user namespaces off), or None."""
    exe = shutil.which("bwrap")
    return "bwrap is not installed (not on PATH)" if exe is None else _probe(exe)


@cache
def _probe(exe: str) -> str | None:
    argv = [exe, *NAMESPACES, "--unshare-net", *SYSTEM, "true"]
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


def confine(argv: list[str], policy: SandboxPolicy, workdir: Path) -> list[str]:
    """The argv that runs `argv` in `workdir` as the policy says: in bwrap, else under the
    keeper (on Linux; elsewhere as it is)."""
    if policy.kind == "bwrap":
        require(policy)
        return [str(shutil.which("bwrap")), *bwrap_args(policy, workdir), "--", *argv]
    if platform.is_linux():
        return [sys.executable, "-I", "-m", "harness.agent.keeper", str(os.getpid()), "--", *argv]
    return list(argv)


def bwrap_args(policy: SandboxPolicy, workdir: Path, home: Path | None = None) -> list[str]:
    """bwrap's options; later mounts cover earlier ones, so the order is the design."""
    home = Path.home() if home is None else home
    args = [*NAMESPACES, *SYSTEM]
    if policy.network:
        args += ["--ro-bind-try", RESOLVER, RESOLVER]
    else:
        args += ["--unshare-net"]
    args += _hide(home) + _hide(policy.harness_home)
    for path, mode in policy.paths.items():
        real = str(home / path[2:]) if path.startswith("~/") else path
        args += ["--bind-try" if mode == "rw" else "--ro-bind-try", real, real]
    hidden = _hide(policy.state) + _hide(policy.identity)
    bind = ["--bind", str(workdir), str(workdir)]  # may lie inside what was hidden above
    if policy.harness_home is not None:
        bind += ["--ro-bind", str(RUN_SH_INSIDE), str(policy.harness_home / "run.sh")]
    # the inner mount goes last: the state is hidden even inside the working directory
    # (./.harness), and a feature's worktree (<state>/worktrees/F-xxx) shows inside the state
    inside_state = policy.state is not None and workdir.is_relative_to(policy.state)
    args += hidden + bind if inside_state else bind + hidden
    return args + ["--setenv", "TMPDIR", "/tmp", "--chdir", str(workdir)]


def _hide(path: Path | None) -> list[str]:
    """An empty tmpfs over `path`, where it is a folder (bwrap needs the mount point)."""
    if path is None or not path.is_dir() or path == Path("/"):
        return []
    return ["--tmpfs", str(path)]
