"""More of a hostile agent's `.git` against the harness's own git (docs/SANDBOX.md): what the
agent can write there must make no git the harness runs, inside a run or after it (`summary`,
`show`, `report` read the runs' commits in the agent's tree), run a program of its own or
wait for ever. Real `run.sh` runs with the scripted backend and real bubblewrap.
"""

from __future__ import annotations

import json
import resource
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import test_hostile as hostile
from conftest import ROOT, run_sh
from test_hostile import CANARY, bash, payload, script, worker

from harness.run.git import HARDENED

pytestmark = hostile.pytestmark
mission = hostile.mission  # the fixture: a git project, `sandbox: bwrap`, secrets around

# A signature on a commit the harness made: `git replace` swaps in a copy carrying a
# `gpgsig` header, and `log.showSignature` has every `git show`/`git log` verify it with the
# program the agent named for the signature's format (x509 or ssh, known by its armor;
# `gpg.program` is only OpenPGP's).
SIGNED_COPY = (
    "X=$(git log --format=%H -1 --grep='^F-004: ') && git cat-file commit $X > /tmp/c && "
    "python3 -c \"import sys; h, b = open('/tmp/c').read().split(chr(10) * 2, 1); "
    "sig = 'gpgsig -----BEGIN {armor}-----' + chr(10) + ' MIAG' + chr(10) + "
    "' -----END {armor}-----'; "
    "open('/tmp/c2', 'w').write(h + chr(10) + sig + chr(10) * 2 + b)\" && "
    "git replace $X $(git hash-object -t commit -w /tmp/c2) && "
    "cp /tmp/p ev && chmod +x ev && git config log.showSignature true && "
    "git config gpg.format {fmt} && git config gpg.{fmt}.program $PWD/ev && "
    "git config gpg.ssh.allowedSignersFile $PWD/ev && echo more > g.txt")


def assert_contained(project: Path, out: Path) -> None:
    """test_hostile.assert_contained, reading the history with the harness's hardened git: a
    person's own `git log` in the shared tree honours what the agent configured there."""
    assert not out.exists(), f"a payload ran outside the sandbox: {out.read_text()[:300]}"
    for path in project.rglob("*"):
        if path.is_file() and not path.is_symlink() and path != project / ".harness" / "env":
            assert CANARY.encode() not in path.read_bytes(), f"the secret reached {path}"
    log = subprocess.run(["git", *HARDENED, "-C", str(project), "log", "--all", "-p",
                          "--no-textconv", "--no-ext-diff"], capture_output=True, text=True,
                         check=True)
    assert CANARY not in log.stdout


def test_a_signature_check_runs_no_program_of_the_agents_in_summary_show_or_report(
        mission, tmp_path):
    """The second worker run signs the first's commit and names its own verifier: `summary`,
    `show` and `report`, which run git outside any sandbox, ran it with the harness's
    environment (and `sandbox: none` runs it in the validator's diff too)."""
    assert worker(mission, script(tmp_path, bash("echo one > f.txt"))).returncode == 0
    first = min(p.name for p in (mission / ".harness" / "runs").glob("*worker*"))
    for fmt, armor in (("x509", "SIGNED MESSAGE"), ("ssh", "SSH SIGNATURE")):
        out = tmp_path / f"escaped-{fmt}-{uuid.uuid4().hex[:6]}"
        attack = (f"printf '%s' '{payload(out)}' > /tmp/p && "
                  + SIGNED_COPY.format(fmt=fmt, armor=armor))
        result = worker(mission, script(tmp_path, bash(attack)))
        assert result.returncode == 0, result.stderr
        for args in (["summary"], ["show", first], ["report"]):
            shown = run_sh(*args, cwd=mission, env={"ANTHROPIC_API_KEY": CANARY})
            assert shown.returncode == 0, (args, shown.stderr)
            assert not out.exists(), f"{args} ran the agent's program: {out.read_text()[:200]}"
    assert_contained(mission, out)


@pytest.mark.slow  # several git timeouts / 1,500 folders: .ci/run runs it
def test_a_fifo_git_reads_stops_runs_with_its_name_and_views_wait_once(mission, tmp_path):
    """`mkfifo .gitattributes`: every git that reads attributes there waits for a writer for
    ever. The harness's git gave up after its timeout, and then the next run died in a
    traceback (exit 1, a failed task to a loop) after waiting again, every run; `summary`
    and `report` waited the timeout once for each commit they show."""
    def run(command: str) -> subprocess.CompletedProcess:
        return run_sh("worker", "F-004", "--backend", "scripted", "--script",
                      str(script(tmp_path, bash(command))), cwd=mission,
                      env={"HARNESS_GIT_TIMEOUT": "3"})

    for n in range(5):
        assert run(f"echo {n} > f{n}.txt").returncode == 0
    first = run("echo two > g.txt && mkfifo .gitattributes")
    assert first.returncode in (0, 2) and "Traceback" not in first.stderr, first.stderr
    again = run("echo three > h.txt")
    assert again.returncode == 2, (again.stdout, again.stderr)
    assert ".gitattributes" in again.stderr and "fifo" in again.stderr, again.stderr
    for args in (["summary"], ["report"], ["show", min(p.name for p in (
            mission / ".harness" / "runs").iterdir())]):
        started = time.monotonic()
        shown = run_sh(*args, cwd=mission, env={"HARNESS_GIT_TIMEOUT": "3"})
        assert shown.returncode == 0, (args, shown.stderr)
        assert time.monotonic() - started < 8, args  # one wait at most, not one a commit


