"""Typed errors; each carries its exit code from the contract in docs/contracts.md.

Only the CLI turns them into a message and a process exit code.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

DONE = 0
TASK_FAILED = 1
USAGE = 2
BUSY = 3
BUDGET = 4
NOTHING_TO_DO = 5
BACKEND = 6
BLOCKED = 7


class HarnessError(Exception):
    """Base error; `exit_code` is what the process exits with."""

    exit_code = TASK_FAILED


class UsageError(HarnessError):
    """Bad arguments or a malformed file: nothing was changed."""

    exit_code = USAGE


class BusyError(HarnessError):
    """Another run holds the lock."""

    exit_code = BUSY


class BudgetError(HarnessError):
    """Mission cost or attempt cap reached."""

    exit_code = BUDGET


class NothingToDo(HarnessError):
    """`next` found no feature to work on."""

    exit_code = NOTHING_TO_DO


class BackendError(HarnessError):
    """The model backend or infrastructure failed after retries."""

    exit_code = BACKEND


class BlockedError(HarnessError):
    """The feature is blocked."""

    exit_code = BLOCKED


class SandboxError(HarnessError):
    """The role asks for a sandbox this machine cannot give: nothing ran unsandboxed."""

    exit_code = USAGE


class GitFailed(subprocess.CalledProcessError):
    """A git command the harness ran failed; the CLI says which, where and why (exit 2):
    a repository git cannot work in (an agent can break its `.git`) needs a person."""

    def __init__(self, result: subprocess.CompletedProcess, workdir: Path,
                 args: tuple[str, ...]) -> None:
        super().__init__(result.returncode, result.args, result.stdout, result.stderr)
        self.workdir, self.git_args = workdir, args

    def __str__(self) -> str:
        said = " ".join(str(self.stderr or self.stdout or "").split())[-600:]
        return (f"git {' '.join(self.git_args)} failed in {self.workdir} (exit "
                f"{self.returncode}): {said or 'no message'}; the harness runs no git there "
                "until it works: repair the repository (`git status` there shows what is "
                "wrong)")


def file_error(error: OSError) -> str | None:
    """One line for an OSError about a named file (a folder that is read-only, a file where
    a folder should be), for exit 2; None when it names no file and is a bug to report."""
    if error.filename is None:
        return None
    where = f"{error.filename}" + (f" -> {error.filename2}" if error.filename2 else "")
    return f"{where}: {error.strerror or error}; fix or move it, then try again"
