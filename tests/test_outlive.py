"""Nothing of a run outlives it: the harness killed with SIGKILL in the middle of a tool call
that started long children leaves no process of the run behind, with or without the sandbox.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import HARNESS_VARS, RUN_SH

from harness.agent.sandbox import bwrap_problem

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reading processes' environments needs Linux's /proc")
LONG_CHILDREN = ("- tools: [{name: bash, input: {command: "
                 "'sleep 300 & setsid sleep 300 & touch started; sleep 300'}}]\n")


def run_processes(marker: str) -> list[int]:
    """Processes whose environment holds `marker` (the run's HARNESS_STATE=...)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue  # gone meanwhile, or not ours to read
        if marker.encode() in environ and state != "Z":
            found.append(int(entry))
    return found


def wait_until(check, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


@pytest.mark.parametrize("sandbox", ["none", "bwrap"])
def test_a_sigkilled_harness_leaves_no_process_of_the_run(project: Path, tmp_path: Path,
                                                          sandbox: str) -> None:
    if sandbox == "bwrap" and (problem := bwrap_problem()):
        pytest.skip(f"no bubblewrap sandbox here: {problem}")
    script = tmp_path / "long.yaml"
    script.write_text(LONG_CHILDREN)
    marker = f"HARNESS_STATE={project / '.harness'}"
    env = {k: v for k, v in os.environ.items() if k not in HARNESS_VARS or
           k == "HARNESS_IDENTITY_DIR"}
    proc = subprocess.Popen([str(RUN_SH), "worker", "F-004", "--backend", "scripted",
                             "--script", str(script), "--sandbox", sandbox], cwd=project,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        started = wait_until(lambda: (project / "started").exists()
                             and len(run_processes(marker)) >= 3, 60)
        assert started, f"the tool call never started its children: {proc.poll()}"
        os.kill(proc.pid, signal.SIGKILL)  # the harness alone, not its group
        proc.wait()
        assert wait_until(lambda: not run_processes(marker), 10), [
            Path(f"/proc/{pid}/cmdline").read_bytes() for pid in run_processes(marker)]
    finally:
        for pid in run_processes(marker):
            os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
