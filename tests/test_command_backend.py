"""The command backend: argv and environment, then real subprocesses of stand-in CLIs.

The parsers of what the CLIs print are tested on literal inputs in test_cli_results.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from conftest import RUN_SH, run_sh

from harness.backends.cli_presets import build_argv, cli_model, docs_read_by
from harness.backends.cli_results import UsageLimitReached
from harness.backends.command import CommandBackend, build_env
from harness.errors import BackendError, BudgetError, UsageError
from harness.types import CAPPED, FINISHED, GAVE_UP, Caps, Session

FAKES = Path(__file__).parent / "fake_clis"
PY = sys.executable
PRICES = {"m": {"input_tokens": 3.0, "output_tokens": 15.0, "cache_read_input_tokens": 0.3}}


def make_session(tmp_path: Path, events: list | None = None, **options) -> Session:
    workdir = tmp_path / "work"
    workdir.mkdir(exist_ok=True)
    caps = Caps(turns=options.pop("turns", 50), wall_seconds=options.pop("wall", 30))
    return Session(
        run_id="1777000000-worker-F-001",
        role="worker",
        feature_id=options.pop("feature_id", "F-001"),
        workdir=workdir,
        state=tmp_path / "work" / ".harness",
        home=tmp_path / "home",
        model=options.pop("model", ""),
        caps=caps,
        tools=[],
        prices=PRICES,
        record=(events if events is not None else []).append,
        check_budget=lambda cost: None,
        options=options,
    )


def fake(name: str, *args: str) -> list[str]:
    return [PY, str(FAKES / name), *args]


# --- argv and environment ------------------------------------------------------------


def test_claude_preset_argv_adds_model_turn_cap_and_what_it_may_do_unasked():
    argv, preset = build_argv({"preset": "claude"}, "claude-sonnet-4-5", 12)
    assert argv == [
        "claude", "-p", "--output-format", "stream-json", "--verbose",
        "--model", "claude-sonnet-4-5", "--max-turns", "12",
        "--permission-mode", "acceptEdits", "--allowedTools", "Bash",
    ]  # fmt: skip
    assert preset.parser == "claude"
    options = {"preset": "claude", "permission_mode": "bypassPermissions", "allowed_tools": []}
    assert build_argv(options, "", None)[0] == [
        "claude", "-p", "--output-format", "stream-json", "--verbose",
        "--permission-mode", "bypassPermissions",
    ]  # fmt: skip
    options = {"preset": "claude", "allowed_tools": ["Bash(pytest:*)", "Read"]}
    assert build_argv(options, "", None)[0][-2:] == ["--allowedTools", "Bash(pytest:*),Read"]


def test_codex_preset_may_write_the_workspace_and_reads_prompt_from_stdin_last():
    argv, preset = build_argv({"preset": "codex", "args": ["-c", "x=1"]}, "o3", 5)
    assert argv == ["codex", "exec", "--json", "--skip-git-repo-check", "-m", "o3",
                    "--sandbox", "workspace-write", "-c", "x=1", "-"]
    assert preset.parser == "codex"
    argv, _ = build_argv({"preset": "codex", "sandbox": "read-only"}, "", None)
    assert argv == ["codex", "exec", "--json", "--skip-git-repo-check", "--sandbox", "read-only",
                    "-"]


def test_a_preset_passes_only_a_model_its_provider_serves():
    # the role's default model is Anthropic's: Codex would warn and its API refuse it
    argv, _ = build_argv({"preset": "codex"}, "claude-sonnet-4-5", None)
    assert "-m" not in argv
    assert cli_model({"preset": "codex"}, "claude-sonnet-4-5") == ""
    assert cli_model({"preset": "codex"}, "gpt-5-codex") == "gpt-5-codex"
    assert cli_model({"preset": "claude"}, "gpt-5") == ""
    assert cli_model({"preset": "claude"}, "opus") == "opus"
    assert cli_model({"preset": "generic", "command": "x"}, "anything") == "anything"


def test_the_claude_preset_passes_the_dollar_cap():
    argv, _ = build_argv({"preset": "claude"}, "claude-sonnet-4-5", 5, 2.5)
    assert argv[argv.index("--max-budget-usd") + 1] == "2.5"


def test_docs_a_preset_reads_itself_are_named_for_the_prompt_to_leave_out():
    assert docs_read_by("command", {"preset": "codex"}) == ("AGENTS.md",)
    assert docs_read_by("command", {"preset": "claude"}) == ("CLAUDE.md",)
    assert docs_read_by("command", {"preset": "codex", "command": "./my-agent"}) == ()
    assert docs_read_by("anthropic", {"preset": "codex"}) == ()


def test_explicit_command_overrides_argv_but_keeps_parser():
    argv, preset = build_argv({"preset": "codex", "command": "my-codex --flag 'two words'"}, "x", 1)
    assert argv == ["my-codex", "--flag", "two words"]
    assert preset.parser == "codex"
    assert build_argv({"command": ["./agent.sh", 3]}, "", None)[0] == ["./agent.sh", "3"]


def test_bad_preset_or_generic_without_command_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown command preset 'aider'"):
        build_argv({"preset": "aider"}, "", None)
    with pytest.raises(UsageError, match="needs a `command`"):
        build_argv({"preset": "generic"}, "", None)


def test_env_is_scrubbed_names_the_run_and_keeps_only_what_the_role_opts_into(tmp_path):
    session = make_session(tmp_path, pass_env=["GITHUB_TOKEN"], feature_id=None)
    environ = {
        "PATH": "/usr/bin",
        "HOME": "/root",
        "ANTHROPIC_API_KEY": "sk-ant-cli-key-000000000000",
        "FOO_API_KEY": "canary-foo-123456",
        "GITHUB_TOKEN": "ghp_passed_on_purpose",
        "DB_PASSWORD": "hunter2hunter2",
    }
    env = build_env(session, environ)
    assert "ANTHROPIC_API_KEY" not in env  # pass_env names what is passed
    assert env["GITHUB_TOKEN"] == environ["GITHUB_TOKEN"]
    assert "FOO_API_KEY" not in env and "DB_PASSWORD" not in env
    assert env["HOME"] == "/root"
    assert env["FEATURE_ID"] == ""
    assert env["HARNESS_RUN_ID"] == session.run_id and env["HARNESS_ROLE"] == "worker"
    assert env["HARNESS_STATE"] == str(session.state)
    assert env["HARNESS_HOME"] == str(session.home)
    assert env["PATH"] == f"{session.home}{os.pathsep}/usr/bin"


# --- real subprocesses -------------------------------------------------------------------


def run(tmp_path, prompt="Do F-001.", events=None, **options):
    return CommandBackend().run(prompt, make_session(tmp_path, events, **options))


def test_claude_success_via_subprocess_is_recorded(tmp_path):
    events: list = []
    out = run(tmp_path, events=events, preset="claude", command=fake("claude.py", "success"))
    assert (out.status, out.turns, out.cost_usd) == (FINISHED, 7, 0.1234)
    assert out.summary == "Implemented F-001; tests pass."
    assert out.usage.cache_creation_input_tokens == 2048 and out.usage.output_tokens == 456
    kinds = [e["type"] for e in events]
    assert kinds == ["command", "cli_event", "command_exit"]
    assert events[1]["event"]["subtype"] == "success"


TURN_USAGE = {"input_tokens": 4, "cache_creation_input_tokens": 1000,
              "cache_read_input_tokens": 9000}  # each stand-in turn, with 50 then 70 out


def test_claude_stream_json_events_are_recorded_with_the_turns_and_cost_so_far(tmp_path):
    events: list = []
    out = run(tmp_path, events=events, preset="claude", command=fake("claude.py", "stream"),
              model="m")
    assert (out.status, out.turns, out.cost_usd) == (FINISHED, 2, 0.1234)  # from the result
    cli = [e for e in events if e["type"] == "cli_event"]
    assert [e["event"]["type"] for e in cli] == [
        "system", "assistant", "assistant", "user", "assistant", "result"]
    turn_cost = (4 * 3.0 + 9000 * 0.3) / 1e6  # cache writes have no price in PRICES
    assert [e.get("so_far") for e in cli] == [
        None, {"turns": 1, "cost_usd": round(turn_cost + 50 * 15.0 / 1e6, 6)}, None, None,
        {"turns": 2, "cost_usd": round(2 * turn_cost + 120 * 15.0 / 1e6, 6)}, None]
    unpriced: list = []
    run(tmp_path, events=unpriced, preset="claude", command=fake("claude.py", "stream"),
        model="unpriced-model")
    assert [e["so_far"] for e in unpriced if "so_far" in e][-1] == {"turns": 2, "cost_usd": None}


def test_claude_stopped_at_its_wall_cap_keeps_its_events_and_what_it_used(tmp_path):
    events: list = []
    out = run(tmp_path, events=events, preset="claude", command=fake("claude.py", "stream_hang"),
              model="m", wall=1.5, kill_grace=0.5)
    assert (out.status, out.detail, out.turns) == (CAPPED, "wall-clock cap", 2)
    assert out.usage.cache_read_input_tokens == 18000 and out.usage.output_tokens == 120
    assert out.cost_usd == pytest.approx((8 * 3.0 + 120 * 15.0 + 18000 * 0.3) / 1e6)
    cli = [e["event"] for e in events if e["type"] == "cli_event"]
    assert len(cli) == 5 and cli[3]["message"]["content"][0]["content"] == "a.py"


def test_claude_is_error_with_exit_0_gives_up(tmp_path):
    out = run(tmp_path, preset="claude", command=fake("claude.py", "is_error_exit0"))
    assert out.status == GAVE_UP and "error_during_execution" in out.detail


def test_claude_success_with_nonzero_exit_is_decided_by_json(tmp_path):
    out = run(tmp_path, preset="claude", command=fake("claude.py", "success_exit1"))
    assert out.status == FINISHED


def test_claude_max_turns_is_capped(tmp_path):
    out = run(tmp_path, preset="claude", command=fake("claude.py", "max_turns"))
    assert (out.status, out.detail, out.turns) == (CAPPED, "turn cap", 3)


def test_claude_verbose_array_output(tmp_path):
    out = run(tmp_path, preset="claude", command=fake("claude.py", "verbose_array"))
    assert (out.status, out.summary) == (FINISHED, "hi")


def test_claude_usage_limit_is_a_backend_error_with_reset(tmp_path):
    with pytest.raises(BackendError) as caught:
        run(tmp_path, preset="claude", command=fake("claude.py", "usage_limit"))
    assert caught.value.reset_at == "2026-01-01T00:00:00Z"
    assert "2026-01-01T00:00:00Z" in str(caught.value)
    with pytest.raises(UsageLimitReached) as caught:
        run(tmp_path, preset="claude", command=fake("claude.py", "rate_limited"))
    assert caught.value.reset_at is None


def test_claude_output_that_is_not_json_is_read_for_what_it_means(tmp_path):
    # a refused key is the person's to fix (exit 2), with the fix named
    with pytest.raises(UsageError, match="Invalid API key.*pass_env"):
        run(tmp_path, preset="claude", command=fake("claude.py", "not_json"))
    with pytest.raises(BackendError, match="printed no claude JSON") as caught:
        run(tmp_path, preset="claude", command=["sh", "-c", "echo something odd"])
    assert not isinstance(caught.value, UsageError | UsageLimitReached)


def test_claude_preset_argv_reaches_the_cli_via_path(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    shim = bindir / "claude"
    shim.write_text(f'#!/bin/sh\nexec "{PY}" "{FAKES / "claude.py"}" argv "$@"\n')
    shim.chmod(0o755)
    session = make_session(tmp_path, preset="claude", model="claude-opus-4-1", turns=9)
    session.home = bindir  # run.sh's folder goes first on PATH
    out = CommandBackend().run("Grüße", session)
    seen = json.loads(out.summary)
    assert seen["argv"] == [
        "argv", "-p", "--output-format", "stream-json", "--verbose",
        "--model", "claude-opus-4-1", "--max-turns", "9",
        "--permission-mode", "acceptEdits", "--allowedTools", "Bash",
    ]  # fmt: skip
    assert seen["stdin"] == "Grüße"


def test_codex_success_sums_two_turns(tmp_path):
    out = run(tmp_path, preset="codex", command=fake("codex.py", "success"), model="m")
    assert (out.status, out.turns, out.summary) == (FINISHED, 2, "All done: F-001 implemented.")
    assert out.usage.input_tokens == (24763 - 24448) + (1000 - 500)
    assert out.usage.cache_read_input_tokens == 24448 + 500
    assert out.usage.output_tokens == 172
    assert out.cost_usd == pytest.approx((815 * 3.0 + 172 * 15.0 + 24948 * 0.3) / 1e6)


def test_codex_turn_failed_gives_up(tmp_path):
    out = run(tmp_path, preset="codex", command=fake("codex.py", "turn_failed"))
    assert out.status == GAVE_UP and "400 Bad Request" in out.detail


def test_codex_usage_limit_is_a_backend_error_with_reset(tmp_path):
    with pytest.raises(UsageLimitReached) as caught:
        run(tmp_path, preset="codex", command=fake("codex.py", "usage_limit"))
    local = datetime(2027, 1, 5, 15, 4).astimezone()  # Codex prints the machine's local time
    assert caught.value.reset_at == local.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize(("code", "status"), [("0", FINISHED), ("3", GAVE_UP)])
def test_generic_command_is_decided_by_exit_code(tmp_path, code, status):
    out = run(tmp_path, prompt="hello", command=["sh", str(FAKES / "generic.sh"), code])
    assert out.status == status
    assert "hello" in out.summary and "ran as worker for F-001" in out.summary
    assert out.detail == ("" if code == "0" else "exit code 3")


def test_a_preset_gets_its_providers_key_and_endpoint_when_exported_unless_pass_env_says(
        tmp_path):
    environ = {"PATH": "/usr/bin", "ANTHROPIC_API_KEY": "sk-ant-exported-0000000000",
               "ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "OPENAI_API_KEY": "sk-openai-0000000",
               "GITHUB_TOKEN": "ghp_not_for_agents"}
    claude = build_env(make_session(tmp_path, preset="claude"), environ)
    assert claude["ANTHROPIC_API_KEY"] == environ["ANTHROPIC_API_KEY"]
    assert claude["ANTHROPIC_BASE_URL"] == environ["ANTHROPIC_BASE_URL"]
    assert "OPENAI_API_KEY" not in claude and "GITHUB_TOKEN" not in claude
    codex = build_env(make_session(tmp_path, preset="codex"), environ)
    assert codex["OPENAI_API_KEY"] == environ["OPENAI_API_KEY"]
    assert "ANTHROPIC_API_KEY" not in codex and "ANTHROPIC_BASE_URL" not in codex
    logged_in = build_env(make_session(tmp_path, preset="claude", pass_env=[]), environ)
    assert "ANTHROPIC_API_KEY" not in logged_in  # pass_env: [] uses the CLI's own login
    own = build_env(make_session(tmp_path, preset="claude", command="./agent"), environ)
    assert "ANTHROPIC_API_KEY" not in own  # a command of the role's own gets only pass_env


def test_generic_command_printing_a_claude_result_is_parsed(tmp_path):
    out = run(tmp_path, command=fake("claude.py", "is_error_exit0"))
    assert out.status == GAVE_UP


def test_env_has_run_names_and_no_canary_secret(tmp_path, monkeypatch):
    monkeypatch.setenv("FOO_API_KEY", "canary-foo-secret-0123456789")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-for-the-cli-0123456789")
    monkeypatch.setenv("PASSED_TOKEN", "passed-on-purpose-0123")
    dump = tmp_path / "dump.json"
    options = {"preset": "claude", "command": fake("claude.py", "dump", str(dump))}
    run(tmp_path, pass_env=["PASSED_TOKEN"], **options)
    seen = json.loads(dump.read_text())
    env = seen["env"]
    assert "FOO_API_KEY" not in env
    assert "canary-foo-secret-0123456789" not in json.dumps(env)
    assert "ANTHROPIC_API_KEY" not in env  # a logged-in CLI needs no key; pass_env opts in
    assert env["PASSED_TOKEN"] == "passed-on-purpose-0123"
    assert env["HARNESS_RUN_ID"] == "1777000000-worker-F-001"
    assert (env["HARNESS_ROLE"], env["FEATURE_ID"]) == ("worker", "F-001")
    assert env["HARNESS_STATE"].endswith(".harness") and env["HARNESS_HOME"].endswith("home")
    assert env["PATH"].split(os.pathsep)[0] == env["HARNESS_HOME"]
    assert Path(seen["cwd"]) == (tmp_path / "work").resolve()


def test_codex_preset_does_not_pass_the_anthropic_key(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-not-for-codex-0123456789")
    dump = tmp_path / "dump.json"
    with pytest.raises(UsageError):  # a claude result is no codex event: update the CLI (2)
        run(tmp_path, preset="codex", command=fake("claude.py", "dump", str(dump)))
    assert "ANTHROPIC_API_KEY" not in json.loads(dump.read_text())["env"]


def test_prompt_arrives_on_stdin_intact(tmp_path):
    prompt = "Implement F-001: Grüße, 日本語, emoji ✓ 🚀\n" + "x" * 300_000 + "\nend\n"
    dump = tmp_path / "dump.json"
    run(tmp_path, prompt=prompt, command=fake("claude.py", "dump", str(dump)))
    assert json.loads(dump.read_text())["stdin"] == prompt


def _live_members(pgid: int) -> list[int]:
    """Processes of a group that are not zombies, from /proc."""
    live = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            live.append(int(stat.parent.name))
    return live


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_wall_clock_cap_kills_a_sigterm_ignoring_process_group(tmp_path):
    pidfile = tmp_path / "pids"
    events: list = []
    done: list = []
    command = fake("stubborn.py", str(pidfile))
    worker = threading.Thread(
        target=lambda: done.append(run(tmp_path, events=events, command=command, wall=1.5,
                                       kill_grace=0.5)),
        daemon=True,
    )  # fmt: skip
    worker.start()
    worker.join(timeout=15)
    leader, child = (int(p) for p in pidfile.read_text().split())
    if worker.is_alive():  # the backend failed to stop the group: clean up, then fail
        for pid in (leader, child):
            os.kill(pid, signal.SIGKILL)
        pytest.fail("the backend did not return after the wall-clock cap")
    assert (done[0].status, done[0].detail) == (CAPPED, "wall-clock cap")
    assert leader != child
    assert _live_members(leader) == []
    assert {"type": "cli_output", "text": "working..."} in events


def test_a_failing_recorder_surfaces_after_the_cli_is_stopped(tmp_path):
    def record(event: dict) -> None:
        if event["type"] == "cli_event":
            raise OSError("transcript disk full")

    session = make_session(tmp_path, preset="claude", command=fake("claude.py", "success"))
    session.record = record
    with pytest.raises(OSError, match="disk full"):
        CommandBackend().run("x", session)


def test_missing_executable_names_the_command(tmp_path):
    with pytest.raises(UsageError, match="'no-such-agent-cli-xyz'.*PATH"):
        run(tmp_path, command="no-such-agent-cli-xyz --go")


def test_budget_is_checked_before_the_cli_starts(tmp_path):
    marker = tmp_path / "started"
    session = make_session(tmp_path, command=["sh", "-c", f"touch {marker}"])

    def spent(cost: float) -> None:
        raise BudgetError("mission budget spent")

    session.check_budget = spent
    with pytest.raises(BudgetError):
        CommandBackend().run("x", session)
    assert not marker.exists()


ZOMBIE_CHECK = """
import sys, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from harness.agent.reaper import adopt_orphans
from harness.backends.command import CommandBackend
from test_command_backend import make_session

