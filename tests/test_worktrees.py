"""Many workers, one repository: the shared tree's lock, and `workspace: worktrees` (a git
worktree per feature, merged into the base branch on a pass) with real run.sh subprocesses
and the scripted backend."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import RUN_SH, git_init, run_sh

from harness.state.plan import load_plan
from harness.state.store import hold_lock, lock_path

FEATURES = ("F-001", "F-002", "F-003", "F-004")
SHARED = "line 1\nline 2\nline 3\n"
# Every feature writes its own file; F-001 and F-002 also rewrite the same line of shared.txt.
# A worker that finds conflict markers keeps both sides.
WORK = r"""
- tools:
    - name: bash
      input:
        command: |
          sleep "${WORK_SLEEP:-1}"
          echo "$FEATURE_ID" > "own-$FEATURE_ID.txt"
          case "$FEATURE_ID" in
            F-001|F-002) sed -i "s/^line 2$/line 2 by $FEATURE_ID/" shared.txt;;
          esac
          if grep -q '^<<<<<<<' shared.txt; then
            sed -i '/^<<<<<<<\|^=======\|^>>>>>>>/d' shared.txt
          fi
- tools: [{name: finish, input: {summary: done}}]
"""
PASS = "- tools: [{name: verdict, input: {verdict: pass, reason: looks right}}]\n"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          check=True).stdout


def make_mission(root: Path, workspace: str) -> Path:
    """A git project on `main` with four features and a tracked notes.txt."""
    project = root / "project"
    state = project / ".harness"
    state.mkdir(parents=True)
    (project / "shared.txt").write_text(SHARED)
    (project / "notes.txt").write_text("the person's notes\n")
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=project, check=True)
    git_init(project)
    (state / "config.yaml").write_text(f"workspace: {workspace}\nmax_attempts: 5\n")
    (state / "features.json").write_text(json.dumps([
        {"id": fid, "title": f"feature {fid}", "description": "Write its own file.",
         "acceptance_criteria": ["its file exists"], "verify": f"test -f own-{fid}.txt"}
        for fid in FEATURES]))
    for name in ("raw.md", "summary.md", "MEMORY.md"):
        (state / name).write_text("")
    (root / "work.yaml").write_text(WORK)
    (root / "pass.yaml").write_text(PASS)
    return project


def role(project: Path, name: str, target: str, script: Path,
         env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen([str(RUN_SH), name, target, "--backend", "scripted", "--script",
                             str(script)], cwd=project, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env(env))


def _env(extra: dict[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HARNESS_STATE",
                                                                    "FEATURE_ID"))}
    return {**env, **(extra or {})}


def all_at_once(project: Path, name: str, script: Path, n: int) -> list[tuple[int, str]]:
    procs = [role(project, name, "next", script) for _ in range(n)]
    return [(p.wait(timeout=180), p.stdout.read() + p.stderr.read()) for p in procs]


def statuses(project: Path) -> dict[str, str]:
    return {f.id: f.status for f in load_plan(project / ".harness")}


def assert_checkout_untouched(project: Path) -> None:
    """The person's checkout: still on main, mid-nothing, their edit exactly as it was."""
    assert git(project, "symbolic-ref", "--short", "HEAD").strip() == "main"
    assert not (project / ".git" / "MERGE_HEAD").exists()
    assert (project / "notes.txt").read_text() == "the person's notes\nan uncommitted line\n"
    assert git(project, "status", "--porcelain") == " M notes.txt\n"


def changed_files(project: Path, commit: str) -> set[str]:
    return set(git(project, "show", "--format=", "--name-only", commit).split())


