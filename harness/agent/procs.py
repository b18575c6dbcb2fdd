"""Child processes that do not outlive the harness.

Agent shells, agent CLIs and verify commands run in their own process groups (so a
timeout can kill each whole group), which also means a SIGKILL of the harness would
leave them running, still editing the work tree. On Linux each such child asks the
kernel to kill it when the harness dies (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import ctypes
import signal
import sys

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """preexec_fn: SIGKILL this child when the process that started it dies (Linux only)."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
