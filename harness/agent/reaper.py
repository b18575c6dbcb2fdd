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
import os
import signal
from collections.abc import Iterator

from harness import platform

ROUNDS = 5  # a killed orphan's own children are handed to us next: a few rounds take them


adopt_orphans = platform.adopt_orphans  # False where unsupported (not Linux)
children = platform.child_pids  # this process's children ([] without /proc)


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