def test_four_workers_at_once_in_worktrees_each_commit_its_own_and_merge(tmp_path: Path) -> None:
    project = make_mission(tmp_path, "worktrees")
    work, judge = tmp_path / "work.yaml", tmp_path / "pass.yaml"
    with (project / "notes.txt").open("a") as f:
        f.write("an uncommitted line\n")

    ran = all_at_once(project, "worker", work, 4)
    assert [code for code, _ in ran] == [0, 0, 0, 0], ran
    assert set(statuses(project).values()) == {"in_progress"}
    for fid in FEATURES:  # each branch holds its own feature's work and nothing else
        own = {f"own-{fid}.txt"} | ({"shared.txt"} if fid in ("F-001", "F-002") else set())
        assert set(git(project, "diff", "--name-only", f"main...harness/{fid}").split()) == own
        subjects = git(project, "log", "--format=%s", f"main..harness/{fid}").splitlines()
        assert len(subjects) == 1 and subjects[0].startswith(f"{fid}: ")
    assert_checkout_untouched(project)

    ran = all_at_once(project, "validator", judge, 4)
    assert sorted(code for code, _ in ran) == [0, 0, 0, 1], ran
    now = statuses(project)
    back = [fid for fid, status in now.items() if status == "pending"]
    assert len(back) == 1 and back[0] in ("F-001", "F-002") and list(now.values()).count(
        "done") == 3
    verdict = json.loads((project / ".harness" / "ledger" / f"{back[0]}.jsonl")
                         .read_text().splitlines()[-1])
    assert verdict["verdict"] == "unmerged" and verdict["paths"] == ["shared.txt"]
    assert "shared.txt" in verdict["reason"]
    assert_checkout_untouched(project)
    merged = [fid for fid in FEATURES if fid != back[0]]
    assert all((project / f"own-{fid}.txt").exists() for fid in merged)  # the checkout followed

    # one more round: the worker starts with main merged in and the conflict in its prompt
    again = role(project, "worker", "next", work)
    assert again.wait(timeout=120) == 0, again.stderr.read()
    prompt = sorted((project / ".harness" / "runs").glob(f"*-worker-{back[0]}*"))[-1]
    assert "conflicts in these files: shared.txt" in (prompt / "prompt.md").read_text()
    assert "did not merge into main" in (prompt / "prompt.md").read_text()
    last = role(project, "validator", "next", judge)
    assert last.wait(timeout=120) == 0, last.stderr.read()

    assert set(statuses(project).values()) == {"done"}
    assert_checkout_untouched(project)
    shared = git(project, "show", "main:shared.txt")
    assert "line 2 by F-001" in shared and "line 2 by F-002" in shared
    assert "<<<<" not in shared
    assert git(project, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert git(project, "branch", "--list", "harness/*") == ""
    for line in git(project, "log", "--no-merges", "--format=%H %s", "main").splitlines()[:-1]:
        sha, subject = line.split(" ", 1)
        fid = subject.split(":")[0]
        assert changed_files(project, sha) <= {f"own-{fid}.txt", "shared.txt"}, subject
        if fid not in ("F-001", "F-002"):
            assert changed_files(project, sha) == {f"own-{fid}.txt"}, subject
    merges = (project / ".harness" / "merges.log").read_text()
    assert merges.count(" merged: ") == 4 and merges.count(" unmerged: ") == 1
    assert "uncommitted changes kept as they were" in merges


def test_shared_mode_second_worker_exits_3_at_once_and_changes_nothing(tmp_path: Path) -> None:
    project = make_mission(tmp_path, "shared")
    state = project / ".harness"
    first = role(project, "worker", "F-001", tmp_path / "work.yaml", {"WORK_SLEEP": "6"})
    deadline = time.monotonic() + 60
    lock = state / "locks" / "tree.lock"
    while not (lock.exists() and "run " in lock.read_text()):  # the run names itself there
        assert time.monotonic() < deadline and first.poll() is None
        time.sleep(0.05)
    run_id = next(state.glob("runs/*-worker-F-001")).name

    def snapshot() -> tuple:  # what the second run could have touched (the first still runs)
        return (sorted(p.name for p in state.glob("runs/*")), (state / "features.json").read_text(),
                (state / "raw.md").read_text(), sorted(p.name for p in state.glob("ledger/*")),
                (state / "progress.log").exists(), git(project, "status", "--porcelain"),
                git(project, "rev-parse", "HEAD"))

    before = snapshot()
    started = time.monotonic()
    second = run_sh("worker", "F-002", "--backend", "scripted", "--script",
                    str(tmp_path / "work.yaml"), cwd=project)
    assert second.returncode == 3, second.stderr
    assert time.monotonic() - started < 5  # at once, not after the first run
    assert f"run {run_id}" in second.stderr and "working tree" in second.stderr
    assert snapshot() == before
    assert first.wait(timeout=120) == 0
    assert set(git(project, "log", "-1", "--name-only", "--format=").split()) == {
        "own-F-001.txt", "shared.txt"}


def test_worktrees_need_a_base_branch_that_exists(tmp_path: Path) -> None:
    project = make_mission(tmp_path, "worktrees")
    with (project / ".harness" / "config.yaml").open("a") as f:
        f.write("base_branch: nope\n")
    result = run_sh("worker", "next", "--backend", "scripted", "--script",
                    str(tmp_path / "work.yaml"), cwd=project)
    assert result.returncode == 2
    assert "base_branch" in result.stderr and "'nope'" in result.stderr


@pytest.mark.parametrize("value", ["parallel", "1"])
def test_an_unknown_workspace_is_a_usage_error_naming_the_key(tmp_path: Path,
                                                              value: str) -> None:
    project = make_mission(tmp_path, "shared")
    (project / ".harness" / "config.yaml").write_text(f"workspace: {value}\n")
    result = run_sh("worker", "next", "--backend", "scripted", "--script",
                    str(tmp_path / "work.yaml"), cwd=project)
    assert result.returncode == 2 and "key 'workspace'" in result.stderr
    assert not (project / ".harness" / "runs").exists() or not any(
        (project / ".harness" / "runs").iterdir())

SLOW = """
- tools:
    - {name: bash, input: {command: "echo partial > partial.txt; sleep 60"}}
- tools: [{name: finish, input: {summary: never reached}}]
"""


def test_sigkill_in_a_worktree_then_the_next_run_takes_it_over(tmp_path: Path) -> None:
    project = make_mission(tmp_path, "worktrees")
    tree = project / ".harness" / "worktrees" / "F-003"
    (tmp_path / "slow.yaml").write_text(SLOW)
    proc = subprocess.Popen([str(RUN_SH), "worker", "F-003", "--backend", "scripted",
                             "--script", str(tmp_path / "slow.yaml")], cwd=project,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, env=_env(None))
    deadline = time.monotonic() + 60
    while not (tree / "partial.txt").exists():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()

    report = json.loads(run_sh("status", "--json", cwd=project).stdout)
    assert len(report["interrupted"]) == 1
    assert [(r["feature"], r["state"]) for r in report["worktrees"]] == [
        ("F-003", "idle: the next run on the feature takes it over")]
    resumed = run_sh("worker", "F-003", "--backend", "scripted", "--script",
                     str(tmp_path / "work.yaml"), cwd=project)
    assert resumed.returncode == 0, resumed.stderr
    on_branch = git(project, "ls-tree", "--name-only", "harness/F-003").split()
    assert {"partial.txt", "own-F-003.txt"} <= set(on_branch)  # the killed run's work kept
    assert git(tree, "status", "--porcelain") == ""
    judged = run_sh("validator", "F-003", "--backend", "scripted", "--script",
                    str(tmp_path / "pass.yaml"), cwd=project)
    assert judged.returncode == 0, judged.stderr
    assert (project / "partial.txt").read_text() == "partial\n" and not tree.exists()
    assert statuses(project)["F-003"] == "done"
    assert git(project, "status", "--porcelain") == ""


def test_a_broken_worktree_is_pruned_and_made_again_from_its_branch(tmp_path: Path) -> None:
    project = make_mission(tmp_path, "worktrees")
    tree = project / ".harness" / "worktrees" / "F-002"
    args = ("worker", "F-002", "--backend", "scripted", "--script", str(tmp_path / "work.yaml"))
    assert run_sh(*args, cwd=project).returncode == 0
    first = git(project, "rev-parse", "harness/F-002").strip()
    shutil.rmtree(tree)
    doctor = run_sh("doctor", "--no-cron", cwd=project)
    assert "harness/F-002 (orphaned: its folder is gone)" in doctor.stdout
    assert "worktree prune" in doctor.stdout
    again = run_sh(*args, cwd=project)
    assert again.returncode == 0, again.stderr
    assert (tree / "own-F-002.txt").exists()
    assert git(project, "merge-base", "--is-ancestor", first, "harness/F-002") == ""


def test_status_and_doctor_name_orphaned_worktrees_with_their_fix(tmp_path: Path) -> None:
    project = make_mission(tmp_path, "worktrees")
    state = project / ".harness"
    assert run_sh("worker", "F-001", "--backend", "scripted", "--script",
                  str(tmp_path / "work.yaml"), cwd=project).returncode == 0
    plan = json.loads((state / "features.json").read_text())
    plan[0]["status"] = "done"  # finished by hand: its worktree is left over
    (state / "features.json").write_text(json.dumps(plan))
    status = run_sh("status", cwd=project).stdout
    assert "worktree harness/F-001 (done): orphaned: the feature is done" in status
    doctor = run_sh("doctor", "--no-cron", cwd=project)
    fix = f"git -C {project} worktree remove --force {state / 'worktrees' / 'F-001'}"
    assert "warn  worktrees: 1 orphaned: harness/F-001" in doctor.stdout and fix in doctor.stdout
    subprocess.run(fix.split(), check=True)
    subprocess.run(["git", "-C", str(project), "branch", "-D", "harness/F-001"], check=True,
                   capture_output=True)
    assert "ok    worktrees: no orphaned" in run_sh("doctor", "--no-cron", cwd=project).stdout


def test_next_in_worktrees_mode_skips_features_a_live_run_holds(tmp_path: Path) -> None:
    project = make_mission(tmp_path, "worktrees")
    state = project / ".harness"
    args = ("worker", "next", "--backend", "scripted", "--script", str(tmp_path / "work.yaml"))
    with hold_lock(lock_path(state, "worker-F-001")), hold_lock(lock_path(state, "tree-F-002")):
        taken = run_sh(*args, cwd=project)
        assert taken.returncode == 0 and "-worker-F-003" in taken.stdout
        assert run_sh(*args, cwd=project).returncode == 0  # F-004
        busy = run_sh(*args, cwd=project)
    assert busy.returncode == 3 and "every pending feature is held" in busy.stderr
    assert statuses(project) == {"F-001": "pending", "F-002": "pending",
                                 "F-003": "in_progress", "F-004": "in_progress"}


def test_a_merge_that_would_touch_the_persons_uncommitted_edit_waits(tmp_path: Path) -> None:
    project = make_mission(tmp_path, "worktrees")
    (project / "shared.txt").write_text(SHARED + "the person's uncommitted line\n")
    head = git(project, "rev-parse", "main")
    args = ("--backend", "scripted", "--script")
    assert run_sh("worker", "F-001", *args, str(tmp_path / "work.yaml"),
                  cwd=project).returncode == 0
    waiting = run_sh("validator", "F-001", *args, str(tmp_path / "pass.yaml"), cwd=project)
    assert waiting.returncode == 3 and "its merge waits" in waiting.stderr
    assert "main is checked out in" in waiting.stderr and "shared.txt" in waiting.stderr
    assert (project / "shared.txt").read_text() == SHARED + "the person's uncommitted line\n"
    assert git(project, "rev-parse", "main") == head and statuses(project)["F-001"] == (
        "in_progress")
    assert " waiting: main is checked out in" in run_sh("status", cwd=project).stdout

    (project / "shared.txt").write_text(SHARED)  # the person puts their edit away
    merged = run_sh("validator", "F-001", *args, str(tmp_path / "pass.yaml"), cwd=project)
    assert merged.returncode == 0, merged.stderr
    assert "line 2 by F-001" in (project / "shared.txt").read_text()
    assert git(project, "status", "--porcelain") == "" and statuses(project)["F-001"] == "done"


def test_validator_next_takes_a_merge_that_waits_last(tmp_path: Path) -> None:
    """A passed feature whose merge waits on the person's checkout stays in_progress: `next`
    took it first again and again (a loop re-judged it each round, a model call each, exit
    3), and the features behind it were never validated all night."""
    project = make_mission(tmp_path, "worktrees")
    (project / "shared.txt").write_text(SHARED + "the person's uncommitted line\n")
    args = ("--backend", "scripted", "--script")
    for fid in ("F-001", "F-003"):
        assert run_sh("worker", fid, *args, str(tmp_path / "work.yaml"),
                      cwd=project).returncode == 0
    waiting = run_sh("validator", "next", *args, str(tmp_path / "pass.yaml"), cwd=project)
    assert waiting.returncode == 3 and "F-001 passed; its merge waits" in waiting.stderr
    after = run_sh("validator", "next", *args, str(tmp_path / "pass.yaml"), cwd=project)
    assert after.returncode == 0, after.stdout + after.stderr
    assert statuses(project)["F-003"] == "done" and statuses(project)["F-001"] == "in_progress"
    again = run_sh("validator", "next", *args, str(tmp_path / "pass.yaml"), cwd=project)
    assert again.returncode == 3 and "F-001 passed; its merge waits" in again.stderr  # its turn


def test_a_merge_that_would_overwrite_the_persons_ignored_file_waits(tmp_path: Path) -> None:
    """The person's `.env` is ignored in their checkout; the agent's branch un-ignores it and
    adds its own. `git merge --ff-only` overwrites ignored files without a word: the landing
    must wait instead, naming the file, and the person's `.env` stay theirs."""
    project = make_mission(tmp_path, "worktrees")
    (project / ".gitignore").write_text(".harness/\n.env\nbuild/\n")
    git(project, "commit", "-qam", "ignore .env")
    (project / ".env").write_text("MY_TOKEN=the person's\n")
    (project / "build").mkdir()
    (project / "build" / "cache").write_text("the person's build\n")
    (tmp_path / "env.yaml").write_text(r"""
- tools:
    - name: bash
      input:
        command: |
          printf '.harness/\n' > .gitignore && echo AGENT > .env
          mkdir -p build && echo AGENT > build/cache && echo x > own-F-001.txt
- tools: [{name: finish, input: {summary: done}}]
""")
    args = ("--backend", "scripted", "--script")
    assert run_sh("worker", "F-001", *args, str(tmp_path / "env.yaml"),
                  cwd=project).returncode == 0
    head = git(project, "rev-parse", "main")
    waiting = run_sh("validator", "F-001", *args, str(tmp_path / "pass.yaml"), cwd=project)
    assert waiting.returncode == 3 and "its merge waits" in waiting.stderr, waiting.stderr
    assert ".env" in waiting.stderr and "build/cache" in waiting.stderr
    assert (project / ".env").read_text() == "MY_TOKEN=the person's\n"
    assert (project / "build" / "cache").read_text() == "the person's build\n"
    assert git(project, "rev-parse", "main") == head


def test_a_landing_waits_out_the_persons_git_holding_their_index(tmp_path: Path) -> None:
    """The person's git holds index.lock in their checkout as the landing starts (an
    editor's `git status`, a `git commit` of theirs): the fast-forward is tried again for a
    while. It was refused at once, exit 3 'commit or stash there', the pass thrown away for
    another validator run (a model call) and the person told to fix what was not wrong."""
    import threading

    project = make_mission(tmp_path, "worktrees")
    args = ("--backend", "scripted", "--script")
    assert run_sh("worker", "F-004", *args, str(tmp_path / "work.yaml"),
                  cwd=project).returncode == 0
    index_lock = project / ".git" / "index.lock"
    index_lock.write_text("")

    def persons_git_ends() -> None:  # a second after the landing starts
        merge_lock = project / ".harness" / "locks" / "merge.lock"
        deadline = time.monotonic() + 60
        while not merge_lock.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(1.0)
        index_lock.unlink()

    ending = threading.Thread(target=persons_git_ends)
    ending.start()
    judged = run_sh("validator", "F-004", *args, str(tmp_path / "pass.yaml"), cwd=project)
    ending.join()
    assert judged.returncode == 0, judged.stdout + judged.stderr
    assert statuses(project)["F-004"] == "done"
    assert (project / "own-F-004.txt").read_text() == "F-004\n"


def test_a_base_branch_checked_out_nowhere_moves_by_its_ref_alone(tmp_path: Path) -> None:
    project = make_mission(tmp_path, "worktrees")
    git(project, "branch", "integration")
    with (project / ".harness" / "config.yaml").open("a") as f:
        f.write("base_branch: integration\n")
    args = ("--backend", "scripted", "--script")
    assert run_sh("worker", "F-004", *args, str(tmp_path / "work.yaml"),
                  cwd=project).returncode == 0
    judged = run_sh("validator", "F-004", *args, str(tmp_path / "pass.yaml"), cwd=project)
    assert judged.returncode == 0 and "not checked out anywhere" in judged.stdout
    assert git(project, "show", "integration:own-F-004.txt") == "F-004\n"
    assert not (project / "own-F-004.txt").exists()  # main, checked out here, did not move
    assert git(project, "status", "--porcelain") == ""


def test_the_fix_status_prints_for_an_orphan_quotes_its_names(tmp_path: Path) -> None:
    """A branch name may hold `;` and `$(...)` (an agent that once wrote the git folder can
    make one): the command `status` and `doctor` print to clear it must not run them."""
    project = make_mission(tmp_path, "worktrees")
    git(project, "branch", "harness/F-9;touch${IFS}pwned")
    status = run_sh("status", cwd=project)
    fix = next(line for line in status.stdout.splitlines() if "fix:" in line)
    command = fix.split("fix:", 1)[1].strip()
    subprocess.run(command, shell=True, cwd=tmp_path, check=True)
    assert not (tmp_path / "pwned").exists()
    assert git(project, "branch", "--list", "harness/*") == ""
