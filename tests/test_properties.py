"""Property: whatever damage a state file suffers, every command that reads it ends with its
documented exit code and a message, never a traceback, and (when it refuses, or only looks)
changes no file (issue 31, point 9).

A fixed, derandomized handful of examples per file and command runs by default (a few
seconds); HARNESS_SLOW=1 (set by .ci/run) runs many more.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml
from conftest import EXAMPLE, RUN_SH, SLOW, git_init
from damage import (
    ROOT,
    bytes_damage,
    invoke,
    json_damage,
    jsonl_damage,
    snapshot,
    write,
    yaml_damage,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

PROPERTY = settings(max_examples=20 if SLOW else 2, derandomize=True, database=None,
                    deadline=None, print_blob=True,
                    suppress_health_check=list(HealthCheck))
STATE = "project/.harness"
RUN = "{run}"  # the recorded worker run, filled in per mission
TURNS = {"worker": [{"tools": [{"name": "note", "input": {"kind": "TRICK", "text": "make -j4"}},
                               {"name": "finish", "input": {"summary": "done"}}]}],
         "validator": [{"tools": [{"name": "verdict",
                                   "input": {"verdict": "fail", "reason": "no tests"}},
                                  {"name": "finish", "input": {"summary": "judged"}}]}]}

# command -> (argv, exit codes it may end with on damaged input (docs/contracts.md: 4 when a damaged
# spend.json says the budget is spent, 7 when a damaged ledger repeats a failure), whether it
# only looks)
COMMANDS = {
    "status": (["status"], {0, 2}, True),
    "runs": (["runs"], {0, 2}, True),
    "show": (["show", RUN], {0, 2}, True),
    "show-prompt": (["show", RUN, "--prompt"], {0, 2}, True),
    # a report records when it was made (<state>/last-report.json): the next opens from there
    "report": (["report", "--out", "{base}/report"], {0, 2}, False),
    "reconstruct": (["reconstruct", RUN, "--check"], {0, 1, 2}, True),
    "curator-dry": (["curator", "--dry-run"], {0, 2}, True),
    "doctor": (["doctor", "--no-cron", "--backend", "scripted", "--script",
                "{base}/worker.yaml"], {0, 2}, True),
    "curator": (["curator"], {0, 2}, False),
    "worker": (["worker", "F-004", "--backend", "scripted", "--script", "{base}/worker.yaml"],
               {0, 1, 2, 4, 7}, False),
    "validator": (["validator", "F-004", "--backend", "scripted", "--script",
                   "{base}/validator.yaml"], {0, 1, 2, 4, 7}, False),
    "note": (["note", "TRICK", "a note after the damage"], {0, 2}, False),
    "plan": (["plan", "{base}/input/plan.json"], {0, 2}, False),
    "import": (["import", "{base}/input/prd.json"], {0, 2}, False),
}
# file (relative to the mission) -> how it is damaged, and the commands that read it
FILES = {
    f"{STATE}/features.json": (json_damage, ["status", "report", "worker", "validator", "plan",
                                             "import"]),
    f"{STATE}/config.yaml": (yaml_damage, ["report", "curator-dry", "curator", "worker",
                                           "validator", "doctor"]),
    f"{STATE}/roles/worker.yaml": (yaml_damage, ["worker", "doctor"]),
    f"{STATE}/roles/validator.yaml": (yaml_damage, ["validator"]),
    f"{STATE}/raw.md": (bytes_damage, ["status", "curator-dry", "curator", "worker", "note"]),
    f"{STATE}/summary.md": (bytes_damage, ["status", "curator-dry", "curator", "worker",
                                           "report"]),
    f"{STATE}/MEMORY.md": (bytes_damage, ["status", "curator-dry", "curator", "report"]),
    f"{STATE}/ledger/F-004.jsonl": (jsonl_damage, ["report", "worker", "validator"]),
    f"{STATE}/runs/{RUN}/manifest.json": (json_damage, ["status", "runs", "show", "report",
                                                        "reconstruct"]),
    f"{STATE}/runs/{RUN}/transcript.jsonl": (jsonl_damage, ["status", "show", "report"]),
    f"{STATE}/runs/{RUN}/prompt.md": (bytes_damage, ["show", "show-prompt", "report"]),
    f"{STATE}/objects": (bytes_damage, ["reconstruct"]),
    "identity/worker.md": (bytes_damage, ["curator-dry", "curator", "worker", "report"]),
    "identity/archive/worker.md": (bytes_damage, ["curator-dry", "curator"]),
    f"{STATE}/env": (bytes_damage, ["worker", "validator", "doctor"]),
    f"{STATE}/spend.json": (json_damage, ["worker", "validator"]),
    f"{STATE}/runs/{RUN}/verdict.json": (json_damage, ["show", "report"]),
    "report/.report-cache.json": (json_damage, ["report"]),
    f"{STATE}/last-report.json": (json_damage, ["report"]),
    "input/plan.json": (json_damage, ["plan"]),
    "input/prd.json": (json_damage, ["import"]),
}
CASES = [(path, command) for path, (_, commands) in FILES.items() for command in commands]


def build_mission(base: Path) -> str:
    """A mission with a plan, memory, a ledger, an identity, an env file and one recorded
    worker run; the run's id."""
    project, identity = base / "project", base / "identity"
    project.mkdir()
    shutil.copytree(EXAMPLE, project / STATE.split("/")[1])
    git_init(project)
    state = base / STATE
    (identity / "archive").mkdir(parents=True)
    lesson = "- run the tests with -x to stop at the first failure [promoted 2026-11-01]\n"
    (identity / "worker.md").write_text(f"# worker\n\n{lesson}")
    (identity / "archive" / "worker.md").write_text(f"# worker: moved out\n\n{lesson}")
    (state / "env").write_text("EXAMPLE_API_KEY=not-a-key\n")
    (state / "env").chmod(0o600)
    for role in ("worker", "validator"):
        (base / f"{role}.yaml").write_text(yaml.safe_dump(TURNS[role]))
        home_yaml = (ROOT / "roles" / f"{role}.yaml").read_bytes()
        (state / "roles").mkdir(exist_ok=True)
        (state / "roles" / f"{role}.yaml").write_bytes(home_yaml)
    result = invoke(state, identity, ["worker", "F-004", "--backend", "scripted", "--script",
                                      str(base / "worker.yaml")])
    assert result.exit_code == 0, result.output
    run_id = next(p.name for p in (state / "runs").iterdir())
    verdict = {"time": "2026-11-20T10:00:00Z", "run_id": "1-validator-F-004",
               "verdict": "fail", "reason": "no tests", "verify_exit": None}
    (state / "ledger" / "F-004.jsonl").write_text(json.dumps(verdict) + "\n")
    (state / "spend.json").write_text('{"usd": 0.5}\n')
    (state / "runs" / run_id / "verdict.json").write_text('{"verdict": "fail", "reason": "x"}')
    assert invoke(state, identity, ["report", "--out", str(base / "report")]).exit_code == 0
    (base / "input").mkdir()
    (base / "input" / "plan.json").write_bytes((state / "features.json").read_bytes())
    prd = invoke(state, identity, ["export", "--format", "prd"])
    (base / "input" / "prd.json").write_text(prd.output)
    return run_id


