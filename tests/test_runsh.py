"""run.sh as cron and shell loops see it: real subprocesses, exit codes, files."""

import json
import os
import subprocess
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
    env = {"HARNESS_ROLE": "validator", "FEATURE_ID": "F-003",
           "HARNESS_RUN_ID": "9-validator-F-003"}
    live = state / "runs" / env["HARNESS_RUN_ID"]  # a note names only a live run's record
    live.mkdir(parents=True)
    (live / "manifest.json").write_text(json.dumps({
        "run_id": live.name, "role": "validator", "feature": "F-003", "status": "started",
        "pid": os.getpid()}))  # this test's process stands for the run's
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
    # the demo's lesson is in the demo's identity folder, and the report it names reads it
    identity = tmp_path / "demo" / "identity"
    lesson = "python3 -m unittest from the project root imports the package"
    assert lesson in (identity / "worker.md").read_text()
    assert f"HARNESS_IDENTITY_DIR={identity} {RUN_SH} --state {state} report" in result.stdout
    # the commands it ends with run as printed, pasted into a shell with no run.sh on PATH
    look = result.stdout.split("Look around:", 1)[1].splitlines()
    for line in (line.strip() for line in look if line.strip()):
        pasted = subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True,
                                text=True, timeout=120)
        assert pasted.returncode == 0, (line, pasted.stderr)
    report = run_sh("--state", str(state), "report", cwd=tmp_path,
                    env={"HARNESS_IDENTITY_DIR": str(identity)})
    assert report.returncode == 0, report.stderr
    memory_page = (state / "report" / "memory.html").read_text()
    assert lesson in memory_page and str(identity) in memory_page


