"""A path in the agent's tree as the editor tool sees it: opened beneath the working
directory at each use (harness/agent/beneath.py), and checked where it really is."""

from __future__ import annotations

import errno
import os
import stat
import uuid
from collections.abc import Callable
from pathlib import Path

from harness.agent.beneath import open_beneath, real_path, relative_inside

MAX_CHARS = 16 * 1024 * 1024  # the most of a file the editor reads
LOOK = getattr(os, "O_PATH", os.O_RDONLY | os.O_NONBLOCK)  # opens a fifo without blocking


class Refused(Exception):
    """A path out of the agent's reach; the message says why."""


class TreeFile:
    """`rel` beneath `root`; `check(real)` raises Refused for a place out of reach."""

    def __init__(self, root: Path, rel: str, check: Callable[[Path], None]):
        self.root, self.rel, self.check = root, rel, check

    def open(self, rel: str, flags: int, no_symlinks: bool = False) -> int:
        root = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            try:
                fd = open_beneath(root, rel, flags, no_symlinks=no_symlinks)
            except OSError as e:
                # an absolute symlink (refused beneath) that may still stay inside: where it
                # leads now, then opened through no symlink at all, so a swap since fails
                inside = relative_inside(self.root, os.path.realpath(self.root / rel))
                if e.errno not in (errno.EXDEV, errno.ELOOP) or no_symlinks or inside is None:
                    raise
                fd = open_beneath(root, inside, flags, no_symlinks=True)
        finally:
            os.close(root)
        try:
            self.check(real_path(fd, self.root / rel))
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _mode(self) -> int | None:
        try:
            fd = self.open(self.rel, LOOK)
        except FileNotFoundError:
            return None
        try:
            return os.fstat(fd).st_mode
        finally:
            os.close(fd)

    def exists(self) -> bool:
        return self._mode() is not None

    def is_dir(self) -> bool:
        mode = self._mode()
        return mode is not None and stat.S_ISDIR(mode)

    def read_text(self) -> str:
        fd = self.open(self.rel, os.O_RDONLY | os.O_NONBLOCK)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise ValueError("not a regular file")
        with os.fdopen(fd, encoding="utf-8") as f:
            text = f.read(MAX_CHARS + 1)  # in the harness's memory: a sparse 40 GB file is free
        if len(text) > MAX_CHARS:
            raise ValueError(f"too big for the editor ({st.st_size:,} bytes, it reads at "
                             f"most {MAX_CHARS:,} characters): read or "
                             "change it with bash (head, sed -n, tail) instead")
        return text

    def write_text(self, text: str) -> None:
        """Replace the file (where it really is: a symlink inside the tree is followed) with
        `text`, through a temporary file and a rename in its opened folder."""
        rel = self.rel
        try:
            fd = self.open(rel, LOOK)
        except FileNotFoundError:
            folder = self._make_folder(os.path.dirname(rel))
        else:
            try:
                rel = os.path.relpath(real_path(fd, self.root / rel), self.root)
            finally:
                os.close(fd)
            # the folder it is in now, through no symlink: a swap since is refused (ELOOP)
            folder = self.open(os.path.dirname(rel) or ".", os.O_RDONLY | os.O_DIRECTORY,
                               no_symlinks=True)
        try:
            _replace_in(folder, os.path.basename(rel), text.encode())
        finally:
            os.close(folder)

    def _make_folder(self, rel: str) -> int:
        """The folder `rel` opened, made first where missing (as `mkdir -p`)."""
        done = "."
        for part in [p for p in rel.split("/") if p not in ("", ".")]:
            parent = self.open(done, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.mkdir(part, dir_fd=parent)
            except FileExistsError:
                pass
            finally:
                os.close(parent)
            done = os.path.join(done, part)
        return self.open(done, os.O_RDONLY | os.O_DIRECTORY)

    def listing(self, depth: int) -> list[str]:
        """What the folder holds, `depth` levels deep, hidden entries (and what is out of
        reach) left out; folders end in `/`."""
        fd = self.open(self.rel, os.O_RDONLY | os.O_DIRECTORY)
        try:
            return _list(fd, self.root / self.rel, "", depth, self.check)
        finally:
            os.close(fd)


def _list(fd: int, where: Path, prefix: str, depth: int,
          check: Callable[[Path], None]) -> list[str]:
    found = []
    for entry in os.scandir(fd):
        if entry.name.startswith("."):
            continue
        name = prefix + entry.name
        if not entry.is_dir(follow_symlinks=False):
            found.append(name)
            continue
        inner = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
        try:
            check(real_path(inner, where / entry.name))
        except Refused:
            os.close(inner)
            continue
        found.append(name + "/")
        try:
            if depth > 1:
                found += _list(inner, where / entry.name, name + "/", depth - 1, check)
        finally:
            os.close(inner)
    return found


def _replace_in(folder: int, name: str, data: bytes) -> None:
    try:
        mode = stat.S_IMODE(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        mode = 0o644
    tmp = f".{name}.{uuid.uuid4().hex[:8]}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode,
                 dir_fd=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=folder)
        except FileNotFoundError:
            pass
        raise
    os.fsync(folder)


def tree_check(root: Path, name: str, hidden: tuple[Path, ...] = ()) -> Callable[[Path], None]:
    """For TreeFile: Refused where `name` really is out of `root` (resolved), or in one of
    `hidden` lying inside it (the state, the identity folder, the harness's home)."""
    inner = [h for h in (p.resolve() for p in hidden) if h != root and h.is_relative_to(root)]

    def inside(real: Path) -> None:
        if not real.is_relative_to(root):
            raise Refused(f"{name} leads out of {root}")
        if any(real.is_relative_to(h) for h in inner):
            raise Refused(f"{name} leads into the harness's own folders (state, identity "
                          "or home)")

    return inside


def read_in_tree(root: Path, name: str, max_chars: int,
                 hidden: tuple[Path, ...] = ()) -> str | None:
    """At most `max_chars` + 1 characters from the start of `root`/`name`, a file the agent
    may have written: never read through a symlink out of `root` (AGENTS.md linked to
    ~/.ssh/id_rsa is not read) or into `hidden` (AGENTS.md -> .harness/env), never a fifo
    or device or folder; None where there is none."""
    root = root.resolve()
    try:
        fd = TreeFile(root, name, tree_check(root, name, hidden)).open(
            name, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, Refused):
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # a folder too: fdopen would refuse it
        os.close(fd)
        return None
    with os.fdopen(fd, encoding="utf-8", errors="replace") as f:
        return f.read(max_chars + 1)