@pytest.mark.slow  # several git timeouts / 1,500 folders: .ci/run runs it
def test_folders_nested_deep_in_the_git_folder_are_no_traceback(mission, tmp_path):
    """1,500 folders one in another under `.git/refs` (and `logs`): the harness's check of
    the git folder and its stale-lock cleanup walked them with Python's recursive os.walk,
    a RecursionError traceback (exit 1) in every later run."""
    deep = "/".join(["d"] * 1500)
    attack = f"echo x > f.txt && mkdir -p .git/refs/{deep} .git/logs/{deep}"
    try:
        result = worker(mission, script(tmp_path, bash(attack)))
        assert result.returncode == 0 and "committed" in result.stdout, (result.stdout,
                                                                         result.stderr)
        again = worker(mission, script(tmp_path, bash("echo y > g.txt")))
        assert again.returncode == 0 and "committed" in again.stdout, again.stderr
    finally:  # pytest's own clean-up recurses too
        subprocess.run(["rm", "-rf", str(mission / ".git" / "refs" / "d"),
                        str(mission / ".git" / "logs" / "d")], check=True)


def test_a_worktree_nested_deep_and_broken_is_made_anew_without_a_traceback(mission, tmp_path):
    """In worktrees mode the agent nests 1,500 folders and breaks its `.git` file: the next
    run removes the folder to make the worktree anew, with shutil.rmtree, which recursed
    into a RecursionError traceback (exit 1) on every run."""
    config = mission / ".harness" / "config.yaml"
    config.write_text(config.read_text() + "workspace: worktrees\n")
    deep, tree = "/".join(["d"] * 1500), mission / ".harness" / "worktrees" / "F-004"
    try:
        first = worker(mission, script(tmp_path, bash(f"mkdir -p {deep} && echo x > .git")))
        assert first.returncode == 2 and "Traceback" not in first.stderr, first.stderr
        again = worker(mission, script(tmp_path, bash("echo y > g.txt")))
        assert again.returncode == 0 and "committed" in again.stdout, again.stderr
        assert not (tree / "d").exists()
    finally:  # pytest's own clean-up recurses too
        subprocess.run(["rm", "-rf", str(tree / "d")], check=True)


def test_the_editor_reads_no_file_bigger_than_it_can_show(mission, tmp_path):
    """The editor runs in the harness's process: `truncate -s 40G f` costs the agent nothing
    (a sparse file) and the editor's `view` read it whole, 2 bytes of the harness's memory
    for each (6 GB for 3 GB here), until the OOM killer ended the harness or another
    process. A file too big to show is refused, naming its size and the way round."""
    view = {"name": "str_replace_based_edit_tool", "input": {"command": "view",
                                                             "path": "big.txt"}}
    edit = {"name": "str_replace_based_edit_tool",
            "input": {"command": "str_replace", "path": "big.txt", "old_str": "x",
                      "new_str": "y"}}
    turns = script(tmp_path, bash("truncate -s 100M big.txt"), view, edit,
                   bash("rm big.txt && echo done > f.txt"))
    result = worker(mission, turns)
    assert result.returncode == 0, result.stderr
    transcript = next((mission / ".harness" / "runs").glob("*/transcript.jsonl")).read_text()
    calls = [json.loads(line) for line in transcript.splitlines()]
    results = [c for c in calls if c.get("event") == "tool_call"
               and c["name"] == "str_replace_based_edit_tool"]
    assert len(results) == 2 and all(c["is_error"] for c in results), results
    assert all("too big" in c["result"] and "head" in c["result"] for c in results), results


def test_a_fifo_or_a_huge_file_for_the_repositorys_mark_or_git_file_is_refused_at_once(
        mission, tmp_path):
    """The harness reads its mark in the git folder, and a `.git` file, in its own process
    before each git command: a fifo there (`mkfifo .git/autonomous-harness.id`) held the
    worker in open() for ever, with its locks (no git timeout applies); a sparse 3 GB `.git`
    file was read whole into memory."""
    fifo = worker(mission, script(tmp_path, bash(
        "echo x > f.txt && rm .git/autonomous-harness.id && "
        "mkfifo .git/autonomous-harness.id")))
    assert fifo.returncode == 2 and "mission's repository" in fifo.stderr, fifo.stderr
    subprocess.run(["rm", "-f", str(mission / ".git" / "autonomous-harness.id")], check=True)
    huge = tmp_path / "huge"
    huge.mkdir()
    (huge / "project").mkdir()
    subprocess.run(["cp", "-a", f"{mission}/.", str(huge / "project")], check=True)
    turns = script(tmp_path, bash("rm -rf .git && truncate -s 3G .git && echo x > f.txt"))
    capped = subprocess.run(  # were it read whole, MemoryError, not the host's memory
        [str(ROOT / "run.sh"), "worker", "F-004", "--backend", "scripted", "--script",
         str(turns)], cwd=huge / "project", capture_output=True, text=True, timeout=120,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30)))
    assert capped.returncode == 2 and "mission's repository" in capped.stderr, capped.stderr