assert adopt_orphans()  # as run.sh's process is: orphans become our children
session = make_session(Path(sys.argv[2]), preset="generic", kill_grace=30,
                       command=["sh", "-c", "sleep 60 & echo done"])
started = time.monotonic()
outcome = CommandBackend().run("prompt", session)
print(outcome.status, round(time.monotonic() - started, 1))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="child subreapers are Linux's")
def test_a_child_the_cli_leaves_behind_does_not_hold_up_the_run_as_a_zombie(
        tmp_path: Path) -> None:
    # Under run.sh (a subreaper) the CLI's orphaned `sleep` becomes the harness's child; once
    # the group is stopped it is a zombie of ours that kept `killpg(pgid, 0)` succeeding, so
    # the run waited the whole kill_grace (30 s here) before the fix.
    result = subprocess.run([sys.executable, "-c", ZOMBIE_CHECK, str(Path(__file__).parent),
                             str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    status, seconds = result.stdout.split()
    assert status == FINISHED and float(seconds) < 15


def test_a_cli_run_killed_by_sigkill_keeps_its_events_and_status_showed_its_progress(
        project, tmp_path):
    state = project / ".harness"
    (state / "roles").mkdir()
    (state / "roles" / "worker.yaml").write_text(json.dumps({
        "template": "worker.md.j2", "backend": "command", "model": "claude-sonnet-4-5",
        "options": {"preset": "claude", "command": fake("claude.py", "stream_hang")}}))
    proc = subprocess.Popen([str(RUN_SH), "worker", "F-004"], cwd=project,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        transcript = _wait_for_events(state, 5)
        status = run_sh("status", cwd=project)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    run_id = transcript.parent.name
    cost = (2 * (4 * 3 + 1000 * 3.75 + 9000 * 0.3) + 120 * 15) / 1e6
    assert f"running: {run_id} (2 turns, ${cost:.4f} so far)" in status.stdout
    recorded = [json.loads(line) for line in transcript.read_text().splitlines()]
    kinds = [e["event"]["type"] for e in recorded if e["type"] == "cli_event"]
    assert kinds == ["system", "assistant", "assistant", "user", "assistant"]
    after = run_sh("status", cwd=project).stdout
    assert f"interrupted: {run_id}" in after and "running:" not in after


def _wait_for_events(state: Path, count: int) -> Path:
    """The transcript of the one run under `state`, once it holds `count` CLI events."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for transcript in state.glob("runs/*/transcript.jsonl"):
            if transcript.read_text().count('"type": "cli_event"') >= count:
                return transcript
        time.sleep(0.05)
    pytest.fail("the CLI's events did not reach the transcript")


# --- the model that served the run ----------------------------------------------------

CODEX_THREAD = "0199a213-81c0-7800-8aa1-bbab2a035a53"  # the stand-in's thread.started


def shim(tmp_path: Path, name: str, target: str, mode: str) -> Path:
    """A folder with `name` on it that runs the stand-in `target` in `mode`."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    (bindir / name).write_text(f'#!/bin/sh\nexec "{PY}" "{FAKES / target}" {mode} "$@"\n')
    (bindir / name).chmod(0o755)
    return bindir


def test_the_model_claude_code_reports_is_the_one_recorded(tmp_path):
    out = run(tmp_path, preset="claude", command=fake("claude.py", "stream"), model="m")
    assert out.model == "claude-sonnet-4-5"  # its events say so; the role asked for "m"
    out = run(tmp_path, preset="claude", command=fake("claude.py", "success", "x"),
              model="m")
    assert out.model is None  # no event or result names a model, and no model was passed


def test_a_codex_run_records_the_model_codex_says_served_it(tmp_path, monkeypatch):
    home = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(home))
    session = make_session(tmp_path, preset="codex", model="claude-sonnet-4-5")
    session.home = shim(tmp_path, "codex", "codex.py", "success")
    # the role's Claude model is not passed to Codex, and Codex kept no record: unknown
    assert CommandBackend().run("x", session).model is None
    rollout = home / "sessions/2026/11/27" / f"rollout-2026-11-27T08-00-00-{CODEX_THREAD}.jsonl"
    rollout.parent.mkdir(parents=True)
    rollout.write_text(json.dumps({"type": "session_meta", "payload": {"id": CODEX_THREAD}})
                       + "\n" + json.dumps({"type": "turn_context",
                                            "payload": {"model": "gpt-5-codex"}}) + "\n")
    assert CommandBackend().run("x", session).model == "gpt-5-codex"
    session.model = "gpt-5-mini"  # passed with -m: Codex's record still decides
    assert CommandBackend().run("x", session).model == "gpt-5-codex"
    rollout.unlink()
    assert CommandBackend().run("x", session).model == "gpt-5-mini"  # what its argv named
