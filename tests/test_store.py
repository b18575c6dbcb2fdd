import multiprocessing
import os
import time
from pathlib import Path

import pytest

from harness.errors import BusyError
from harness.state import store
from harness.state.store import (
    atomic_write,
    get_object,
    hold_lock,
    locked_append,
    put_object,
    read_tail,
    sha256,
)


def test_atomic_write_replaces_whole_file_and_leaves_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "a" / "f.txt"
    atomic_write(path, "one\n")
    atomic_write(path, "two\n")
    assert path.read_text() == "two\n"
    assert [p.name for p in path.parent.iterdir()] == ["f.txt"]


def test_atomic_write_failure_keeps_old_content(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    atomic_write(path, "old")
    with pytest.raises(TypeError):
        atomic_write(path, 123)  # type: ignore[arg-type]
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_read_tail_reads_last_lines_across_blocks(tmp_path: Path) -> None:
    path = tmp_path / "log"
    path.write_text("".join(f"line {i}\n" for i in range(1000)) + "\n\n")
    assert read_tail(path, 3, block=16) == ["line 997", "line 998", "line 999"]
    assert read_tail(path, 5000, block=64)[:2] == ["line 0", "line 1"]
    assert read_tail(tmp_path / "missing", 3) == []
    assert read_tail(path, 0) == []


def test_read_tail_reads_a_line_of_megabytes_once(tmp_path: Path) -> None:
    """Each block read re-joined and re-split all read so far: a transcript line of 40 MB
    (an agent's file written through the editor) took seconds per `watch` frame."""
    path = tmp_path / "transcript.jsonl"
    path.write_bytes(b'{"input": "' + b"x" * 40_000_000 + b'"}\n{"turn": 2}\n')
    began = time.monotonic()
    lines = read_tail(path, 40)
    assert time.monotonic() - began < 3
    assert len(lines) == 2 and len(lines[0]) == 40_000_013 and lines[1] == '{"turn": 2}'


def test_read_tail_reads_a_huge_line_in_few_reads(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A 50 MB line a person pasted into raw.md took every worker run 28 s: read back one
    64 KiB block at a time, the whole tail joined and split again after each (quadratic)."""
    path = tmp_path / "raw.md"
    path.write_bytes(b"first\n" + b"y" * 20_000_000 + b"\nlast\n")
    reads = []

    class Counted:
        def __init__(self, f):
            self.f = f

        def __getattr__(self, name):
            return getattr(self.f, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def read(self, n):
            reads.append(n)
            return self.f.read(n)

    monkeypatch.setattr(store, "open", lambda p, mode: Counted(open(p, mode)), raising=False)
    lines = read_tail(path, 2)
    assert lines[0] == "y" * 20_000_000 and lines[1] == "last"
    assert len(reads) < 20


def test_read_tail_keeps_a_half_written_last_line(tmp_path: Path) -> None:
    path = tmp_path / "log"
    path.write_text("a\nb\nhalf")
    assert read_tail(path, 2) == ["b", "half"]


def test_objects_round_trip_by_content(tmp_path: Path) -> None:
    digest = put_object(tmp_path, "hello")
    assert digest == sha256("hello") == sha256(b"hello")
    assert put_object(tmp_path, b"hello") == digest
    assert get_object(tmp_path, digest) == b"hello"


def test_lock_without_wait_is_busy_while_held(tmp_path: Path) -> None:
    lock = tmp_path / "locks" / "x.lock"
    with hold_lock(lock, wait=False):
        with pytest.raises(BusyError, match=f"pid {os.getpid()}"):
            with hold_lock(lock, wait=False, what="x"):
                pass
    with hold_lock(lock, wait=False):
        pass


def _hold_then_die(lock: str, ready) -> None:
    with hold_lock(Path(lock)):
        ready.set()
        os._exit(0)  # dies holding the lock, as a killed process would


def test_lock_of_a_dead_process_is_taken_over(tmp_path: Path) -> None:
    lock = tmp_path / "dead.lock"
    ready = multiprocessing.Event()
    p = multiprocessing.Process(target=_hold_then_die, args=(str(lock), ready))
    p.start()
    p.join()
    assert ready.is_set()
    with hold_lock(lock, wait=False):
        pass


def _append_many(path: str, lock: str, n: int, tag: int) -> None:
    for i in range(n):
        locked_append(Path(path), f"writer {tag} line {i} " + "x" * 200 + "\n", Path(lock))


def test_locked_appends_from_processes_never_interleave(tmp_path: Path) -> None:
    path, lock = tmp_path / "raw.md", tmp_path / "raw.lock"
    procs = [multiprocessing.Process(target=_append_many, args=(str(path), str(lock), 200, t))
             for t in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    lines = path.read_text().splitlines()
    assert len(lines) == 1200
    assert len(set(lines)) == 1200
    assert all(line.endswith("x" * 200) for line in lines)
