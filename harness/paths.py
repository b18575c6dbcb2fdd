"""Where things live: HARNESS_HOME, the state directory, the working directory, identity."""

from __future__ import annotations

import fcntl
import os
import shutil
import stat
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
    """Paths from options, then environment, then defaults (docs/contracts.md, "Where things
    live")."""
    home = harness_home()
    for flag, value in (("--state", state), ("--workdir", workdir)):
        if value == "":  # `--state "$STATE"` with STATE unset: not the default folder
            raise UsageError(f"{flag} is empty: give a folder, or leave the option out")
    work = Path(workdir or ".").resolve()
    if workdir is not None and not work.is_dir():
        raise UsageError(f"--workdir {workdir}: "
                         + ("not a folder" if work.exists() else "no such folder"))
    state_dir = Path(state or os.environ.get("HARNESS_STATE") or ".harness").resolve()
    return Paths(home=home, state=state_dir, workdir=work, identity=identity_dir())


def home_dir() -> Path:
    """The person's home folder; UsageError when none can be told (no HOME, and a uid that
    /etc/passwd does not know: a container's arbitrary uid under `env -i`)."""
    try:
        return Path.home()
    except (RuntimeError, KeyError):
        raise UsageError(f"cannot tell your home folder: HOME is not set and uid {os.getuid()} "
                         "has no passwd entry; set HOME (cron: HOME=... on the crontab line)"
                         ) from None


def default_identity_dir() -> Path:
    """`$XDG_DATA_HOME/autonomous-harness/identity`, else under `~/.local/share`: outside
    the tool's checkout, so a new clone of the tool keeps every lesson."""
    data = os.environ.get("XDG_DATA_HOME", "")
    if not os.path.isabs(data):  # the XDG spec: a relative value is ignored
        data = str(home_dir() / ".local" / "share")
    return Path(data) / "autonomous-harness" / "identity"


def identity_dir() -> Path:
    """Cross-mission memory: `$HARNESS_IDENTITY_DIR`, else the default above."""
    chosen = os.environ.get("HARNESS_IDENTITY_DIR")
    return Path(chosen).resolve() if chosen else default_identity_dir().resolve()


SHIPPED_IDENTITY = ("README.md",)  # what the checkout's identity/ holds as shipped


def move_checkout_identity(home: Path, identity: Path) -> list[str]:
    """Move lessons an earlier version kept in the checkout's `identity/` to `identity`,
    once; returns what to tell the person (nothing when there was nothing to move)."""
    old = home / "identity"
    try:
        names = sorted(n for n in os.listdir(old) if n not in SHIPPED_IDENTITY)
    except OSError:
        return []
    if not names or old.resolve() == identity:
        return []
    identity.mkdir(parents=True, exist_ok=True)
    moved, messages = [], []
    with open(identity.parent / ".identity-move.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two first runs at once move each file once
        for name in names:
            if not os.path.lexists(old / name):
                continue  # the other run moved it
            if os.path.lexists(identity / name):
                messages.append(f"{old / name} was not moved: {identity / name} exists; "
                                "merge the two by hand, then delete the first")
                continue
            shutil.move(str(old / name), str(identity / name))
            moved.append(name)
    if moved:
        messages.insert(0, f"moved cross-mission memory ({', '.join(moved)}) from the tool's "
                           f"checkout {old} to {identity} (set HARNESS_IDENTITY_DIR to keep it "
                           "elsewhere)")
    return messages


# the folders of state and identity whose files a command may read whole
STATE_FOLDERS = ("", "ledger", "curator", "memory", "archive", "locks", "roles", "templates",
                 "templates/partials")
IDENTITY_FOLDERS = ("", "archive")
SPECIAL = ((stat.S_ISFIFO, "a fifo (named pipe)"), (stat.S_ISSOCK, "a socket"),
           (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"))


def check_files(top: Path, folders: tuple[str, ...]) -> None:
    """UsageError naming the first entry of these folders of `top` that is neither a file nor
    a folder: a fifo or /dev/zero there would be read for ever, a symlink loop not at all."""
    for folder in folders:
        try:
            with os.scandir(top / folder) as entries:
                odd = [e.path for e in entries if not (e.is_file() or e.is_dir())]
        except OSError:  # no such folder (yet), or no folder at all: others say so
            continue
        for path in odd:
            try:
                mode = os.stat(path).st_mode
            except FileNotFoundError:
                continue  # a symlink leading nowhere: as if missing
            except OSError as e:
                raise UsageError(f"{path}: {e.strerror}; move it away") from None
            what = next((name for test, name in SPECIAL if test(mode)), "no regular file")
            raise UsageError(f"{path} is {what}, not a file; move it away")


def check_state(state: Path) -> Path:
    """`state` if it is an existing writable directory holding no fifo or device where a
    file goes; else a UsageError saying how to fix it."""
    if not state.is_dir():
        raise UsageError(
            f"state directory {state} "
            + ("is not a folder " if state.exists() else "does not exist ")
            + "(run `run.sh init` in the project, or pass --state / set HARNESS_STATE)"
        )
    if not os.access(state, os.W_OK | os.X_OK):
        raise UsageError(f"state directory {state} is not writable")
    _a_state_directory(state)
    check_files(state, STATE_FOLDERS)
    return state


# what every state directory holds once used (`run.sh init` writes them all)
STATE_MARKS = ("config.yaml", "features.json", "raw.md", "runs", "ledger")


def _a_state_directory(state: Path) -> None:
    """UsageError for a folder no command may take for a state directory: a project holding
    its `.harness` (`--state ~/proj`), or a folder of other files, whose MEMORY.md,
    summary.md or raw.md a run would write. An empty folder is a new one."""
    if any((state / mark).exists() for mark in STATE_MARKS):
        return
    if (state / ".harness").is_dir():
        raise UsageError(f"{state} is a project, not its state directory: give --state "
                         f"{state / '.harness'}")
    if next(state.iterdir(), None) is not None:
        raise UsageError(f"{state} is not a state directory (it holds none of "
                         f"{', '.join(STATE_MARKS)}): give the project's .harness, or run "
                         "`run.sh init`")


def check_identity(identity: Path) -> Path:
    """`identity` if it is a folder or not there yet (the curator makes it); else a
    UsageError: a file there would stop every mission sharing it."""
    if identity.exists() and not identity.is_dir():
        raise UsageError(f"identity folder {identity} is a file; move it away, or set "
                         "HARNESS_IDENTITY_DIR to a folder")
    check_files(identity, IDENTITY_FOLDERS)
    return identity
