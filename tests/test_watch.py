"""`run.sh watch`: the runs in progress read from disk, through real run.sh subprocesses: a
scripted worker held inside its second turn's shell call, then no runs at all; one frame
for a script or a pipe, a refreshing table in a terminal (a pty) until Ctrl-C."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import RUN_SH, run_sh

HELD = ("- text: looking around\n"
        "  tools: [{name: bash, input: {command: 'echo hi'}}]\n"
        "  cost_usd: 0.0125\n"
        "- tools: [{name: bash, input: {command: 'while [ ! -e go ]; do sleep 0.1; done'}}]\n"
        "  cost_usd: 0.01\n"
        "- tools: [{name: finish, input: {summary: done}}]\n")


def live(project: Path) -> list[dict]:
    result = run_sh("watch", "--json", cwd=project)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture
def held_worker(project: Path, tmp_path: Path) -> Iterator[subprocess.Popen]:
    """A worker on F-004 whose second turn waits in the shell until `go` exists."""
    script = tmp_path / "held.yaml"
    script.write_text(HELD)
    worker = subprocess.Popen([str(RUN_SH), "worker", "F-004", "--backend", "scripted",
                               "--script", str(script)], cwd=project, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not any("sleep" in r["last_call"] for r in live(project)):
        assert worker.poll() is None, worker.communicate()
        assert time.monotonic() < deadline, "the worker never reached its second turn"
        time.sleep(0.2)
    try:
        yield worker
    finally:
        (project / "go").touch()
        worker.wait(timeout=60)


def test_watch_shows_a_run_in_progress_then_none(project: Path,
                                                 held_worker: subprocess.Popen) -> None:
    (run,) = live(project)
    assert run["run_id"].endswith("-worker-F-004") and run["role"] == "worker"
    assert run["feature"] == "F-004" and run["turns"] == 2 and run["cost_usd"] == 0.0225
    assert run["last_call"] == "bash: $ while [ ! -e go ]; do sleep 0.1; done (running)"
    assert run["seconds"] >= 0

    shown = run_sh("watch", "--once", cwd=project)
    assert shown.returncode == 0, shown.stderr
    assert "textstats: 1 run in progress" in shown.stdout
    row = next(line for line in shown.stdout.splitlines() if run["run_id"] in line)
    for cell in ("worker", "F-004", " 2 ", "$0.0225", "bash: $ while [ ! -e go ]"):
        assert cell in row, cell

    (project / "go").touch()
    assert held_worker.wait(timeout=60) == 0, held_worker.communicate()
    assert live(project) == []
    piped = run_sh("watch", cwd=project)  # stdout is a pipe: one frame, then exit
    assert piped.returncode == 0 and "0 runs in progress" in piped.stdout
    assert "no runs in progress" in piped.stdout and run["run_id"] not in piped.stdout


def test_watch_with_no_runs_and_bad_input(project: Path, tmp_path: Path) -> None:
    assert live(project) == []
    once = run_sh("watch", "--once", cwd=project)
    assert once.returncode == 0 and "no runs in progress" in once.stdout
    bad = run_sh("watch", "--interval", "0", cwd=project)
    assert bad.returncode == 2 and "'--interval'" in bad.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    missing = run_sh("watch", "--once", cwd=elsewhere)
    assert missing.returncode == 2 and "state directory" in missing.stderr


def read_pty(fd: int, seconds: float, frames: int = 0, title: bytes = b"runs in progress") -> bytes:
    """What the terminal shows within `seconds`, or until `frames` tables were drawn (each
    `title` seen is one)."""
    out, end = b"", time.monotonic() + seconds
    while time.monotonic() < end and (not frames or out.count(title) < frames):
        if select.select([fd], [], [], 0.1)[0]:
            try:
                data = os.read(fd, 65536)
            except OSError:  # the other end closed
                break
            if not data:
                break
            out += data
    return out


def test_watch_refreshes_in_a_terminal_until_ctrl_c(project: Path) -> None:
    main, child = pty.openpty()
    watcher = subprocess.Popen([str(RUN_SH), "watch", "--interval", "0.3"], cwd=project,
                               stdin=child, stdout=child, stderr=child, start_new_session=True)
    os.close(child)
    try:
        shown = read_pty(main, 30, frames=3)
        watcher.send_signal(signal.SIGINT)
        shown += read_pty(main, 2)
        assert watcher.wait(timeout=30) == 0
    finally:
        if watcher.poll() is None:
            watcher.kill()
        os.close(main)
    assert shown.count(b"0 runs in progress") >= 3  # redrawn, not printed once
    assert b"Traceback" not in shown


HOSTILE = ("- tools: [{name: bash, input: {command: \"until [ -e go ]; do sleep .1; done "
           "#[/n] [b]x[/] \\e]0;PW\\a\"}}]\n"
           "- tools: [{name: finish, input: {summary: done}}]\n")


def test_what_an_agent_wrote_neither_breaks_nor_drives_the_watch(project: Path,
                                                                   tmp_path: Path) -> None:
    script = tmp_path / "hostile.yaml"
    script.write_text(HOSTILE)
    worker = subprocess.Popen([str(RUN_SH), "worker", "F-004", "--backend", "scripted",
                               "--script", str(script)], cwd=project, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    main, child = pty.openpty()
    try:
        deadline = time.monotonic() + 60
        while not any("[/n]" in r["last_call"] for r in live(project)):
            assert worker.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        once = run_sh("watch", "--once", cwd=project)  # markup in a cell: no MarkupError
        assert once.returncode == 0, once.stderr
        assert "#[/n] [b]x[/] \\u001b]0;PW\\u0007" in once.stdout
        watcher = subprocess.Popen([str(RUN_SH), "watch", "--interval", "0.3"], cwd=project,
                                   stdin=child, stdout=child, stderr=child,
                                   start_new_session=True, env={**os.environ, "COLUMNS": "250"})
        shown = read_pty(main, 30, frames=2, title=b"1 run in progress")
        watcher.send_signal(signal.SIGINT)
        shown += read_pty(main, 2)
        assert watcher.wait(timeout=30) == 0, shown
    finally:
        (project / "go").touch()
        worker.wait(timeout=60)
        os.close(child)
        os.close(main)
    assert b"Traceback" not in shown and b"#[/n] [b]x[/]" in shown
    assert b"\x1b]0;PW" not in shown  # the agent's escape is shown, not obeyed
    assert b"\\u001b[" not in shown  # the table's own escapes reach the terminal as such
    assert b"\x1b[" in shown


@pytest.mark.parametrize("interval", ["nan", "inf", "1e300"])
def test_an_interval_no_clock_can_sleep_is_exit_2(project: Path, interval: str) -> None:
    bad = run_sh("watch", "--interval", interval, cwd=project)
    assert bad.returncode == 2 and "'--interval'" in bad.stderr, bad.stdout + bad.stderr


@pytest.mark.slow  # one run.sh run per case: CI runs them all (HARNESS_SLOW=1)
@pytest.mark.parametrize("so_far", ['{"turns": "x"}', '{"turns": 1e999}', '{"turns": [1]}'])
def test_a_damaged_transcript_of_a_run_in_progress_is_shown_not_a_crash(
        project: Path, held_worker: subprocess.Popen, so_far: str) -> None:
    (run,) = (project / ".harness" / "runs").iterdir()
    with (run / "transcript.jsonl").open("a") as transcript:
        transcript.write('{"type": "model_turn", "so_far": ' + so_far + '}\n')
    (shown,) = live(project)
    assert shown["run_id"] == run.name and shown["turns"] == 0
    once = run_sh("watch", "--once", cwd=project)
    assert once.returncode == 0 and run.name in once.stdout, once.stderr
