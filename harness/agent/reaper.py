"""Processes an agent detached from its run, stopped when the run.sh process ends.

Agent shells, agent CLIs and verify commands run in process groups that the
harness kills when a run ends. A command that starts a session of its own
(`setsid`, a server that daemonizes) leaves its group, and would outlive the
run, holding a port or a lock into the next one. So on Linux the run.sh process
makes itself a child subreaper (PR_SET_CHILD_SUBREAPER): such orphans become
its children instead of init's, and when it exits, every child still running
is killed with its process group. Only the run.sh process does this
(`entry.main`): a program that imports the harness keeps its own children.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from collections.abc import Iterator

PR_SET_CHILD_SUBREAPER = 36
ROUNDS = 5  # a killed orphan's own children are handed to us next: a few rounds take them


def adopt_orphans() -> bool:
    """Make this process the reaper of its descendants' orphans; False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def children() -> list[int]:
    """This process's children, from /proc (every thread's list)."""
    pids: list[int] = []
    with contextlib.suppress(OSError):
        for tid in os.listdir("/proc/self/task"):
            with contextlib.suppress(OSError), open(f"/proc/self/task/{tid}/children") as f:
                pids += [int(p) for p in f.read().split()]
    return pids


def stop_leftovers(rounds: int = ROUNDS) -> list[int]:
    """Kill every child still running, with its process group, and reap it."""
    stopped: list[int] = []
    own_group = os.getpgrp()
    for _ in range(rounds):
        pids = children()
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                group = os.getpgid(pid)
                if group != own_group:
                    os.killpg(group, signal.SIGKILL)
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
            stopped.append(pid)
    return stopped


@contextlib.contextmanager
def reaping() -> Iterator[None]:
    """Adopt orphans for the duration, then stop whatever is left."""
    adopted = adopt_orphans()
    try:
        yield
    finally:
        if adopted:
            stop_leftovers()
