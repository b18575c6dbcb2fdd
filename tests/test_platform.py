"""The platform calls live in harness/platform.py, with fallbacks where the kernel has no
prctl or /proc (macOS), tested here on Linux by pretending to be another system."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import run_sh

from harness import platform
from harness.agent import procs, reaper
from harness.ops.checks import platform_check
from harness.state import runs

HARNESS = Path(__file__).resolve().parent.parent / "harness"


@pytest.fixture
def macos(monkeypatch: pytest.MonkeyPatch) -> None:
    """sys.platform says darwin; prctl would fail loudly if it were still called."""
    monkeypatch.setattr(sys, "platform", "darwin")

    def no_libc(*_args, **_kwargs):
        raise AssertionError("prctl called on a system without it")

    monkeypatch.setattr(platform.ctypes, "CDLL", no_libc)


def test_on_linux_the_kernel_calls_work() -> None:
    assert platform.is_linux() and platform.sandbox_note() is None
    assert platform.process_start(os.getpid()) is not None
    assert platform.process_start(2 ** 22 + 12345) is None  # no such process
    child = subprocess.Popen(["sleep", "5"])
    try:
        assert child.pid in platform.child_pids()
    finally:
        child.kill()
        child.wait()
    script = ("from harness import platform; import signal; "
              "print(platform.adopt_orphans(), platform.die_with_parent(signal.SIGTERM))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.stdout.split() == ["True", "True"]


def test_elsewhere_each_call_falls_back_without_prctl_or_proc(macos) -> None:
    assert not platform.is_linux()
    assert platform.die_with_parent(signal.SIGKILL) is False
    assert platform.adopt_orphans() is False
    assert platform.child_pids() == [] and platform.process_start(os.getpid()) is None
    procs.die_with_parent()  # a preexec_fn that now does nothing, and does not fail
    with reaper.reaping():  # adopts nothing and so stops nothing
        pass
    assert runs._alive(os.getpid(), "12345")  # a live pid counts when its start is unknown
    note = platform.sandbox_note()
    assert note is not None and "the sandbox is off" in note
    check = platform_check()
    assert check.ok and check.warn and "darwin has no bubblewrap" in check.detail


def test_open_files_are_found_and_opened_beneath_on_linux(tmp_path: Path) -> None:
    (tmp_path / "inside.txt").write_text("x")
    folder = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fd = platform.openat2(folder, "inside.txt", os.O_RDONLY, 0, 0x08)  # RESOLVE_BENEATH
        if fd is None:
            pytest.skip("this kernel has no openat2")
        assert platform.fd_path(fd) == str(tmp_path / "inside.txt")
        os.close(fd)
        with pytest.raises(OSError):
            platform.openat2(folder, "../outside", os.O_RDONLY, 0, 0x08)
    finally:
        os.close(folder)


def test_elsewhere_no_openat2_and_macos_names_an_open_file(macos, tmp_path: Path,
                                                           monkeypatch) -> None:
    assert platform.openat2(0, "x", os.O_RDONLY, 0, 0x08) is None
    monkeypatch.setattr(platform.fcntl, "fcntl",
                        lambda fd, cmd, buf: b"/Users/me/proj/a.txt" + bytes(len(buf) - 20))
    assert platform.fd_path(3) == "/Users/me/proj/a.txt"
    assert platform.name() == "darwin"


def test_an_flock_holder_is_named_from_proc_on_linux_only(tmp_path: Path, monkeypatch) -> None:
    lock = tmp_path / "x.lock"
    lock.write_text("")
    holder = subprocess.Popen(["flock", str(lock), "sleep", "5"])
    try:
        fd = os.open(lock, os.O_RDONLY)
        deadline = time.time() + 5
        while platform.flock_holder(fd) is None and time.time() < deadline:
            time.sleep(0.05)
        found = platform.flock_holder(fd)
        assert found is not None and "sleep 5" in found[1]
        monkeypatch.setattr(sys, "platform", "darwin")
        assert platform.flock_holder(fd) is None  # no /proc/locks: the holder goes unnamed
        os.close(fd)
    finally:
        holder.kill()
        holder.wait()


def test_no_platform_call_outside_the_platform_module() -> None:
    for path in HARNESS.rglob("*.py"):
        if path.name == "platform.py":
            continue
        text = path.read_text()
        for needle in ("prctl(", "sys.platform", "/proc/self", "/proc/{", "/proc/locks",
                   "import ctypes"):
            assert needle not in text, f"{path}: {needle} belongs in harness/platform.py"


def test_doctor_says_what_the_platform_gives(project: Path) -> None:
    result = run_sh("doctor", "--no-cron", cwd=project)
    assert "ok    platform: Linux: processes stop with their run" in result.stdout

