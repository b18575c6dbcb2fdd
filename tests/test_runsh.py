"""run.sh as cron and shell loops see it: real subprocesses, exit codes, files."""

import os
from pathlib import Path

from conftest import RUN_SH, run_sh

from harness.state.memory import parse_entry


def test_works_from_any_directory_and_through_a_symlink(tmp_path: Path, project: Path) -> None:
    link = tmp_path / "bin" / "harness-run"
    link.parent.mkdir()
    link.symlink_to(RUN_SH)
    result = run_sh("--help", cwd=tmp_path)
    assert result.returncode == 0 and "Exit codes" in result.stdout
    via_link = os.popen(f"cd {project} && {link} worker F-004 --dry-run; echo rc=$?").read()
    assert "dry run" in via_link and "rc=0" in via_link


def test_note_fast_path_takes_identity_from_the_environment(project: Path, state: Path) -> None:
    from harness.state.runs import start_run

    start_run(state, "9-validator-F-003", {"role": "validator", "feature": "F-003"})  # live
    env = {"HARNESS_ROLE": "validator", "FEATURE_ID": "F-003",
           "HARNESS_RUN_ID": "9-validator-F-003"}
    result = run_sh("note", "GOTCHA", "ties need a sort key", cwd=project, env=env)
    assert result.returncode == 0, result.stderr
    last = parse_entry((state / "raw.md").read_text().splitlines()[-1])
    assert (last.role, last.feature, last.kind, last.text, last.run) == (
        "validator", "F-003", "GOTCHA", "ties need a sort key", "9-validator-F-003")


def test_exit_codes_for_usage_errors(project: Path) -> None:
    assert run_sh("worker", "F-999", "--dry-run", cwd=project).returncode == 2
    assert run_sh("note", "NOPE", "x", cwd=project).returncode == 2
    assert run_sh("status", cwd=project.parent).returncode == 2  # no .harness here
    assert run_sh("bogus", cwd=project).returncode == 2


def test_state_from_environment(project: Path, tmp_path: Path) -> None:
    result = run_sh("status", cwd=tmp_path, env={"HARNESS_STATE": str(project / ".harness")})
    assert result.returncode == 0 and "plan: 1 pending, 3 done" in result.stdout


def test_next_with_nothing_pending_exits_5(project: Path, state: Path) -> None:
    text = (state / "features.json").read_text().replace('"pending"', '"done"')
    (state / "features.json").write_text(text)
    result = run_sh("worker", "next", "--dry-run", cwd=project)
    assert result.returncode == 5 and "nothing to do" in result.stderr


def test_blocked_feature_exits_7(project: Path, state: Path) -> None:
    text = (state / "features.json").read_text().replace('"pending"', '"blocked"')
    (state / "features.json").write_text(text)
    assert run_sh("worker", "F-004", "--dry-run", cwd=project).returncode == 7


def test_second_run_on_the_same_feature_is_busy_at_once(project: Path, tmp_path: Path) -> None:
    import subprocess
    import time

    slow = tmp_path / "slow.yaml"
    slow.write_text("- tools: [{name: bash, input: {command: 'sleep 4'}}]\n"
                    "- tools: [{name: finish, input: {summary: done}}]\n")
    args = ["worker", "F-004", "--backend", "scripted", "--script", str(slow)]
    first = subprocess.Popen([str(RUN_SH), *args], cwd=project, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    runs = project / ".harness" / "runs"
    deadline = time.time() + 30
    while not (runs.exists() and any(runs.glob("*/manifest.json"))) and time.time() < deadline:
        time.sleep(0.05)
    started = time.time()
    second = run_sh(*args, cwd=project)
    assert second.returncode == 3 and "busy" in second.stderr
    assert time.time() - started < 3.5  # did not wait for the first run
    assert first.wait(timeout=60) == 0
    assert len(list(runs.iterdir())) == 1  # the busy run recorded nothing


def test_demo_runs_the_whole_cycle_offline(tmp_path: Path) -> None:
    result = run_sh("demo", "--dir", str(tmp_path / "demo"), cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "UNEXPECTED" not in result.stdout
    assert "F-004 is now done" in result.stdout
    state = tmp_path / "demo" / "textstats" / ".harness"
    verdicts = [line for line in (state / "ledger" / "F-004.jsonl").read_text().splitlines()]
    assert ['"fail"' in verdicts[0], '"pass"' in verdicts[1]] == [True, True]
    second_worker = sorted(state.glob("runs/*-worker-F-004*"))[-1]
    assert "the total line is plain text" in (second_worker / "prompt.md").read_text()
    for run in state.glob("runs/*"):
        check = run_sh("--state", str(state), "reconstruct", run.name, "--check", cwd=tmp_path)
        assert check.returncode == 0, check.stderr


def test_a_process_an_agent_detached_does_not_outlive_the_run(project: Path,
                                                               tmp_path: Path) -> None:
    # setsid leaves the shell's process group, which is what a run's end kills; a dev
    # server started this way would hold its port into the next run
    pidfile = tmp_path / "detached.pid"
    script = tmp_path / "detach.yaml"
    script.write_text(
        "- tools: [{name: bash, input: {command: \"setsid sh -c 'echo $$ > " + str(pidfile)
        + "; exec sleep 300' > /dev/null 2>&1 < /dev/null & sleep 0.5\"}}]\n"
        "- tools: [{name: finish, input: {summary: done}}]\n")
    result = run_sh("worker", "F-004", "--backend", "scripted", "--script", str(script),
                    cwd=project)
    assert result.returncode in (0, 1), result.stderr
    pid = int(pidfile.read_text())
    try:
        with open(f"/proc/{pid}/stat") as f:
            alive = f.read().split(") ")[1][0] not in "ZX"
    except FileNotFoundError:
        alive = False
    if alive:
        os.kill(pid, 9)
    assert not alive, "the detached sleep outlived run.sh"
