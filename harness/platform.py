"""What differs between Linux and macOS, in one place.

On Linux the kernel keeps an agent's processes from outliving the harness (prctl:
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER), /proc tells a process's children and start time
and where an open file is, openat2 opens a path without leaving a folder, and bubblewrap can
sandbox a role. Elsewhere (macOS) each call here does without and says so by what it
returns (False, [] or None); its callers then fall back: a child is not killed with its
parent, a detached process is not adopted, a reused pid is not told from the run that held
it, a path is walked one folder at a time, and the sandbox is off (`doctor` says so).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import sys
from pathlib import Path

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
SYS_OPENAT2 = 437  # one number on every Linux architecture
F_GETPATH = 50  # macOS's fcntl for the path of an open descriptor


def is_linux() -> bool:
    return sys.platform.startswith("linux")


def name() -> str:
    """The system, as Python names it (`linux`, `darwin`)."""
    return sys.platform


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64),
                ("resolve", ctypes.c_uint64)]


def openat2(dir_fd: int, rel: str, flags: int, mode: int, resolve: int) -> int | None:
    """Linux's openat2: a descriptor, or OSError; None where the system has no openat2 (not
    Linux, a kernel before 5.6, a seccomp profile that refuses it)."""
    if not is_linux():
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    how = _OpenHow(flags, mode, resolve)
    fd = libc.syscall(SYS_OPENAT2, dir_fd, os.fsencode(rel), ctypes.byref(how),
                      ctypes.sizeof(how))
    if fd >= 0:
        return fd
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EPERM):
        return None
    raise OSError(err, os.strerror(err), rel)


def fd_path(fd: int) -> str | None:
    """Where the open descriptor `fd` is (Linux's /proc, macOS's F_GETPATH); None if unknown."""
    try:
        if is_linux():
            return os.readlink(f"/proc/self/fd/{fd}")
        if sys.platform == "darwin":
            return fcntl.fcntl(fd, F_GETPATH, bytes(1024)).rstrip(b"\0").decode()
    except OSError:
        return None
    return None


def _prctl(option: int, value: int) -> bool:
    if not is_linux():
        return False
    return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0


def die_with_parent(signum: int) -> bool:
    """Ask for `signum` when the parent dies; False where the kernel cannot (not Linux)."""
    return _prctl(PR_SET_PDEATHSIG, signum)


def adopt_orphans() -> bool:
    """Become the reaper of descendants' orphans; False where unsupported (not Linux)."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1)


def child_pids() -> list[int]:
    """This process's children, from /proc (every thread's list); [] without /proc."""
    pids: list[int] = []
    if not is_linux():
        return pids
    with contextlib.suppress(OSError):
        for tid in os.listdir("/proc/self/task"):
            with contextlib.suppress(OSError), open(f"/proc/self/task/{tid}/children") as f:
                pids += [int(p) for p in f.read().split()]
    return pids


def process_start(pid: int) -> str | None:
    """The kernel's start time of `pid` (to tell a live process from a reused pid); None
    when it cannot be read (no such process, or no /proc)."""
    if not is_linux():
        return None
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            stat = f.read()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def sandbox_note() -> str | None:
    """Why no role can be sandboxed on this system, or None where bwrap can exist."""
    if is_linux():
        return None
    return (f"{sys.platform} has no bubblewrap: the sandbox is off, so a role's commands run "
            "with all your user can reach (a role with `sandbox: bwrap` is refused), and a "
            "process an agent detaches is not stopped with its run")


def flock_holder(fd: int) -> tuple[str, str] | None:
    """The pid and command line of a process holding an flock on the file of `fd`, from
    Linux's /proc/locks; None where unknown (no holder, or no /proc)."""
    if not is_linux():
        return None
    st = os.fstat(fd)
    ident = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks") as locks:
            pids = [p[4] for p in map(str.split, locks)
                    if len(p) > 5 and p[1] == "FLOCK" and p[5] == ident]
        if not pids:
            return None
        with open(f"/proc/{pids[0]}/cmdline", "rb") as f:
            command = f.read(200).replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return None
    return pids[0], command


def git_at_work(folder: Path) -> tuple[str, str] | None:
    """The pid and command line of a live `git` working in `folder` (its current directory
    there or below), from Linux's /proc; None where there is none, or no /proc to tell."""
    if not is_linux():
        return None
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as f:
                if f.read().strip() != "git":
                    continue
            cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                command = f.read(200).replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue  # gone, or not ours to read
        if cwd == folder or folder in cwd.parents:
            return pid, command
    return None
