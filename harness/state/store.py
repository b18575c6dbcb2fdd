"""The only place that writes state files.

Every write is either atomic (temp file, fsync, rename) or a single locked
append, so a crash at any point leaves each file as it was or as it should be.
Locks are in `locks`.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
from collections.abc import Iterable
from pathlib import Path

# the locks live in `locks`; named here too, where every writer has always found them
from harness.state.locks import hold_lock, lock_holder, lock_path

__all__ = ["hold_lock", "lock_holder", "lock_path"]

# `note` imports this module and must start fast: hashlib and json are imported where used.


def sha256(data: bytes | str) -> str:
    """Hex sha256 of bytes or UTF-8 text."""
    import hashlib

    if isinstance(data, str):
        data = data.encode()
    return hashlib.sha256(data).hexdigest()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: str | bytes) -> None:
    """Replace `path` with `data` so readers see the old or the new file, never half.
    An OSError (a full disk, a read-only folder) names `path` and leaves it as it was."""
    if isinstance(data, str):
        data = data.encode()
    tmp = path.parent / f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        _fsync_dir(path.parent)
    except OSError as e:
        raise named(e, path) from None


def write_json(path: Path, obj: object) -> None:
    """Atomically write `obj` as indented JSON."""
    import json

    atomic_write(path, json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


def write_all(fd: int, data: bytes) -> None:
    """Write all of `data` to `fd` (os.write may write less than asked)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def locked_append(path: Path, text: str, lock: Path) -> None:
    """Append `text` in one write while holding `lock`, so concurrent lines never interleave."""
    with hold_lock(lock):
        append_lines(path, [text.encode()])


def append_lines(path: Path, chunks: Iterable[bytes], *, sync: bool = False) -> tuple[int, int]:
    """Append `chunks` as whole lines, the first in one write: after a crash's half line, with a
    newline before it; a write that fails (a full disk) is cut back off, so the file stays whole
    lines. The sizes before and after; `sync`: on disk first. Errors name `path`."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as e:
        raise named(e, path) from None
    try:
        size = os.fstat(fd).st_size
        chunks = iter(chunks)
        first = next(chunks, b"")
        if size and os.pread(fd, 1, size - 1) != b"\n":
            first = b"\n" + first  # a half line left by a crash must not swallow this one
        try:
            for chunk in itertools.chain([first], chunks):
                write_all(fd, chunk)
            if sync:
                os.fsync(fd)
        except OSError as e:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            raise named(e, path) from None
        return size, os.fstat(fd).st_size
    finally:
        os.close(fd)


DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM,
                         errno.EFBIG})  # what a full disk or a read-only folder raises


def named(error: OSError, path: Path) -> OSError:
    """`error`, naming `path` if it names no file (os.write and the like name none)."""
    if error.filename is not None:
        return error
    return type(error)(error.errno, error.strerror or str(error), str(path))


def write_record(path: Path, text: str) -> None:
    """Atomically write a record (run files, verdicts, memory), secrets redacted.

    Every record of the harness is written through this or `append_record`: the one
    place where redaction happens, so no writer can forget it.
    """
    from harness.state.redact import redact

    atomic_write(path, redact(text))


def append_record(path: Path, text: str, lock: Path | None) -> None:
    """Append a record line, secrets redacted; under `lock` when several processes write."""
    from harness.state.redact import redact

    data = redact(text)
    if lock is None:
        append_lines(path, [data.encode()])
    else:
        locked_append(path, data, lock)


class StreamRecord:
    """A record written as it arrives (a command's output): secrets redacted a line at a
    time (a line longer than LINE is redacted in pieces), at most `cap` bytes kept; past
    them `close` notes how many were dropped. Never holds more than a line in memory."""

    LINE = 65536

    def __init__(self, path: Path, cap: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.file = open(path, "wb")  # noqa: SIM115 - closed by `close`
        self.cap, self.kept, self.dropped = cap, 0, 0
        self.pending = b""

    def write(self, data: bytes) -> None:
        """Add `data` (bytes as the command wrote them)."""
        data = self.pending + data
        cut = data.rfind(b"\n") + 1
        if not cut and len(data) > self.LINE:
            cut = len(data)
        self.pending = data[cut:]
        if cut:
            self._keep(data[:cut])

    def _keep(self, data: bytes) -> None:
        from harness.state.redact import redact

        room = self.cap - self.kept
        if room <= 0:
            self.dropped += len(data)
            return
        text = redact(data.decode(errors="replace")).encode()[:room]
        try:
            self.file.write(text)
        except OSError:  # a full disk: the command's output is still drained, not kept
            self.cap = self.kept
            self.dropped += len(data)
            return
        self.kept += len(text)
        self.dropped += max(0, len(data) - room)

    def close(self) -> None:
        """Write what is pending and the note of what was dropped; fsync; close. A full disk
        leaves the file short, never the command's run failed."""
        try:
            if self.pending:
                self._keep(self.pending)
            if self.dropped:
                self.file.write(f"\n[... {self.dropped} more bytes of output not kept: "
                                f"this file keeps the first {self.cap} ...]\n".encode())
            self.file.flush()
            os.fsync(self.file.fileno())
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                self.file.close()


def read_tail(path: Path, max_lines: int, block: int = 65536) -> list[str]:
    """The last `max_lines` non-empty lines of `path`, reading from the end only."""
    if max_lines <= 0:
        return []
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return []
    with f:
        pos = f.seek(0, os.SEEK_END)
        data = b""
        while True:
            lines = [ln for ln in data.split(b"\n") if ln.strip()]
            if pos > 0 and lines:
                lines = lines[1:]  # the first line may be cut where the read began
            if pos == 0 or len(lines) >= max_lines:
                break
            step = min(block, pos)
            pos -= step
            f.seek(pos)
            data = f.read(step) + data
            block *= 2  # a line of 50 MB: a few reads, not one per 64 KiB, each split whole
    lines = [ln.decode(errors="replace") for ln in lines]
    return lines[-max_lines:]


def put_object(state: Path, data: str | bytes) -> str:
    """Store `data` by content in `<state>/objects/`; return its sha256."""
    if isinstance(data, str):
        data = data.encode()
    digest = sha256(data)
    path = state / "objects" / digest[:2] / digest
    if not path.exists():
        atomic_write(path, data)
    return digest


def get_object(state: Path, digest: str) -> bytes:
    """The content stored under `digest`; FileNotFoundError if it is missing."""
    return (state / "objects" / digest[:2] / digest).read_bytes()


def read_head(path: Path, size: int, *, encoding: str | None = None) -> bytes | str | None:
    """The first `size` bytes of `path` (or, with `encoding`, characters, bad bytes replaced):
    fewer if it is shorter; None if it is missing."""
    try:
        if encoding is None:
            with open(path, "rb") as f:
                return f.read(size)
        with open(path, encoding=encoding, errors="replace") as f:
            return f.read(size)
    except (FileNotFoundError, IsADirectoryError):
        return None


def count_lines(path: Path) -> int:
    """How many newline-ended lines `path` holds (0 if it is missing), read in blocks."""
    try:
        with open(path, "rb") as f:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    except FileNotFoundError:
        return 0