@pytest.fixture(scope="module")
def mission(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    base = tmp_path_factory.mktemp("mission")
    return base, build_mission(base)


def target_file(base: Path, relative: str, run_id: str, draw) -> Path:
    path = base / relative.replace(RUN, run_id)
    if path.name == "objects":  # one stored object, a template or a render context
        path = draw(st.sampled_from(sorted(p for p in path.rglob("*") if p.is_file())))
    return path


def check(result, command: str, before: dict, after: dict) -> None:
    """The property: a documented exit code, a message, no traceback, and no file changed
    by a refusal or by a command that only looks."""
    argv, codes, looks = COMMANDS[command]
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"traceback from {command}: {result.exception!r}")
    assert "Traceback" not in result.output
    assert result.exit_code in codes, f"{command} exit {result.exit_code}: {result.output}"
    if result.exit_code == 2:
        assert result.output.strip(), f"{command} exit 2 without a message"
    if result.exit_code == 2 or looks:
        changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        assert not changed, f"{command} (exit {result.exit_code}) changed {changed[:5]}"


@pytest.mark.parametrize("relative, command", CASES)
@PROPERTY
@given(data=st.data())
def test_damaged_file_gives_an_exit_code_never_a_traceback(mission, relative: str,
                                                           command: str, data) -> None:
    template, run_id = mission
    base = Path(tempfile.mkdtemp(prefix="damaged-"))
    try:
        shutil.copytree(template, base, dirs_exist_ok=True, symlinks=True)
        path = target_file(base, relative, run_id, data.draw)
        damage = FILES[relative][0]
        write(path, data.draw(damage(path.read_bytes()), label=relative))
        state, identity = base / STATE, base / "identity"
        argv = [a.replace(RUN, run_id).replace("{base}", str(base))
                for a in COMMANDS[command][0]]
        before = snapshot(state, identity)
        result = invoke(state, identity, argv)
        check(result, command, before, snapshot(state, identity))
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("relative, command", [
    (f"{STATE}/runs/{RUN}/manifest.json", "status"),
    (f"{STATE}/features.json", "worker"),
    ("input/plan.json", "plan"),
])
@settings(PROPERTY, max_examples=10 if SLOW else 1)
@given(data=st.data())
def test_damaged_file_through_run_sh(mission, relative: str, command: str, data) -> None:
    """The shell contract itself: a real run.sh process, its exit code and stderr."""
    template, run_id = mission
    base = Path(tempfile.mkdtemp(prefix="damaged-"))
    try:
        shutil.copytree(template, base, dirs_exist_ok=True, symlinks=True)
        path = target_file(base, relative, run_id, data.draw)
        write(path, data.draw(FILES[relative][0](path.read_bytes()), label=relative))
        argv = [a.replace(RUN, run_id).replace("{base}", str(base))
                for a in COMMANDS[command][0]]
        env = {**os.environ, "HARNESS_IDENTITY_DIR": str(base / "identity")}
        env.pop("HARNESS_STATE", None)
        proc = subprocess.run([str(RUN_SH), "--state", str(base / STATE), *argv],
                              cwd=base / "project", env=env, capture_output=True, timeout=120)
        assert b"Traceback" not in proc.stderr, proc.stderr.decode(errors="replace")
        assert proc.returncode in COMMANDS[command][1], proc.stderr.decode(errors="replace")
    finally:
        shutil.rmtree(base, ignore_errors=True)


