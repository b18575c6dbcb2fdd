"""The commit policy through real run.sh subprocesses: the person's work is never committed
and never lost, a loop never wedges on the harness's own leftovers, and a tree where a
commit cannot be made is refused at start unless the mission wants no commits."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import NO_COMMITS, RUN_SH, git_init, run_sh

FAKES = Path(__file__).parent / "fake_clis"
WRITE_HELLO = ("- tools: [{name: str_replace_based_edit_tool, input: {command: create, "
               "path: hello.txt, file_text: \"hi\\n\"}}]\n"
               "- tools: [{name: finish, input: {summary: wrote hello.txt}}]\n")


def git(project: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(project), *args], capture_output=True, text=True,
                          check=True).stdout


def committed_files(project: Path, rev: str = "HEAD") -> set[str]:
    return set(git(project, "show", "--name-only", "--format=", rev).split())


def worker(project: Path, tmp_path: Path, script: str = WRITE_HELLO,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    path = tmp_path / "script.yaml"
    path.write_text(script)
    return run_sh("worker", "F-004", "--backend", "scripted", "--script", str(path),
                  cwd=project, env=env)


@pytest.fixture
def repo(project: Path) -> Path:
    """The example project as a repository with a tracked README and ignored dumps."""
    git_init(project)
    (project / "README.md").write_text("# textstats\n")
    (project / ".gitignore").write_text(".harness/\n*.dump\n")
    git(project, "add", "-A")
    git(project, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "readme")
    return project


def test_a_tree_holding_the_persons_changes_is_refused_naming_them_and_the_ways_out(
        repo: Path, state: Path, tmp_path: Path) -> None:
    (repo / "README.md").write_text("# textstats\nmy edit\n")
    (repo / ".env.local").write_text("TOKEN=sk-secret\n")
    (repo / "big.dump").write_bytes(b"x" * 1000)  # ignored: never a change
    head = git(repo, "rev-parse", "HEAD")
    result = worker(repo, tmp_path)
    assert result.returncode == 3, result.stdout + result.stderr
    said = result.stderr
    assert "README.md" in said and ".env.local" in said and "big.dump" not in said
    assert "git stash -u" in said and "git commit" in said and "workspace: worktrees" in said
    assert git(repo, "rev-parse", "HEAD") == head
    assert not (repo / "hello.txt").exists() and not (state / "runs").exists()
    # the person stashes; the run commits its own work alone; the stash comes back intact
    git(repo, "stash", "-u")
    result = worker(repo, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert committed_files(repo) == {"hello.txt"}
    git(repo, "stash", "pop")
    assert (repo / "README.md").read_text() == "# textstats\nmy edit\n"
    assert (repo / ".env.local").read_text() == "TOKEN=sk-secret\n"


def test_a_run_whose_agent_never_acted_commits_nothing_and_does_not_wedge_the_next(
        repo: Path, state: Path, tmp_path: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    # Claude Code not logged in, having written a file of its own at start-up
    command = f"python3 {FAKES / 'claude.py'} not_logged_in .cli-state.json"
    result = run_sh("worker", "F-004", "--backend", "command", "--preset", "claude",
                    "--command", command, cwd=repo)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "never acted" in result.stdout + result.stderr
    assert git(repo, "rev-parse", "HEAD") == head and (repo / ".cli-state.json").exists()
    result = worker(repo, tmp_path)  # the CLI's file is the harness's: no refusal
    assert result.returncode == 0, result.stdout + result.stderr
    assert committed_files(repo) == {"hello.txt"}  # and not swept into the commit
    assert "?? .cli-state.json" in git(repo, "status", "--porcelain")


def test_a_validators_leftovers_stay_out_of_the_next_workers_commit(
        repo: Path, state: Path, tmp_path: Path) -> None:
    plan = json.loads((state / "features.json").read_text())
    for feature in plan:
        if feature["id"] == "F-004":
            feature.update(status="in_progress", verify="echo built > build.out")
    (state / "features.json").write_text(json.dumps(plan))
    verdict = tmp_path / "verdict.yaml"
    verdict.write_text("- tools: [{name: verdict, input: {verdict: fail, reason: not yet}}]\n"
                       "- tools: [{name: finish, input: {summary: failed}}]\n")
    result = run_sh("validator", "F-004", "--backend", "scripted", "--script", str(verdict),
                    cwd=repo)
    assert result.returncode == 1, result.stdout + result.stderr
    assert (repo / "build.out").exists()
    result = worker(repo, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert committed_files(repo) == {"hello.txt"}
    (repo / "build.out").write_text("the person's now\n")  # changed since: no longer ours
    result = worker(repo, tmp_path, WRITE_HELLO.replace("hello.txt", "again.txt"))
    assert result.returncode == 3 and "build.out" in result.stderr


def test_a_killed_workers_changes_are_committed_in_its_features_name_by_the_next_run(
        repo: Path, state: Path, tmp_path: Path) -> None:
    script = tmp_path / "slow.yaml"
    script.write_text(WRITE_HELLO.split("- tools: [{name: finish")[0] +
                      "- tools: [{name: bash, input: {command: 'sleep 60'}}]\n")
    first = subprocess.Popen([str(RUN_SH), "worker", "F-004", "--backend", "scripted",
                              "--script", str(script)], cwd=repo, start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while not (repo / "hello.txt").exists() and time.time() < deadline:
        time.sleep(0.05)
    os.killpg(first.pid, signal.SIGKILL)  # no `finally` runs: nothing is committed
    first.wait(timeout=30)
    killed = sorted((state / "runs").iterdir())[-1].name
    assert "?? hello.txt" in git(repo, "status", "--porcelain")
    result = worker(repo, tmp_path, WRITE_HELLO.replace("hello.txt", "more.txt"))
    assert result.returncode == 0, result.stdout + result.stderr
    log = git(repo, "log", "--format=%s", "-2").splitlines()
    assert log[1] == f"F-004: work run {killed} left uncommitted"
    assert committed_files(repo, "HEAD~1") == {"hello.txt"}
    assert committed_files(repo) == {"more.txt"}
    assert git(repo, "status", "--porcelain") == ""


def test_a_merge_in_progress_in_the_tree_is_refused(repo: Path, tmp_path: Path) -> None:
    git(repo, "checkout", "-qb", "side")
    (repo / "README.md").write_text("side\n")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "side")
    git(repo, "checkout", "-q", "-")
    (repo / "README.md").write_text("main\n")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "main")
    subprocess.run(["git", "-C", str(repo), "merge", "side"], capture_output=True)
    result = worker(repo, tmp_path)
    assert result.returncode == 3 and "a merge is in progress" in result.stderr


def no_git_path(tmp_path: Path) -> dict[str, str]:
    """A PATH with bash (run.sh's interpreter) and no git."""
    folder = tmp_path / "nogit"
    folder.mkdir()
    (folder / "bash").symlink_to("/bin/bash")
    return {"PATH": str(folder)}


@pytest.mark.parametrize(("case", "says"), [
    ("no repository", "is not in a git repository"),
    ("detached HEAD", "HEAD is detached"),
    ("no git", "git is not installed"),
])
def test_where_no_commit_can_be_made_a_run_is_refused_unless_the_mission_wants_none(
        project: Path, state: Path, tmp_path: Path, case: str, says: str) -> None:
    env = no_git_path(tmp_path) if case == "no git" else None
    if case != "no repository":
        git_init(project)
    if case == "detached HEAD":
        git(project, "checkout", "-q", "--detach")
    config = state / "config.yaml"
    config.write_text(config.read_text().replace(NO_COMMITS, ""))
    result = worker(project, tmp_path, env=env)
    assert result.returncode == 2, result.stdout + result.stderr
    assert says in result.stderr and "commit: false" in result.stderr
    assert not (project / "hello.txt").exists() and not (state / "runs").exists()
    config.write_text(config.read_text() + NO_COMMITS)
    result = worker(project, tmp_path, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "nothing committed (commit: false" in result.stdout + result.stderr


def test_commit_false_with_worktrees_is_refused(repo: Path, state: Path,
                                                 tmp_path: Path) -> None:
    (state / "config.yaml").write_text("workspace: worktrees\ncommit: false\n")
    result = worker(repo, tmp_path)
    assert result.returncode == 2 and "key 'commit'" in result.stderr


def test_in_a_worktree_a_run_whose_agent_never_acted_commits_nothing(
        repo: Path, state: Path) -> None:
    (state / "config.yaml").write_text("workspace: worktrees\n")
    base = git(repo, "rev-parse", "HEAD")
    command = f"python3 {FAKES / 'claude.py'} not_logged_in .cli-state.json"
    result = run_sh("worker", "F-004", "--backend", "command", "--preset", "claude",
                    "--command", command, cwd=repo)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "never acted" in result.stdout + result.stderr
    assert git(repo, "rev-parse", "harness/F-004") == base  # its branch got no commit


def test_a_project_in_a_subfolder_of_the_repository_with_its_state_not_ignored(
        tmp_path: Path, project: Path, state: Path) -> None:
    top = tmp_path / "repo"
    top.mkdir()
    app = top / "app"
    project.rename(app)  # the example mission, now in repo/app; .harness is not ignored
    config = app / ".harness" / "config.yaml"
    config.write_text(config.read_text().replace(NO_COMMITS, ""))
    (top / "README.md").write_text("top\n")
    git(top, "init", "-q")
    git(top, "add", "README.md")
    git(top, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    result = worker(app, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert committed_files(top) == {"app/hello.txt"}  # never the state directory
    (top / "README.md").write_text("the person's edit, outside the project folder\n")
    result = worker(app, tmp_path, WRITE_HELLO.replace("hello.txt", "two.txt"))
    assert result.returncode == 3 and "README.md" in result.stderr


def test_a_run_that_fails_before_its_call_leaves_no_run_in_flight(
        repo: Path, state: Path, tmp_path: Path) -> None:
    (state / "templates").mkdir()
    (state / "templates" / "worker.md.j2").write_text("{{ no_such_variable }}\n")
    result = worker(repo, tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    (state / "templates" / "worker.md.j2").unlink()
    (repo / "notes.txt").write_text("the person's, written after that run\n")
    result = worker(repo, tmp_path)  # not taken for a killed run's work and committed
    assert result.returncode == 3 and "notes.txt" in result.stderr


def test_doctor_says_whether_worker_runs_can_commit_here(project: Path, state: Path) -> None:
    result = run_sh("doctor", "--no-cron", cwd=project)
    assert "ok    commits: off (commit: false in config.yaml)" in result.stdout
    config = state / "config.yaml"
    config.write_text(config.read_text().replace(NO_COMMITS, ""))
    result = run_sh("doctor", "--no-cron", cwd=project)
    assert result.returncode == 2
    assert "FAIL  commits: " in result.stdout and "is not in a git repository" in result.stdout
    git_init(project)
    git(project, "checkout", "-q", "--detach")
    assert "FAIL  commits: " in run_sh("doctor", "--no-cron", cwd=project).stdout
    git(project, "checkout", "-q", "-")
    result = run_sh("doctor", "--no-cron", cwd=project)
    assert "ok    commits: each worker run commits its own changes" in result.stdout


def test_a_repository_git_cannot_work_in_is_exit_2_naming_it_not_a_traceback(
        repo: Path, tmp_path: Path) -> None:
    """An agent can break its `.git` (a damaged index): the next run's git fails, which was
    a traceback and exit 1 (a failed feature to a loop) on every run after; it is exit 2,
    naming the tree and git's own message, and a repaired repository runs again."""
    broken = ("- tools: [{name: bash, input: {command: \"echo w > w.txt; "
              "printf junk > .git/index\"}}]\n- tools: [{name: finish, input: {summary: s}}]\n")
    first = worker(repo, tmp_path, broken)
    assert first.returncode == 0 and "git commit failed" in first.stdout, first.stderr
    again = worker(repo, tmp_path)
    assert again.returncode == 2, again.stderr
    assert "Traceback" not in again.stderr and f"failed in {repo}" in again.stderr
    assert "index file smaller than expected" in again.stderr
    (repo / ".git" / "index").unlink()
    git(repo, "reset", "-q")
    assert worker(repo, tmp_path).returncode == 0


def test_a_persons_git_commit_with_its_editor_open_keeps_its_lock(repo: Path,
                                                                  tmp_path: Path) -> None:
    # `git commit -a` holds index.lock, unchanged, for as long as its editor is open: it is
    # the person's git at work, not a dead one's leftover
    (repo / "README.md").write_text("# textstats\nmy edit\n")
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nwhile [ ! -e \"$0.done\" ]; do sleep 0.1; done\n"
                      "echo 'my commit' > \"$1\"\n")
    editor.chmod(0o755)
    person = subprocess.Popen(["git", "-c", "user.name=p", "-c", "user.email=p@p", "commit",
                               "-a"], cwd=repo, env={**os.environ, "GIT_EDITOR": str(editor)},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 10
        while not (repo / ".git" / "index.lock").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        result = worker(repo, tmp_path, env={"HARNESS_LOCK_WAIT": "1"})
        assert result.returncode == 3, result.stdout + result.stderr
        assert "git" in result.stderr and str(person.pid) in result.stderr, result.stderr
        assert (repo / ".git" / "index.lock").exists()
    finally:
        Path(f"{editor}.done").touch()
        said = person.communicate(timeout=30)[0]
    assert person.returncode == 0, said
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "log", "-1", "--format=%s").strip() == "my commit"
