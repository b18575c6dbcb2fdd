"""Faults: real runs killed with SIGKILL at random points leave every state file parseable,
show up as interrupted, and never stop the next run from taking over.
"""

import json
import os
import random
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from conftest import EXAMPLE, RUN_SH, SLOW, git_init, run_sh

from harness.state.memory import parse_entry
from harness.state.plan import load_plan

# in all, split over two lanes: 200 with HARNESS_SLOW=1 (about a minute on two cores), else 30
KILLS = int(os.environ.get("HARNESS_FAULT_KILLS", "200" if SLOW else "30"))
PROGRESS = re.compile(r"^\S+Z \S+ \S+ \S+ \S+ exit=-?\d+ cost=\$\d+\.\d{4}$")
WORK = """
- tools:
    - {name: bash, input: {command: "sleep 0.1; echo step >> work.log"}}
    - name: str_replace_based_edit_tool
      input: {command: create, path: out.txt, file_text: "x\\n"}
    - {name: note, input: {kind: TRICK, text: "the fault test writes out.txt"}}
- tools:
    - {name: bash, input: {command: "sleep 0.1; date >> work.log"}}
    - {name: note, input: {kind: "-", text: "second turn of the fault test"}}
- tools: [{name: finish, input: {summary: done}}]
"""
JUDGE = """
- tools:
    - {name: bash, input: {command: "sleep 0.1; cat out.txt"}}
    - {name: verdict, input: {verdict: fail, reason: "fault test verdict"}}
"""


def make_lane(root: Path) -> Path:
    project = root / "project"
    project.mkdir(parents=True)
    shutil.copytree(EXAMPLE, project / ".harness")
    (project / ".harness" / "config.yaml").write_text("max_attempts: 100000\nstuck_after: 100000\n")
    return git_init(project)


def role_args(n: int, scripts: Path) -> list[str]:
    if n % 3 == 2:
        return ["validator", "F-004", "--backend", "scripted", "--script", str(scripts / "j.yaml")]
    return ["worker", "F-004", "--backend", "scripted", "--script", str(scripts / "w.yaml")]


def check_every_file(state: Path) -> None:
    """Every state file parses; a line log may only end in a half line the crash left."""
    load_plan(state)
    if (state / "spend.json").exists():
        json.loads((state / "spend.json").read_text())
    for line in (state / "raw.md").read_text().splitlines():
        assert parse_entry(line) or line.startswith("this line was pasted by hand"), line
    for line in (state / "progress.log").read_text().splitlines():
        assert PROGRESS.match(line), line
    for path in state.glob("ledger/*.jsonl"):
        for line in path.read_text().splitlines():
            json.loads(line)
    for run in state.glob("runs/*"):
        manifest = json.loads((run / "manifest.json").read_text()) if (
            run / "manifest.json").exists() else None
        transcript = run / "transcript.jsonl"
        if transcript.exists():
            lines = transcript.read_text().splitlines()
            complete = lines if transcript.read_text().endswith("\n") else lines[:-1]
            if manifest and manifest.get("status") != "started":
                assert complete == lines, f"finished run {run.name} has a half transcript line"
            for line in complete:
                json.loads(line)