def test_demo_prints_each_step_as_it_ends(tmp_path: Path) -> None:
    import subprocess
    import time

    proc = subprocess.Popen([str(RUN_SH), "demo", "--dir", str(tmp_path / "demo")],
                            cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append((time.monotonic(), line))
    assert proc.wait(timeout=300) == 0
    first, last = (next(t for t, line in seen if line.startswith(f"{n}. ")) for n in (1, 5))
    assert last - first > 0.3  # step 1 was printed while the later steps still ran
    assert seen[0][1].startswith("setting up the demo mission in")


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


def checkout_with_a_fake_pip(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A checkout holding this run.sh, not yet installed: its venv's python is a stand-in
    pip that logs its arguments, and `flock` on PATH fails as on macOS, where it is missing."""
    home, bin_dir = tmp_path / "tool", tmp_path / "bin"
    (home / ".venv" / "bin").mkdir(parents=True)
    bin_dir.mkdir()
    (home / "run.sh").write_bytes(RUN_SH.read_bytes())
    (home / "run.sh").chmod(0o755)
    (home / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    log = tmp_path / "pip.log"
    stand_ins = {
        home / ".venv" / "bin" / "python": f'#!/bin/sh\necho "$*" >> {log}\n'
                                            'echo "Collecting click"\nsleep "${PIP_SECONDS:-0}"\n',
        home / ".venv" / "bin" / "harness": '#!/bin/sh\necho "harness $*"\n',
        bin_dir / "flock": "#!/bin/sh\necho 'flock: command not found' >&2\nexit 127\n",
    }
    for path, text in stand_ins.items():
        path.write_text(text)
        path.chmod(0o755)
    return home, {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def test_first_use_installs_with_progress_and_no_flock(tmp_path: Path) -> None:
    import subprocess

    home, env = checkout_with_a_fake_pip(tmp_path)
    result = subprocess.run([str(home / "run.sh"), "status"], cwd=tmp_path, text=True,
                            capture_output=True, env={**os.environ, **env}, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "harness status\n"
    assert "flock" not in result.stderr
    assert "installing autonomous-harness and its dependencies" in result.stderr
    assert "Collecting click" in result.stderr and "run.sh: installed" in result.stderr
    pip = (tmp_path / "pip.log").read_text()
    assert "pip install" in pip and "--quiet" not in pip
    again = subprocess.run([str(home / "run.sh"), "status"], cwd=tmp_path, text=True,
                           capture_output=True, env={**os.environ, **env}, timeout=60)
    assert again.stderr == "" and len(pip.splitlines()) == 1  # installed once


def test_two_first_uses_at_once_install_once(tmp_path: Path) -> None:
    import subprocess

    home, env = checkout_with_a_fake_pip(tmp_path)
    env = {**os.environ, **env, "PIP_SECONDS": "2"}
    procs = [subprocess.Popen([str(home / "run.sh"), "runs"], cwd=tmp_path, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
             for _ in range(2)]
    outs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert all(out == "harness runs\n" for out, _ in outs)
    assert any("another run.sh is installing" in err for _, err in outs)
    assert len((tmp_path / "pip.log").read_text().splitlines()) == 1


def test_a_pyproject_dated_in_the_future_is_installed_once(tmp_path: Path) -> None:
    """Clock skew: a checkout whose files carry a time still to come (copied from a machine
    whose clock runs ahead) is installed once, not again on every call."""
    import subprocess
    import time

    home, env = checkout_with_a_fake_pip(tmp_path)
    ahead = time.time() + 2 * 86400
    os.utime(home / "pyproject.toml", (ahead, ahead))
    for _ in range(3):
        result = subprocess.run([str(home / "run.sh"), "status"], cwd=tmp_path, text=True,
                                capture_output=True, env={**os.environ, **env}, timeout=60)
        assert result.returncode == 0, result.stderr
    assert len((tmp_path / "pip.log").read_text().splitlines()) == 1


def test_no_home_folder_is_exit_2_naming_home(project: Path) -> None:
    """No HOME and a uid with no passwd entry (a container's arbitrary uid, `env -i`): every
    command was a traceback, exit 1 (Path.home); now exit 2 saying what to set."""
    import shutil
    import subprocess

    import pytest

    bare = ["env", "-i", "PATH=/usr/bin:/bin", "LANG=C", str(RUN_SH)]
    nobody = ["unshare", "--user", "--map-user=54321", "--map-group=54321"]
    if not shutil.which("unshare") or subprocess.run([*nobody, "true"]).returncode != 0:
        pytest.skip("no user namespace to run as a uid /etc/passwd does not know")
    for command in (["status"], ["worker", "F-004", "--dry-run"]):
        result = subprocess.run([*nobody, *bare, *command], cwd=project, capture_output=True,
                                text=True, timeout=60)
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr and "HOME" in result.stderr
    given = subprocess.run([*nobody, *bare[:3], f"HOME={project}", *bare[3:], "status"],
                           cwd=project, capture_output=True, text=True, timeout=60)
    assert given.returncode == 0, given.stderr


def test_a_folder_with_no_file_locks_is_exit_2_naming_the_lock(project: Path,
                                                              tmp_path: Path) -> None:
    """A state directory where flock fails (NFS with no lock daemon: ENOLCK) stands in here
    for an LD_PRELOAD flock that always fails: each command that locks was a traceback,
    exit 1 (the loop's own too); now exit 2 naming the lock file and the way out."""
    import shutil
    import subprocess

    import pytest

    if not shutil.which("gcc"):
        pytest.skip("no gcc to build a flock that fails")
    source = tmp_path / "noflock.c"
    source.write_text("#include <errno.h>\n"
                      "int flock(int fd, int op) { (void)fd; (void)op; errno = ENOLCK; "
                      "return -1; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(tmp_path / "noflock.so"),
                    str(source)], check=True)
    env = {"LD_PRELOAD": str(tmp_path / "noflock.so")}
    for command in (["worker", "F-004"], ["loop", "--max-runs", "1"], ["retry", "F-004"]):
        result = run_sh(*command, cwd=project, env=env)
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr and "No locks available" in result.stderr
        assert str(project / ".harness" / "locks") in result.stderr
    home, fake = checkout_with_a_fake_pip(tmp_path / "clone")  # run.sh's first install
    first = subprocess.run([str(home / "run.sh"), "status"], cwd=tmp_path, text=True,
                           capture_output=True, env={**os.environ, **fake, **env}, timeout=60)
    assert first.returncode == 2 and "Traceback" not in first.stderr, first.stderr
    assert "another run.sh is installing" not in first.stderr  # nobody was
    assert f"cannot lock {home / '.venv.lock'}: No locks available" in first.stderr


def test_each_role_commands_usage_names_what_it_takes(tmp_path: Path) -> None:
    """The planner works on the whole mission: its usage names no feature id."""
    usage = {role: run_sh(role, "--help", cwd=tmp_path).stdout.splitlines()[0]
             for role in ("planner", "worker", "validator")}
    assert usage["planner"] == "Usage: run.sh planner [OPTIONS]"
    assert usage["worker"] == "Usage: run.sh worker [OPTIONS] FEATURE_ID|next"
    assert usage["validator"] == "Usage: run.sh validator [OPTIONS] FEATURE_ID|next"
