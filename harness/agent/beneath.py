"""Open a file beneath a folder, never leaving it, whatever an agent does to the tree meanwhile.

Checking a resolved path and then opening it races with an agent that swaps a folder for a
symlink in between. Here the kernel resolves and opens in one step: Linux's openat2 with
RESOLVE_BENEATH refuses any path, symlinks and `..` included, that would leave the folder
(symlinks inside it still work). Where openat2 is missing (macOS, Linux before 5.6, a
seccomp profile that refuses it) the path is walked one folder at a time with O_NOFOLLOW:
every symlink is then refused. `real_path` says where an open descriptor really is.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from harness import platform

RESOLVE_NO_MAGICLINKS, RESOLVE_NO_SYMLINKS, RESOLVE_BENEATH = 0x02, 0x04, 0x08

_openat2_works = platform.is_linux()


def relative_inside(root: Path, path: str) -> str | None:
    """`path` (absolute, or relative to `root`) as a relative path that stays inside `root`
    by its words alone, or None."""
    full = os.path.normpath(os.path.join(root, path))
    rel = os.path.relpath(full, root)
    return None if rel == ".." or rel.startswith("../") else rel


def open_beneath(dir_fd: int, rel: str, flags: int, mode: int = 0o644,
                 no_symlinks: bool = False) -> int:
    """A descriptor for `rel` opened beneath the folder `dir_fd`; OSError where it would
    leave it (ELOOP, EXDEV) or does not exist."""
    global _openat2_works
    if _openat2_works:
        resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | (RESOLVE_NO_SYMLINKS * no_symlinks)
        fd = platform.openat2(dir_fd, rel, flags | os.O_CLOEXEC,
                              mode if flags & os.O_CREAT else 0, resolve)
        if fd is not None:
            return fd
        _openat2_works = False  # not here: walk instead, refusing every symlink
    return _walk(dir_fd, rel, flags, mode)


def _walk(dir_fd: int, rel: str, flags: int, mode: int) -> int:
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise OSError(errno.EXDEV, "'..' is refused here", rel)
    fd = os.dup(dir_fd)
    try:
        for part in parts[:-1]:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = inner
        last = parts[-1] if parts else "."
        return os.open(last, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=fd)
    finally:
        os.close(fd)


def real_path(fd: int, fallback: Path) -> Path:
    """Where the open descriptor `fd` is (Linux's /proc); `fallback` where that cannot be
    read (the walk, which follows no symlink, opened `fallback` itself)."""
    path = platform.fd_path(fd)
    return Path(path) if path else fallback
