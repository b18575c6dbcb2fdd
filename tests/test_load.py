"""Load: eight workers on eight features, notes from all of them, a curator pass every second
and status calls, all at once with real processes. Nothing lost or duplicated, every lock
honoured, every file parseable. The workers run at once because each feature has its own git
worktree (`workspace: worktrees`); in the shared working tree they would take turns.
"""

import json
import os
import shutil
import threading
import time
from pathlib import Path

from conftest import EXAMPLE, SLOW, git_init, run_sh
from test_faults import check_every_file

from harness.state.memory import parse_entry

SECONDS = float(os.environ.get("HARNESS_LOAD_SECONDS", "45" if SLOW else "12"))
FEATURES = [f"F-{i:03d}" for i in range(101, 109)]
# Each run brackets its work with markers in a per-feature file, and leaves three notes:
# two through the note tool and one through `run.sh note`, as a CLI-driven agent would.
WORK = """
- tools:
    - bash_start
    - {name: note, input: {kind: TRICK, text: "load note one"}}
- tools:
    - {name: bash, input: {command: "run.sh note GOTCHA load note two via the shell"}}
    - {name: note, input: {kind: "-", text: "load note three"}}
    - {name: bash, input: {command: "echo end $HARNESS_RUN_ID >> lock-$FEATURE_ID.log"}}
- tools: [{name: finish, input: {summary: done}}]
"""
WORK = WORK.replace("bash_start", '{name: bash, input: {command: "echo start $HARNESS_RUN_ID '
                    '>> lock-$FEATURE_ID.log; sleep 0.3"}}')
NOTES_PER_RUN = 3


def make_project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    shutil.copytree(EXAMPLE, project / ".harness")
    state = project / ".harness"
    plan = [{"id": fid, "title": f"load {fid}", "description": "d", "acceptance_criteria": ["a"]}
            for fid in FEATURES]
    (state / "features.json").write_text(json.dumps(plan))
    (state / "config.yaml").write_text("max_attempts: 100000\nstuck_after: 100000\n"
                                       "workspace: worktrees\n")
    return git_init(project)


def loop(deadline: float, action, results: list) -> None:
    """Calls `action` until the deadline, and past it until one call has ended 0 (on a busy
    machine a short load may end before that), for two more minutes at most."""
    while time.time() < deadline or (0 not in results and time.time() < deadline + 120):
        results.append(action())


def run_lanes(project: Path, script: Path, seconds: float) -> dict[str, list]:
    """Every lane's exit codes, each lane calling run.sh in a loop for `seconds`."""
    deadline = time.time() + seconds
    lanes: dict[str, list] = {}
    threads = []

    def worker(fid: str):
        return run_sh("worker", fid, "--backend", "scripted", "--script", str(script),
                      cwd=project).returncode

    def curator():
        code = run_sh("curator", cwd=project).returncode
        time.sleep(1)
        return code

    def status():
        result = run_sh("status", "--json", cwd=project)
        json.loads(result.stdout)
        return result.returncode

    # two lanes on the first feature contend for its lock; one lane on each of the others
    for name, action in [*[(f"w-{fid}", lambda fid=fid: worker(fid)) for fid in FEATURES],
                         ("w-contender", lambda: worker(FEATURES[0])),
                         ("curator", curator), ("status", status)]:
        lanes[name] = []
        threads.append(threading.Thread(target=loop, args=(deadline, action, lanes[name])))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return lanes


def check_locks_honoured(project: Path) -> None:
    """Every lock honoured: a feature's runs never overlapped."""
    for fid in FEATURES:
        tree = project / ".harness" / "worktrees" / fid  # where the feature's runs work
        lines = (tree / f"lock-{fid}.log").read_text().splitlines()
        assert lines, f"no run of {fid} got through"
        for start, end in zip(lines[0::2], lines[1::2], strict=True):
            assert start.split()[0] == "start" and end.split()[0] == "end", f"{fid} overlapped"
            assert start.split()[1] == end.split()[1], f"{fid} runs overlapped"


def check_notes_kept_once(state: Path) -> None:
    """Nothing lost or duplicated: every finished run's notes are in raw.md or the archive once."""
    finished = {m["run_id"] for m in map(json.loads, (p.read_text() for p in
                state.glob("runs/*/manifest.json"))) if m["status"] == "finished"}
    lines = (state / "raw.md").read_text().splitlines()
    for archived in state.glob("archive/*.md"):
        lines += archived.read_text().splitlines()
    per_run: dict[str, int] = {}
    seen = set()
    for line in lines:
        entry = parse_entry(line)
        if entry and entry.text.startswith("load note"):
            assert line not in seen, f"duplicated: {line}"
            seen.add(line)
            per_run[entry.run] = per_run.get(entry.run, 0) + 1
    assert per_run == {run_id: NOTES_PER_RUN for run_id in finished}


def test_workers_notes_curator_and_status_all_at_once(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    state = project / ".harness"
    script = tmp_path / "work.yaml"
    script.write_text(WORK)
    lanes = run_lanes(project, script, SECONDS)

    assert set(lanes["status"]) == {0}
    assert set(lanes["curator"]) <= {0, 3} and 0 in lanes["curator"]
    worker_codes = [c for name, codes in lanes.items() if name.startswith("w-") for c in codes]
    assert set(worker_codes) <= {0, 3}, worker_codes
    assert worker_codes.count(0) >= len(FEATURES)
    check_locks_honoured(project)
    check_notes_kept_once(state)
    check_every_file(state)
    assert len((state / "summary.md").read_text().splitlines()) <= 40
    assert len((state / "MEMORY.md").read_text().splitlines()) <= 200
