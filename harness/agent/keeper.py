"""`python -m harness.agent.keeper HARNESS_PID -- COMMAND...`: run COMMAND, and stop all it
started when the harness dies or asks.

Without the sandbox's PID namespace, a harness killed with SIGKILL would leave its shell's
children running: PR_SET_PDEATHSIG kills only the process that asked for it, and the children
of a dead process are handed to init. The keeper sits between the harness and the command. It
is a child subreaper (every orphan of the command's tree becomes its child), asks the kernel
for STOP when the harness dies, and on STOP, or when the command exits, kills everything left
under it. What can still escape is in the README ("Nothing outlives the run").
"""

from __future__ import annotations

import os
import signal
import sys

from harness import platform
from harness.agent.procs import STOP, die_with_parent
from harness.agent.reaper import adopt_orphans, stop_leftovers

ROUNDS = 100  # each round kills the keeper's children; their orphans are next round's


class _Stopped(Exception):
    pass


def _raise_stopped(_signum: int, _frame: object) -> None:
    raise _Stopped


def _pass(_signum: int, _frame: object) -> None:
    """SIGTERM to the group is for the command (an agent CLI's graceful exit), not for us."""


def main(argv: list[str]) -> int:
    """Run the command after `--`; the exit code is its own, or 128 + the signal."""
    harness, command = int(argv[0]), argv[argv.index("--") + 1:]
    signal.signal(STOP, _raise_stopped)
    signal.signal(signal.SIGTERM, _pass)  # a handler, not SIG_IGN: exec resets it
    try:
        adopt_orphans()
        platform.die_with_parent(STOP)
        if os.getppid() != harness:  # it died before we asked
            return 128 + STOP
        child = _spawn(command)
        _let_go_of_streams()
        return _wait_for(child)
    except _Stopped:
        return 128 + STOP
    finally:
        signal.signal(STOP, signal.SIG_IGN)
        stop_leftovers(ROUNDS)


def _spawn(command: list[str]) -> int:
    pid = os.fork()
    if pid == 0:
        try:
            signal.signal(STOP, signal.SIG_DFL)
            die_with_parent()  # a killed keeper takes the command with it
            os.execvp(command[0], command)
        except BaseException as e:
            os.write(2, f"harness keeper: cannot run {command[0]}: {e}\n".encode())
        os._exit(127)
    return pid


def _let_go_of_streams() -> None:
    """Only the command holds the pipes now: the harness sees their end when it exits."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)


def _wait_for(child: int) -> int:
    """Reap orphans until the command exits; its exit code (128 + N for signal N)."""
    while True:
        pid, status = os.wait()
        if pid == child:
            code = os.waitstatus_to_exitcode(status)
            return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
