"""`sandbox: bwrap`, with real bubblewrap: from inside the tool shell, `verify` and an agent
CLI, what lies outside the working directory is out of reach, and work inside it goes on.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT, run_sh
from fake_api import make_session

from harness.agent import sandbox
from harness.agent.tools import ToolBox
from harness.backends.command import CommandBackend
from harness.errors import SandboxError
from harness.run.verify import run_verify
from harness.types import FINISHED, SandboxPolicy

PROBLEM = sandbox.bwrap_problem()
needs_bwrap = pytest.mark.skipif(PROBLEM is not None,
                                 reason=f"no bubblewrap sandbox here: {PROBLEM}")


@pytest.fixture
def canary() -> Iterator[Path]:
    """A private key stand-in in the real ~/.ssh (the sandbox hides $HOME, not only /tmp)."""
    ssh = Path.home() / ".ssh"
    made = not ssh.exists()
    ssh.mkdir(mode=0o700, exist_ok=True)
    path = ssh / f"id_test.{uuid.uuid4().hex[:8]}"
    path.write_text("CANARY-PRIVATE-KEY\n")
    path.chmod(0o600)
    try:
        yield path
    finally:
        path.unlink()
        if made:
            ssh.rmdir()


@pytest.fixture
def box(tmp_path: Path, isolated_env: Path) -> Iterator[ToolBox]:
    """A worker's tools in bwrap; the state directory inside the working directory, as
    `run.sh init` makes it, and the real harness home."""
    workdir = tmp_path / "work"
    state = workdir / ".harness"
    state.mkdir(parents=True)
    (state / "raw.md").write_text("SECRET-RAW-LINE\n")
    (isolated_env / "worker.md").write_text("SECRET-IDENTITY\n")
    policy = SandboxPolicy("bwrap", state=state, identity=isolated_env, harness_home=ROOT)
    with ToolBox(make_session(tmp_path, state=state, home=ROOT, sandbox=policy)) as tools:
        yield tools


def bash(tools: ToolBox, command: str) -> tuple[str, bool]:
    result = tools.execute("bash", {"command": command})
    return result.text, "[exit code 0]" in result.text


@pytest.fixture
def server() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that greets each connection; its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"HELLO-FROM-HOST\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    listener.close()


def connect(port: int) -> str:
    return f"exec 3<>/dev/tcp/127.0.0.1/{port} && head -1 <&3"


@needs_bwrap
def test_the_shell_cannot_read_home_even_as_root_trying_to_unmount(box, canary):
    out, _ = bash(box, f'umount "$HOME" 2>/dev/null; umount -l "$HOME" 2>/dev/null; '
                       f'cat ~/.ssh/{canary.name}; echo "cat=$?"; ls -A "$HOME" | wc -l')
    assert "CANARY" not in out and "cat=1" in out and out.startswith("cat: "), out
    assert out.splitlines()[-2] == "0", out  # $HOME is empty


@needs_bwrap
def test_the_shell_cannot_write_outside_the_working_directory(box, tmp_path):
    beside, in_home = tmp_path / "beside.txt", Path.home() / f"outside-{uuid.uuid4().hex}"
    out, ok = bash(box, "echo x > /etc/harness-sandbox-test")
    assert not ok and "Read-only file system" in out, out
    bash(box, f"echo x > {beside}; echo x > {in_home}; echo x > {ROOT}/escape.txt")
    assert not beside.exists() and not in_home.exists() and not (ROOT / "escape.txt").exists()


@needs_bwrap
def test_the_state_identity_and_harness_home_are_hidden(box, isolated_env):
    state = box.session.state
    out, ok = bash(box, f"cat {state}/raw.md {isolated_env}/worker.md; ls {ROOT}/harness")
    assert "SECRET" not in out and not ok, out
    # the harness's own tools still reach the state directory
    assert not box.execute("note", {"kind": "TRICK", "text": "noted from the sandbox"}).is_error
    assert "noted from the sandbox" in (state / "raw.md").read_text()


@needs_bwrap
def test_a_feature_worktree_under_the_state_is_writable_and_the_rest_hidden(tmp_path,
                                                                           isolated_env):
    # workspace: worktrees puts a feature's tree at <state>/worktrees/F-xxx: the working
    # directory then lies inside what the sandbox hides, and must be mounted over it
    state = tmp_path / "work" / ".harness"
    tree = state / "worktrees" / "F-001"
    tree.mkdir(parents=True)
    (state / "raw.md").write_text("SECRET-RAW-LINE\n")
    (state / "worktrees" / "F-002").mkdir()
    (state / "worktrees" / "F-002" / "other.txt").write_text("ANOTHER-FEATURE\n")
    policy = SandboxPolicy("bwrap", state=state, identity=isolated_env, harness_home=ROOT)
    session = make_session(tmp_path, workdir=tree, state=state, home=ROOT, sandbox=policy)
    with ToolBox(session) as tools:
        out, ok = bash(tools, "echo built > out.txt && cat out.txt")
        assert ok and "built" in out, out
        out, _ = bash(tools, f"cat {state}/raw.md {state}/worktrees/F-002/other.txt")
        assert "SECRET" not in out and "ANOTHER-FEATURE" not in out, out
    assert (tree / "out.txt").read_text() == "built\n"


@needs_bwrap
def test_run_sh_note_is_refused_with_a_pointer_to_the_note_tool(box):
    out, ok = bash(box, "run.sh note TRICK through the file system; echo code=$?")
    assert "code=2" in out and "`note`" in out and "sandbox" in out, out
    assert "through the file system" not in (box.session.state / "raw.md").read_text()


@needs_bwrap
def test_no_network_unless_the_role_turns_it_on(box, server, tmp_path):
    out, _ = bash(box, connect(server))
    assert "HELLO-FROM-HOST" not in out, out
    policy = SandboxPolicy("bwrap", network=True)
    with ToolBox(make_session(tmp_path, home=ROOT, sandbox=policy)) as networked:
        assert "HELLO-FROM-HOST" in bash(networked, connect(server))[0]
    with ToolBox(make_session(tmp_path, home=ROOT)) as plain:  # the test itself can connect
        assert "HELLO-FROM-HOST" in bash(plain, connect(server))[0]


@needs_bwrap
def test_building_and_testing_inside_the_working_directory_works(box):
    steps = [
        "mkdir -p pkg/tests && cd pkg && export GREETING=hi",
        "printf 'def add(a, b):\\n    return a + b\\n' > calc.py",
        "printf 'import unittest\\nfrom calc import add\\nclass T(unittest.TestCase):\\n"
        "    def test_add(self):\\n        self.assertEqual(add(2, 3), 5)\\n' > tests/test_calc.py",
        "touch tests/__init__.py && python3 -m unittest discover -s tests -t . 2>&1 | tail -1",
        "echo $GREETING $(basename $PWD) > built.txt && echo t > /tmp/scratch && cat /tmp/scratch",
    ]
    outputs = [bash(box, step) for step in steps]
    assert all(ok for _, ok in outputs), outputs
    assert "OK" in outputs[3][0]
    assert (box.session.workdir / "pkg" / "built.txt").read_text() == "hi pkg\n"


@needs_bwrap
def test_verify_runs_in_the_validators_sandbox(tmp_path, canary):
    workdir = tmp_path / "work"
    workdir.mkdir()
    policy = SandboxPolicy("bwrap", harness_home=ROOT)
    result = run_verify(f"touch made.txt && cat ~/.ssh/{canary.name}", workdir, 60, 4000, policy)
    assert result["exit_code"] != 0 and "CANARY" not in result["output"], result
    assert (workdir / "made.txt").exists()


@needs_bwrap
def test_an_agent_cli_runs_in_the_sandbox(tmp_path, canary):
    policy = SandboxPolicy("bwrap", harness_home=ROOT)
    session = make_session(tmp_path, home=ROOT, sandbox=policy,
                           options={"command": ["sh", "-c", f"cat; cat ~/.ssh/{canary.name}; "
                                                "touch made.txt; exit 0"]})
    outcome = CommandBackend().run("the prompt\n", session)
    assert outcome.status == FINISHED and "the prompt" in outcome.summary
    assert "CANARY" not in outcome.summary and (session.workdir / "made.txt").exists()


def test_a_missing_bwrap_is_an_error_naming_the_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxError, match="bwrap is not installed.*bubblewrap.*sandbox: none"):
        sandbox.require(SandboxPolicy("bwrap"))
    sandbox.require(SandboxPolicy("none"))  # asks for nothing, needs nothing


def fake_failing_bwrap(folder: Path) -> dict[str, str]:
    """PATH with a bwrap that fails as one does when user namespaces are off."""
    folder.mkdir()
    (folder / "bwrap").write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new "
                                  "namespace' >&2\nexit 1\n")
    (folder / "bwrap").chmod(0o755)
    return {"PATH": f"{folder}:{os.environ['PATH']}"}


def test_a_role_asking_for_an_unusable_sandbox_exits_2_and_runs_nothing(project, tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("- tools: [{name: bash, input: {command: 'touch ran.txt'}}]\n")
    env = fake_failing_bwrap(tmp_path / "bin")
    result = run_sh("worker", "F-004", "--backend", "scripted", "--script", str(script),
                    "--sandbox", "bwrap", cwd=project, env=env)
    assert result.returncode == 2, result.stderr
    assert "No permissions to creating new namespace" in result.stderr
    assert "install bubblewrap" in result.stderr and "sandbox: none" in result.stderr
    assert not (project / "ran.txt").exists()
    assert not list((project / ".harness" / "runs").glob("*"))


def test_doctor_checks_the_sandbox_a_role_asks_for(project, tmp_path):
    roles = project / ".harness" / "roles"
    roles.mkdir(exist_ok=True)
    (roles / "worker.yaml").write_text((ROOT / "roles" / "worker.yaml").read_text()
                                       + "sandbox: bwrap\n")
    result = run_sh("doctor", "--no-cron", cwd=project, env=fake_failing_bwrap(tmp_path / "b"))
    assert result.returncode == 2
    line = next(x for x in result.stdout.splitlines() if "sandbox worker" in x)
    assert line.startswith("FAIL") and "No permissions" in line, result.stdout
    assert "sandbox validator" not in result.stdout  # it did not ask
    if PROBLEM is None:
        healthy = run_sh("doctor", "--no-cron", cwd=project)
        assert "ok    sandbox worker: bwrap makes the sandbox" in healthy.stdout, healthy.stdout


def test_sandbox_paths_must_be_absolute_or_in_home(project):
    roles = project / ".harness" / "roles"
    roles.mkdir(exist_ok=True)
    (roles / "worker.yaml").write_text("template: worker.md.j2\nsandbox: bwrap\n"
                                       "sandbox_paths: {.cache: rw}\n")
    result = run_sh("worker", "F-004", "--dry-run", cwd=project)
    assert result.returncode == 2 and "sandbox_paths" in result.stderr, result.stderr


def test_bwrap_mounts_go_outermost_first(tmp_path):
    work, home = tmp_path / "work", tmp_path / "home"
    (work / ".harness").mkdir(parents=True)
    (home / ".cache").mkdir(parents=True)
    policy = SandboxPolicy("bwrap", paths={"~/.cache": "rw", "/opt/tools": "ro"},
                           state=work / ".harness", harness_home=ROOT)
    args = sandbox.bwrap_args(policy, work, home)
    pos: dict[str, int] = {}
    for i, arg in enumerate(args):
        pos.setdefault(arg, i)
    # outermost first: each mount must come after those of the folders holding it
    assert pos[str(home)] < pos[str(home / ".cache")]
    assert pos[str(work)] < pos[str(work / ".harness")]
    assert args[pos[str(home / ".cache")] - 1] == "--bind-try"
    assert args[pos["/opt/tools"] - 1] == "--ro-bind-try"
    assert "--unshare-net" in args and "--die-with-parent" in args and "--unshare-pid" in args
    assert "--unshare-net" not in sandbox.bwrap_args(SandboxPolicy("bwrap", network=True), work)


def test_a_dry_run_records_the_sandbox_and_needs_no_bwrap(project, tmp_path):
    result = run_sh("worker", "F-004", "--dry-run", "--sandbox", "bwrap", cwd=project,
                    env=fake_failing_bwrap(tmp_path / "bin"))
    assert result.returncode == 0, result.stderr
    manifest = next((project / ".harness" / "runs").glob("*/manifest.json")).read_text()
    assert '"sandbox": "bwrap"' in manifest


@needs_bwrap
def test_a_validator_run_with_the_sandbox_runs_verify_in_it(project, tmp_path):
    features = json.loads((project / ".harness" / "features.json").read_text())
    features[0]["verify"] = "ls .harness > seen.txt; cat .harness/raw.md"
    (project / ".harness" / "features.json").write_text(json.dumps(features))
    script = tmp_path / "judge.yaml"
    script.write_text("- tools: [{name: verdict, input: {verdict: pass, reason: fine}}]\n")
    result = run_sh("validator", "F-001", "--backend", "scripted", "--script", str(script),
                    "--sandbox", "bwrap", cwd=project)
    # the verify's failure, not the verdict, decides: raw.md was out of its reach
    assert result.returncode == 1 and "raw.md` exited 1" in result.stderr, result.stderr
    manifest = json.loads(next((project / ".harness" / "runs").glob("*/manifest.json"))
                          .read_text())
    assert manifest["sandbox"] == "bwrap" and manifest["verify"]["exit_code"] == 1, manifest
    assert (project / "seen.txt").read_text() == ""  # the state directory looked empty


def test_an_agent_cli_preset_gets_its_login_folders_and_the_network_and_no_more():
    from harness.backends.cli_presets import PRESETS, sandbox_for

    policy = sandbox_for(PRESETS["claude"], SandboxPolicy("bwrap", paths={"~/.claude": "ro"}))
    assert policy.network and policy.paths == {"~/.claude": "ro", "~/.claude.json": "rw"}
    assert sandbox_for(PRESETS["codex"], SandboxPolicy("bwrap")).paths == {"~/.codex": "rw"}
    generic = SandboxPolicy("bwrap")
    assert sandbox_for(PRESETS["generic"], generic) is generic  # a command of the role's own
    assert sandbox_for(PRESETS["claude"], SandboxPolicy("none")).paths == {}
