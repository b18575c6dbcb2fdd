"""Locks: `flock` locks on files under `<state>/locks/`. The kernel drops them when the
holding process dies, so a dead holder's lock is taken over for free. Every wait is bounded
(`lock_wait`) and a lock file says who holds it (pid, command, since when), for the message
of whoever gives up waiting (exit 3).

`note` imports this module and must start fast.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import sys
import time
from pathlib import Path

from harness import platform
from harness.errors import BusyError, UsageError


def lock_path(state: Path, name: str) -> Path:
    """Where the lock file called `name` lives."""
    return state / "locks" / f"{name}.lock"


LOCK_WAIT = 30.0  # seconds a lock is waited for, unless $HARNESS_LOCK_WAIT says otherwise
# locks held across long work are waited for longer: a merge across the feature's `verify`
# (600 s by default), git across a worktree's checkout, the identity folder's across
# another mission's curator promoting and recording a big backlog
LONG_HELD = {"merge.lock": 3600.0, "git.lock": 600.0, ".identity.lock": 600.0,
             ".candidates.lock": 600.0}


def lock_wait(path: Path | None = None) -> float:
    """How long the lock at `path` is waited for: $HARNESS_LOCK_WAIT seconds, else its
    LONG_HELD time, else LOCK_WAIT."""
    value = os.environ.get("HARNESS_LOCK_WAIT", "").strip()
    if not value:
        return LONG_HELD.get(path.name, LOCK_WAIT) if path is not None else LOCK_WAIT
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds <= 86400:
        raise UsageError(f"$HARNESS_LOCK_WAIT is {value[:40]!r}; give the seconds a lock "
                         "is waited for, from 0 to 86400")
    return seconds


def _holder_text() -> str:
    """Who takes a lock, for the message of the next comer: pid, command, since when."""
    from harness.names import escape_controls

    argv = sys.argv or ["python"]
    # the command's first words only: a note's text is no business of a lock file
    command = " ".join([os.path.basename(argv[0]), *(w[:40] for w in argv[1:3])])
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return f"pid {os.getpid()} ({escape_controls(command)}) since {since}"


class hold_lock:  # noqa: N801 - used like a function: `with hold_lock(path):`
    """Hold an exclusive flock on `path`. Waits at most `lock_wait()` seconds (without
    `wait`, not at all), then raises BusyError naming the holder (`label`).

    A lock file deleted or replaced while it is waited for (or while it is held: `locks/`
    removed by hand) no longer excludes anyone, so the lock taken is checked to be the file
    at `path` still, and taken again if not. What must survive the whole folder going holds
    a second lock on something that stays (the curator: its state directory).
    """

    def __init__(self, path: Path, *, wait: bool = True, what: str = "") -> None:
        self.path, self.wait, self.what = path, wait, what
        self.fd = -1
        self.holder = ""

    def __enter__(self) -> hold_lock:
        give_up = time.monotonic() + lock_wait(self.path) if self.wait else 0.0
        delay = 0.001
        fd = self._open()
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES) or time.monotonic() >= give_up:
                    self._give_up(fd, e)
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
            else:
                if _is_at(fd, self.path):
                    break
            if not _is_at(fd, self.path):  # deleted or replaced: lock what is there now
                os.close(fd)
                fd = self._open()
        self.fd = fd
        self.holder = _holder_text()
        self._say(self.holder)
        return self

    def _say(self, text: str) -> None:
        # only words for the next comer's message: a full disk must not stop the lock
        with contextlib.suppress(OSError):
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, text.encode(), 0)

    def _open(self) -> int:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)

    def _give_up(self, fd: int, error: OSError) -> None:
        holder = os.pread(fd, 300, 0).decode(errors="replace").strip() or _holder_in_proc(fd)
        os.close(fd)
        if error.errno not in (errno.EAGAIN, errno.EACCES):
            raise unlockable(self.path, error)
        waited = f"; gave up after {lock_wait(self.path):g} s (set HARNESS_LOCK_WAIT to wait " \
                 "longer)" if self.wait else ""
        raise BusyError(f"busy: {self.what or self.path.name} is locked"
                        + (f" by {holder}" if holder else "") + f" ({self.path}){waited}")

    def label(self, text: str) -> None:
        """Say what the holder is doing (a run id), for the busy message of the next comer."""
        self._say(f"{self.holder}, {text}")

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)


def unlockable(path: Path, error: OSError) -> UsageError:
    """A folder where flock fails (NFS with no lock daemon: ENOLCK; a filesystem without
    locks): exit 2 naming the file, since no lock can be trusted there."""
    return UsageError(f"cannot lock {path}: {error.strerror or error} (a network folder "
                      f"without file locks?); the harness needs them in {path.parent}: keep "
                      "the state directory and the identity folder on a local disk")


def _holder_in_proc(fd: int) -> str:
    """Who holds an flock on the file of `fd` (the kernel says), for a holder that wrote no
    words into the lock file (not the harness, or a full disk): pid and command, or ''."""
    from harness.names import escape_controls

    holder = platform.flock_holder(fd)  # None without /proc (macOS)
    return f"pid {holder[0]} ({escape_controls(holder[1])})" if holder else ""


def _is_at(fd: int, path: Path) -> bool:
    """Whether the open file `fd` is the file at `path` still."""
    try:
        there = os.stat(path)
    except FileNotFoundError:
        return False
    here = os.fstat(fd)
    return (here.st_ino, here.st_dev) == (there.st_ino, there.st_dev)


def lock_holder(path: Path) -> str | None:
    """Who holds the lock at `path` now (its label), or None when nobody does."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return os.pread(fd, 200, 0).decode(errors="replace").strip() or "a live process"
    finally:
        os.close(fd)  # closing releases the probe's own flock
    return None


class hold_dir_lock:  # noqa: N801 - used like a function
    """Hold an exclusive flock on the directory `path` itself, without waiting: a lock that
    removing `locks/` by hand cannot take from its holder. BusyError says `what` holds it."""

    def __init__(self, path: Path, what: str) -> None:
        self.path, self.what = path, what
        self.fd = -1

    def __enter__(self) -> hold_dir_lock:
        fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno not in (errno.EAGAIN, errno.EACCES):
                raise unlockable(self.path, e) from None
            raise BusyError(f"busy: {self.what} is running (it holds {self.path})") from None
        self.fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)

