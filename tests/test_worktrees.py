"""Many workers, one repository: the shared tree's lock, and `workspace: worktrees` (a git
worktree per feature, merged into the base branch on a pass) with real run.sh subprocesses
and the scripted backend."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from conftest import RUN_SH, git_init, run_sh

from harness.state.plan import load_plan

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
    import os
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

