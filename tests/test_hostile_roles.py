"""Round 4 of issue 29: what a hostile planner writes into the plan, and what the agent sees
of the harness's environment, through real run.sh runs (docs/SANDBOX.md)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import git_init, run_sh

from harness.agent import sandbox

PROBLEM = sandbox.bwrap_problem()

PASS = "- tools: [{name: verdict, input: {verdict: pass, reason: ok}}]\n"


def scripted_worker(project: Path, turns: str, env: dict[str, str] | None = None
                    ) -> subprocess.CompletedProcess:
    """`run.sh worker F-004` with the scripted backend playing `turns` (YAML)."""
    script = project / "turns.yaml"
    script.write_text(turns)
    return run_sh("worker", "F-004", "--backend", "scripted", "--script", str(script),
                  cwd=project, env=env)


def test_a_verify_too_long_to_run_is_refused_naming_the_feature_and_key(project: Path,
                                                                        state: Path) -> None:
    """A planner's verify of 200 KB was taken into the plan; every validator run of that
    feature then died in exec ('run.sh: .../python: Argument list too long'), exit 2 naming
    neither the plan nor the key, and the next run again."""
    plan = json.loads((state / "features.json").read_text())
    big = "true " + "#" * 200_000
    proposal = project / "plan.json"
    proposal.write_text(json.dumps([{**plan[0], "verify": big}]))
    result = run_sh("plan", str(proposal), cwd=project)
    assert result.returncode == 2, result.stderr
    assert "key 'verify'" in result.stderr and "bytes" in result.stderr
    assert json.loads((state / "features.json").read_text()) == plan  # nothing written

    plan[3].update(verify=big, status="in_progress")
    (state / "features.json").write_text(json.dumps(plan))
    script = project / "pass.yaml"
    script.write_text(PASS)
    result = run_sh("validator", "F-004", "--backend", "scripted", "--script", str(script),
                    cwd=project)
    assert result.returncode == 2, result.stderr
    assert "features.json" in result.stderr and "key 'verify'" in result.stderr


SECRETS = {"PGPASSWORD": "pg-secret-5a1", "API_KEY": "plain-api-key-7b2",
           "STRIPE_SECRET_KEY": "stripe-secret-9c3", "SSH_PRIVATE_KEY": "ssh-private-4d4",
           "DB_PASSPHRASE": "db-phrase-2e5"}


def test_no_secret_reaches_the_agents_shell(project: Path, state: Path) -> None:
    """Secret-named variables the harness's own rule missed (PGPASSWORD, a bare API_KEY,
    *_SECRET_KEY, *_PRIVATE_KEY, *_PASSPHRASE) and any variable the env file holds (the
    file is for secrets, whatever their names) reached the agent's `env`, so the model."""
    (state / "env").write_text("DB_URL=postgres://u:file-secret-6f6@h/db\n"
                               "SENTRY_DSN=https://file-dsn-8a7@o1.ingest.example/1\n")
    (state / "env").chmod(0o600)
    result = scripted_worker(
        project, "- tools: [{name: bash, input: {command: 'env > seen.txt'}}]\n"
                 "- tools: [{name: finish, input: {summary: done}}]\n", env=SECRETS)
    assert result.returncode == 0, result.stderr
    seen = (project / "seen.txt").read_text()
    assert "FEATURE_ID=F-004" in seen  # the shell ran, and wrote what it saw
    for value in [*SECRETS.values(), "file-secret-6f6", "file-dsn-8a7"]:
        assert value not in seen


@pytest.mark.skipif(PROBLEM is not None, reason=f"no bubblewrap sandbox here: {PROBLEM}")
def test_the_users_env_file_stays_hidden_when_a_role_shows_its_folder(project: Path,
                                                                      state: Path,
                                                                      tmp_path: Path) -> None:
    """The user's env file (~/.config/autonomous-harness/env, keys for cron) was hidden only
    by $HOME's tmpfs: a role listing `~/.config` in sandbox_paths (for gh, gcloud, ...)
    showed it to the agent, key and all."""
    home = tmp_path / "home"
    folder = home / ".config" / "autonomous-harness"
    folder.mkdir(parents=True)
    (folder / "env").write_text("OPENAI_API_KEY=sk-user-env-file-secret-1234\n")
    (folder / "env").chmod(0o600)
    (home / ".config" / "gh").mkdir()
    (home / ".config" / "gh" / "hosts.yml").write_text("shown: yes\n")
    (state / "config.yaml").write_text((state / "config.yaml").read_text() + "sandbox: bwrap\n")
    (state / "roles").mkdir(exist_ok=True)
    (state / "roles" / "worker.yaml").write_text('sandbox_paths: {"~/.config": ro}\n')
    result = scripted_worker(
        project, "- tools: [{name: bash, input: {command: 'cat ~/.config/gh/hosts.yml "
                 "~/.config/autonomous-harness/env > seen.txt 2>&1'}}]\n"
                 "- tools: [{name: finish, input: {summary: done}}]\n", env={"HOME": str(home)})
    assert result.returncode == 0, result.stderr
    seen = (project / "seen.txt").read_text()
    assert "shown: yes" in seen  # the folder the role asked for is there
    assert "sk-user-env-file-secret" not in seen