def kill_lane(project: Path, scripts: Path, kills: int, seed: int, killed: list[str]) -> None:
    rng = random.Random(seed)
    state = project / ".harness"
    # One whole run first, timed on this machine, so kill points spread over a run's length.
    started = time.monotonic()
    subprocess.run([str(RUN_SH), *role_args(0, scripts)], cwd=project, capture_output=True)
    span = time.monotonic() - started
    for n in range(kills):
        before = set(p.name for p in state.glob("runs/*"))
        proc = subprocess.Popen([str(RUN_SH), *role_args(n, scripts)], cwd=project,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        if rng.random() < 0.2:
            time.sleep(rng.uniform(0.0, span))  # anywhere, start-up included
        else:
            # inside the run: wait for its record, then a random point in the rest of it
            # (waiting on the record, not on a clock, holds on a loaded machine too)
            while proc.poll() is None and not any(
                    (state / "runs" / name / "manifest.json").exists()
                    for name in {p.name for p in state.glob("runs/*")} - before):
                time.sleep(0.005)
            time.sleep(rng.uniform(0.0, span / 2))
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        if proc.returncode == -signal.SIGKILL:
            killed.extend(sorted(set(p.name for p in state.glob("runs/*")) - before))


def test_sigkill_at_random_points_loses_nothing(tmp_path: Path) -> None:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "w.yaml").write_text(WORK)
    (scripts / "j.yaml").write_text(JUDGE)
    lanes = []
    for i in range(2):
        lanes.append(make_lane(tmp_path / f"lane{i}"))
    killed: list[list[str]] = [[], []]
    threads = [threading.Thread(target=kill_lane, args=(lane, scripts, KILLS // 2, i, killed[i]))
               for i, lane in enumerate(lanes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for lane, lane_killed in zip(lanes, killed, strict=True):
        state = lane / ".harness"
        check_every_file(state)
        status = json.loads(run_sh("status", "--json", cwd=lane).stdout)
        started = {m.parent.name for m in state.glob("runs/*/manifest.json")
                   if json.loads(m.read_text())["status"] == "started"}
        assert set(status["interrupted"]) == started and not status["running"]
        assert started <= set(lane_killed)
        # the next run takes over whatever the dead ones held, and finishes its job
        after = run_sh(*role_args(0, scripts), cwd=lane)
        assert after.returncode == 0, after.stderr
        check_every_file(state)
        assert subprocess.run(["git", "status", "--porcelain"], cwd=lane, capture_output=True,
                              text=True).stdout == ""
    assert sum(len(k) for k in killed) > KILLS // 10  # the kills did land inside runs


def test_an_agent_shell_dies_with_a_killed_harness(project: Path, tmp_path: Path) -> None:
    script = tmp_path / "slow.yaml"
    script.write_text("- tools: [{name: bash, input: {command: "
                      "'echo $$ > shell.pid; sleep 1.5; touch after.txt'}}]\n")
    proc = subprocess.Popen([str(RUN_SH), "worker", "F-004", "--backend", "scripted",
                             "--script", str(script)], cwd=project,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    pid_file = project / "shell.pid"
    # the shell creates the file, then writes its pid: wait for the pid, not the file
    while not (pid_file.exists() and pid_file.read_text().strip()) and time.time() < deadline:
        time.sleep(0.02)
    shell = int(pid_file.read_text())
    os.kill(proc.pid, signal.SIGKILL)  # the harness alone, not its group
    proc.wait()
    time.sleep(2.5)
    assert not (project / "after.txt").exists()  # the shell did not go on working
    assert not Path(f"/proc/{shell}").exists() or "Z" in Path(f"/proc/{shell}/stat").read_text(
    ).split()[2]


@pytest.mark.parametrize("lock", ["index.lock", "HEAD.lock", "BRANCH.lock", "packed-refs.lock"])
def test_next_commit_clears_the_lock_a_killed_git_commit_left(project: Path, tmp_path: Path,
                                                              lock: str) -> None:
    # git commit takes these in turn; a SIGKILL in between leaves one, and every later
    # commit would fail on it (seen in the fault test: HEAD.lock)
    git_init(project)
    if lock == "BRANCH.lock":
        branch = subprocess.run(["git", "symbolic-ref", "--short", "HEAD"], cwd=project,
                                capture_output=True, text=True, check=True).stdout.strip()
        lock = f"refs/heads/{branch}.lock"
    (project / ".git" / lock).write_text("")
    script = tmp_path / "edit.yaml"
    script.write_text("- tools: [{name: bash, input: {command: 'echo x > new.txt'}}]\n")
    result = run_sh("worker", "F-004", "--backend", "scripted", "--script", str(script),
                    cwd=project)
    assert result.returncode == 0 and "committed" in result.stdout, result.stdout
    assert not (project / ".git" / lock).exists()
    assert subprocess.run(["git", "status", "--porcelain"], cwd=project, capture_output=True,
                          text=True).stdout == ""
