"""Child processes that do not outlive the harness.

Agent shells, agent CLIs and verify commands run in their own process groups (so a
timeout can kill each whole group), which also means a SIGKILL of the harness would
leave them running, still editing the work tree. On Linux each such child asks the
kernel to kill it when the harness dies (PR_SET_PDEATHSIG), and runs under the keeper
or in bwrap (harness/agent/sandbox.py), which take what it started down with it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

from harness import platform

STOP = signal.SIGUSR1  # the keeper stops its whole tree on it; bwrap and bash just die
STOP_GRACE = 5.0  # seconds the keeper gets to do so before its group is killed


def die_with_parent() -> None:
    """preexec_fn: SIGKILL this child when the process that started it dies (Linux only)."""
    platform.die_with_parent(signal.SIGKILL)


def stop_tree(proc: subprocess.Popen) -> None:
    """Stop a command started through sandbox.confine and everything it started, and reap it."""
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(STOP)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=STOP_GRACE)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # what is left of its group, whatever happened
    proc.wait()