def test_the_editor_does_not_read_the_users_env_file_in_the_tree(project: Path) -> None:
    """A mission on a folder that is also $HOME (a dotfiles repository): the editor opened
    ~/.config/autonomous-harness/env, beneath the tree, though it holds the keys for cron."""
    folder = project / ".config" / "autonomous-harness"
    folder.mkdir(parents=True)
    (folder / "env").write_text("# cron's keys: comment-secret-77\nX_API_KEY=abcdefgh\n")
    (folder / "env").chmod(0o600)
    result = scripted_worker(
        project, "- tools: [{name: str_replace_based_edit_tool, input: {command: view, "
                 "path: .config/autonomous-harness/env}}]\n"
                 "- tools: [{name: finish, input: {summary: done}}]\n", env={"HOME": str(project)})
    assert result.returncode == 0, result.stderr
    transcript = next((project / ".harness" / "runs").glob("*/transcript.jsonl")).read_text()
    assert "harness's own folders" in transcript
    assert "comment-secret-77" not in transcript


def test_a_landing_never_writes_into_the_missions_state(tmp_path: Path) -> None:
    """Worktrees mode: a worker un-ignored `.harness/` in its worktree and added
    `.harness/roles/worker.yaml` (`sandbox: none`); the validator's pass fast-forwarded the
    person's checkout, which holds the live state there, so every later worker ran
    unsandboxed. The landing is refused instead, naming the file; the feature goes back."""
    project = tmp_path / "project"
    state = project / ".harness"
    state.mkdir(parents=True)
    (project / "README.md").write_text("the project\n")
    git_init(project)
    (state / "config.yaml").write_text("workspace: worktrees\n")
    (state / "features.json").write_text(json.dumps([
        {"id": "F-001", "title": "one", "description": "d", "acceptance_criteria": ["a"],
         "verify": "true"}]))
    work = tmp_path / "work.yaml"
    work.write_text("- tools: [{name: bash, input: {command: \"printf '' > .gitignore && "
                    "mkdir -p .harness/roles && echo 'sandbox: none' > "
                    ".harness/roles/worker.yaml && echo x > own.txt\"}}]\n"
                    "- tools: [{name: finish, input: {summary: done}}]\n")
    (tmp_path / "pass.yaml").write_text(PASS)
    args = ("--backend", "scripted", "--script")
    assert run_sh("worker", "F-001", *args, str(work), cwd=project).returncode == 0
    result = run_sh("validator", "F-001", *args, str(tmp_path / "pass.yaml"), cwd=project)
    assert not (state / "roles" / "worker.yaml").exists()
    assert result.returncode == 1, result.stderr
    assert ".harness/roles/worker.yaml" in result.stderr and "state" in result.stderr
    assert json.loads((state / "features.json").read_text())[0]["status"] == "pending"


def test_the_editor_keeps_a_read_only_path_given_under_home(project: Path, state: Path) -> None:
    """`sandbox_paths: {~/project/tests: ro}` (tests the agent must not rewrite) held against
    the shell but not the editor, which took only paths starting with /."""
    (project / "tests").mkdir()
    (project / "tests" / "test_it.py").write_text("assert False\n")
    (state / "roles").mkdir(exist_ok=True)
    (state / "roles" / "worker.yaml").write_text('sandbox_paths: {"~/project/tests": ro}\n')
    result = scripted_worker(
        project, "- tools: [{name: str_replace_based_edit_tool, input: {command: create, "
                 "path: tests/test_it.py, file_text: 'assert True'}}]\n"
                 "- tools: [{name: finish, input: {summary: done}}]\n",
        env={"HOME": str(project.parent)})
    assert result.returncode == 0, result.stderr
    assert (project / "tests" / "test_it.py").read_text() == "assert False\n"


