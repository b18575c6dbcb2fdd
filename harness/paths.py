"""Where things live: HARNESS_HOME, the state directory, the working directory, identity."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from harness.errors import UsageError


@dataclass(frozen=True)
class Paths:
    """The four places a run reads and writes."""

    home: Path  # holds run.sh, roles/, templates/, identity/
    state: Path  # one mission's state: plan, memory, runs
    workdir: Path  # where the agent works
    identity: Path  # cross-mission memory (L4)


def harness_home() -> Path:
    """$HARNESS_HOME, else the folder above the installed package."""
    env = os.environ.get("HARNESS_HOME")
    return Path(env).resolve() if env else Path(__file__).resolve().parent.parent


def resolve_paths(state: str | None = None, workdir: str | None = None) -> Paths:
    """Paths from options, then environment, then defaults (DESIGN.md, Paths)."""
    home = harness_home()
    work = Path(workdir or ".").resolve()
    state_dir = Path(state or os.environ.get("HARNESS_STATE") or ".harness").resolve()
    identity = Path(os.environ.get("HARNESS_IDENTITY_DIR") or home / "identity").resolve()
    return Paths(home=home, state=state_dir, workdir=work, identity=identity)


def check_state(state: Path) -> Path:
    """`state` if it is an existing writable directory; else a UsageError saying how to fix it."""
    if not state.is_dir():
        raise UsageError(
            f"state directory {state} does not exist "
            "(run `run.sh init` in the project, or pass --state / set HARNESS_STATE)"
        )
    if not os.access(state, os.W_OK | os.X_OK):
        raise UsageError(f"state directory {state} is not writable")
    return state
