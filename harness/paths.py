"""Where things live: HARNESS_HOME, the state directory, the working directory, identity."""

from __future__ import annotations

import os
from collections import namedtuple
from pathlib import Path

from harness.errors import UsageError


class Paths(namedtuple("Paths", "home state workdir identity")):
    """The four places a run reads and writes, all absolute.

    home: run.sh, roles/, templates/, identity/; state: one mission's plan, memory and runs;
    workdir: where the agent works; identity: cross-mission memory (L4).
    """

    __slots__ = ()


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


def check_identity(identity: Path) -> Path:
    """`identity` if it is a folder or not there yet (the curator makes it); else a
    UsageError: a file there would stop every mission sharing it."""
    if identity.exists() and not identity.is_dir():
        raise UsageError(f"identity folder {identity} is a file; move it away, or set "
                         "HARNESS_IDENTITY_DIR to a folder")
    return identity