def test_the_state_stays_ignored_when_an_agent_rewrites_gitignore(tmp_path: Path) -> None:
    """`init` ignored `.harness/` only in the project's .gitignore, a file the agent writes:
    a worker's `echo node_modules/ > .gitignore` (agents make one so) left the state, `env`
    and its keys too, untracked in the person's `git status`, one `git add -A` from their
    next commit and push."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text("the project\n")
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=project, check=True)
    assert run_sh("init", cwd=project).returncode == 0
    state = project / ".harness"
    (state / "env").write_text("OPENAI_API_KEY=sk-in-the-env-file-0000000000\n")
    (state / "env").chmod(0o600)
    (state / "features.json").write_text(json.dumps([
        {"id": "F-001", "title": "one", "description": "d", "acceptance_criteria": ["a"]}]))
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "s"],
                   cwd=project, check=True)
    work = tmp_path / "work.yaml"
    work.write_text("- tools: [{name: bash, input: {command: 'echo node_modules/ > .gitignore'}}]"
                    "\n- tools: [{name: finish, input: {summary: done}}]\n")
    result = run_sh("worker", "F-001", "--backend", "scripted", "--script", str(work),
                    cwd=project, env={"OPENAI_API_KEY": ""})
    assert result.returncode == 0, result.stderr
    assert (project / ".gitignore").read_text() == "node_modules/\n"
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                            cwd=project, capture_output=True, text=True, check=True).stdout
    assert ".harness" not in status


@pytest.mark.skipif(PROBLEM is not None, reason=f"no bubblewrap sandbox here: {PROBLEM}")
def test_a_symlink_an_agent_left_where_a_role_path_goes_breaks_no_later_run(
        project: Path, state: Path) -> None:
    """A role lists a folder in the tree (`vendor`, read-only) before it exists; a worker
    makes it a symlink (to /tmp, to the state). bwrap then could not make its mount, so
    every later run of the role had no shell at all ('Can't bind mount'), nor verify."""
    (state / "config.yaml").write_text((state / "config.yaml").read_text() + "sandbox: bwrap\n")
    (state / "roles").mkdir(exist_ok=True)
    (state / "roles" / "worker.yaml").write_text(
        f'sandbox_paths: {{"{project}/vendor": ro, "{project}/cache": rw}}\n')
    first, second = project / "a.yaml", project / "b.yaml"
    first.write_text(f"- tools: [{{name: bash, input: {{command: 'ln -s /tmp vendor && ln -s "
                     f"{state} cache'}}}}]\n- tools: [{{name: finish, input: {{summary: x}}}}]\n")
    second.write_text("- tools: [{name: bash, input: {command: 'echo shell-ran > ran.txt; "
                      "ls cache/ vendor/ >> ran.txt 2>&1'}}]\n"
                      "- tools: [{name: finish, input: {summary: x}}]\n")
    for script in (first, second):
        result = run_sh("worker", "F-004", "--backend", "scripted", "--script", str(script),
                        cwd=project)
        assert result.returncode == 0, result.stderr
    ran = (project / "ran.txt").read_text()
    assert ran.startswith("shell-ran")
    assert "features.json" not in ran and "env" not in ran.split()


@pytest.mark.skipif(PROBLEM is not None, reason=f"no bubblewrap sandbox here: {PROBLEM}")
def test_no_vsock_socket_inside(project: Path, state: Path) -> None:
    """AF_VSOCK, the host and its VMs' channel, has no network namespace: `--unshare-net`
    does not cut it, and Docker's default profile refuses the socket; ours let the agent
    make one (nothing is connected to here: making it is the whole check)."""
    (state / "config.yaml").write_text((state / "config.yaml").read_text() + "sandbox: bwrap\n")
    result = scripted_worker(
        project, "- tools: [{name: bash, input: {command: \"python3 -c 'import socket; "
                 "socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)' 2> vsock.txt; "
                 "echo $? >> vsock.txt\"}}]\n"
                 "- tools: [{name: finish, input: {summary: done}}]\n")
    assert result.returncode == 0, result.stderr
    said = (project / "vsock.txt").read_text()
    assert "Operation not permitted" in said and said.split()[-1] == "1", said