def note_line(day: str, text: str) -> bytes:
    return f"[{day}T10:00:00Z] worker F-001 TRICK: {text}\n".encode()


@pytest.mark.parametrize("command", ["curator-dry", "curator"])
@settings(PROPERTY, max_examples=10 if SLOW else 1)
@given(day=st.sampled_from(["2026-02-30", "2026-13-01", "0000-01-01", "2026-00-10"]))
def test_a_note_with_an_impossible_date_does_not_stop_the_curator(mission, command: str,
                                                                  day: str) -> None:
    # a dozen, so that the curator ranks them against each other for room
    lines = b"".join(note_line(day, f"lesson {n} about caching").replace(b"F-001", b"F-%03d" % n)
                     for n in range(1, 13))
    run_with_raw_line(mission, command, lines)


@settings(PROPERTY, max_examples=10 if SLOW else 1)
@given(byte=st.sampled_from(["\x00", "\x1b[2J", "\x07", "\x7f"]))
def test_control_bytes_in_a_note_never_reach_the_terminal(mission, byte: str) -> None:
    output = run_with_raw_line(mission, "curator-dry",
                               note_line("2026-11-20", f"use make -j4{byte} for speed"))
    assert not any(ord(c) < 32 and c not in "\n\t" or ord(c) == 127 for c in output)


def run_with_raw_line(mission, command: str, line: bytes) -> str:
    """`command` after `line` (one or more) is appended to raw.md: the property holds; its
    output."""
    template, _ = mission
    base = Path(tempfile.mkdtemp(prefix="damaged-"))
    try:
        shutil.copytree(template, base, dirs_exist_ok=True, symlinks=True)
        state, identity = base / STATE, base / "identity"
        with open(state / "raw.md", "ab") as raw:
            raw.write(line)
        before = snapshot(state, identity)
        result = invoke(state, identity, COMMANDS[command][0])
        check(result, command, before, snapshot(state, identity))
        return result.output
    finally:
        shutil.rmtree(base, ignore_errors=True)
