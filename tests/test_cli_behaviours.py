"""Agent CLIs as they really behave, through real `run.sh worker --backend command` runs with
small stand-ins: a CLI that cannot start (its interpreter missing, not a program at all), a
result line bigger than the output kept for parsing, Claude Code's error results that say
what went wrong in `errors` rather than `result`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_sh
from test_loop import pending


@pytest.fixture
def mission(state: Path) -> Path:
    pending(state, "F-004")
    return state


def cli(tmp_path: Path, text: str) -> Path:
    """An executable file holding `text`: the agent CLI the role runs."""
    path = tmp_path / "agent-cli"
    path.write_text(text)
    path.chmod(0o755)
    return path


def worker(project: Path, command: Path, preset: str = "claude"):
    """A real run.sh worker with the CLI as the preset's command; the result and F-004."""
    result = run_sh("worker", "F-004", "--backend", "command", "--preset", preset,
                    "--command", str(command), cwd=project)
    plan = json.loads((project / ".harness" / "features.json").read_text())
    return result, next(f for f in plan if f["id"] == "F-004")


@pytest.mark.parametrize("text", [
    "#!/usr/bin/env no-such-node-for-the-harness\nconsole.log(1)\n",  # npm's shim, no node
    "#!/no/such/interpreter\nprint(1)\n",                            # a bad interpreter
    "not a program, and no #! line\n",                               # exec format error
], ids=["env-interpreter-missing", "bad-interpreter", "not-a-program"])
@pytest.mark.parametrize("preset", ["claude", "codex"])
def test_a_cli_that_cannot_start_is_a_setup_error_not_an_outage(
        tmp_path: Path, project: Path, mission: Path, text: str, preset: str) -> None:
    # cron's PATH has no node: npm's `claude` cannot start. A loop waits on 6 and retries all
    # night; this is the person's to fix: exit 2 naming the CLI, no attempt counted
    command = cli(tmp_path, text)
    result, feature = worker(project, command, preset)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"cannot run agent CLI {str(command)!r}" in result.stderr
    assert "PATH" in result.stderr
    assert feature["status"] == "pending" and feature["attempts"] == 0


HUGE = 3 << 20  # bytes: more than the 1 MiB of output a CLI's run keeps for reading


def test_a_result_line_bigger_than_the_output_kept_is_still_read(
        tmp_path: Path, project: Path, mission: Path) -> None:
    # Claude Code prints its result as one line; a long last answer (or its tool results,
    # echoed in `tool_use_result`) made the line too long to keep whole: the run, finished
    # and paid for, was exit 6 "printed no claude JSON result" with its cost lost
    command = cli(tmp_path, f"""#!/usr/bin/env python3
import json, sys
sys.stdin.read()
usage = {{"input_tokens": 10, "output_tokens": 20}}
print(json.dumps({{"type": "assistant", "message": {{"id": "m1", "model": "claude-sonnet-4-5",
      "content": [{{"type": "text", "text": "x" * {HUGE}}}], "usage": usage}}}}))
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "num_turns": 1,
      "result": "y" * {HUGE}, "total_cost_usd": 0.25, "usage": usage}}))
""")
    result, feature = worker(project, command)
    assert result.returncode == 0, result.stdout + result.stderr[:2000]
    assert "awaits validation" in result.stdout and feature["status"] == "in_progress"
    manifest = json.loads(next((project / ".harness" / "runs").glob("*/manifest.json"))
                          .read_text())
    assert manifest["cost_usd"] == 0.25 and manifest["turns"] == 1


@pytest.mark.parametrize("errors, code", [
    (["API Error: 529 {\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}"], 6),
    (["Invalid API key · Please run /login"], 2),
    (["No conversation found with session ID: d56965c9"], 1),
])
def test_claude_codes_error_result_is_read_from_its_errors(
        tmp_path: Path, project: Path, mission: Path, errors: list[str], code: int) -> None:
    # Claude Code's error results (error_during_execution, ...) carry no `result`: what went
    # wrong is in `errors`. It was not read: an overload or a refused key was the agent's
    # failure (exit 1), and the run's detail said only "error_during_execution: "
    line = json.dumps({"type": "result", "subtype": "error_during_execution", "is_error": True,
                       "num_turns": 0, "total_cost_usd": 0, "errors": errors})
    result, feature = worker(project, cli(tmp_path, f"#!/bin/sh\ncat >/dev/null\n"
                                                    f"echo '{line}'\nexit 1\n"))
    assert result.returncode == code, result.stdout + result.stderr
    assert errors[0][:30] in result.stdout + result.stderr
    assert feature["status"] == ("in_progress" if code == 1 else "pending")


@pytest.mark.parametrize("preset, says, code", [
    ("claude", "error: unknown option '--max-budget-usd'", 1),           # commander
    ("codex", "error: unexpected argument '--output-schema' found\n\n"   # clap
              "Usage: codex exec --json [PROMPT]\n\nFor more information, try '--help'.", 2),
    ("gemini", "Unknown arguments: skip-trust, skipTrust", 1),           # yargs
])
def test_a_cli_too_old_for_the_presets_flags_is_a_setup_error(
        tmp_path: Path, project: Path, mission: Path, preset: str, says: str,
        code: int) -> None:
    # a Claude Code from before --max-budget-usd refuses every run the preset makes; as exit 6
    # a loop waited and retried it all night
    command = cli(tmp_path, f"#!/bin/sh\ncat >/dev/null\nprintf '%s\\n' {json.dumps(says)} >&2\n"
                            f"exit {code}\n")
    result, feature = worker(project, command, preset)
    assert result.returncode == 2, result.stdout + result.stderr
    assert says.splitlines()[0] in result.stderr and "update" in result.stderr
    assert feature["status"] == "pending" and feature["attempts"] == 0


def test_a_codex_printing_the_event_format_before_0_44_is_a_setup_error(
        tmp_path: Path, project: Path, mission: Path) -> None:
    # codex before 0.44 printed {"id", "msg": {...}} events for --json: the run did the work
    # and paid for it, the harness read none of it, and exit 6 had a loop run it again and
    # again. Exit 2 names the fix
    events = [{"id": "0", "msg": {"type": "task_started", "model_context_window": 272000}},
              {"id": "0", "msg": {"type": "agent_message", "message": "Done."}},
              {"id": "0", "msg": {"type": "token_count", "input_tokens": 10,
                                  "output_tokens": 5}},
              {"id": "0", "msg": {"type": "task_complete", "last_agent_message": "Done."}}]
    lines = "".join(f"echo '{json.dumps(e)}'\n" for e in events)
    result, feature = worker(project, cli(tmp_path, f"#!/bin/sh\ncat >/dev/null\n{lines}"),
                             "codex")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "events the harness does not read" in result.stderr and "update" in result.stderr
    assert feature["status"] == "pending"


def codex_failing(tmp_path: Path, said: str) -> str:
    """A stand-in `codex exec --json` whose turn fails with `said`, exit 1."""
    events = [{"type": "thread.started", "thread_id": "0199a213-81c0-7800-8aa1-bbab2a035a53"},
              {"type": "turn.started"}, {"type": "error", "message": said},
              {"type": "turn.failed", "error": {"message": said}}]
    script = "".join(f"print({json.dumps(json.dumps(e))})\n" for e in events)
    return cli(tmp_path, f"#!/usr/bin/env python3\nimport sys\nsys.stdin.read()\n{script}"
                         "sys.exit(1)\n")


def test_a_model_codex_refuses_for_a_chatgpt_account_is_a_setup_error(
        tmp_path: Path, project: Path, mission: Path) -> None:
    # what Codex says when the role's model is retired or not in the account's plan: it was
    # the agent giving up (exit 1), every attempt of the feature spent on it
    said = ('{"type":"error","status":400,"error":{"type":"invalid_request_error","message":'
            '"The \'gpt-5-codex\' model is not supported when using Codex with a ChatGPT'
            ' account."}}')
    result, feature = worker(project, codex_failing(tmp_path, said), "codex")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "not supported when using Codex" in result.stderr and "model" in result.stderr
    assert feature["status"] == "pending"


def test_a_claude_account_out_of_credit_is_a_setup_error(
        tmp_path: Path, project: Path, mission: Path) -> None:
    # Claude Code's result when the API key's organisation has no credit left: the agent's
    # failure (exit 1) at every run until someone looked; the person must add credit
    said = "Credit balance is too low · Add funds: https://platform.claude.com/settings/billing"
    line = json.dumps({"type": "result", "subtype": "success", "is_error": True,
                       "api_error_status": 400, "num_turns": 1, "result": said,
                       "total_cost_usd": 0})
    result, feature = worker(project, cli(tmp_path, f"#!/bin/sh\ncat >/dev/null\n"
                                                    f"echo '{line}'\nexit 1\n"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Credit balance is too low" in result.stderr and "credit" in result.stderr
    assert feature["status"] == "pending"


@pytest.mark.parametrize("said", [
    "Quota exceeded. Check your plan and billing details.",  # the key's account: no credit
    "To use Codex with your ChatGPT plan, upgrade to Plus: https://chatgpt.com/explore/plus.",
])
def test_a_codex_account_that_cannot_pay_is_a_setup_error(
        tmp_path: Path, project: Path, mission: Path, said: str) -> None:
    # Codex's billing stops, which no wait lifts: the first was a usage limit with no reset
    # time (exit 6, retried all night), the second the agent giving up (exit 1)
    result, feature = worker(project, codex_failing(tmp_path, said), "codex")
    assert result.returncode == 2, result.stdout + result.stderr
    assert said[:20] in result.stderr and "add credit" in result.stderr
    assert feature["status"] == "pending"


def test_geminis_per_minute_quota_is_still_a_limit_with_its_reset() -> None:
    # Google's 429 asks to "check your plan and billing details" too, and says when to retry
    from harness.backends.cli_results import UsageLimitReached, raise_for_failure
    said = ("You exceeded your current quota, please check your plan and billing details. "
            "* Quota exceeded for metric: generate_content_free_tier_requests, limit: 10 "
            "Please retry in 37.8s.")
    with pytest.raises(UsageLimitReached) as caught:
        raise_for_failure(said, 429)
    assert caught.value.reset_at


@pytest.mark.parametrize("tool_output", [
    "curl -i localhost:8080/admin -> HTTP/1.1 401 Unauthorized",   # was exit 2: a loop stops
    "pytest: 3 failed; the retry budget of 503 ms was exceeded",   # was exit 6 (a "5xx")
])
def test_a_cli_that_dies_without_a_result_is_not_judged_by_its_agents_work(
        tmp_path: Path, project: Path, mission: Path, tool_output: str) -> None:
    # Claude Code's stream ended with no result (killed, or its known missing-result bug):
    # the failure was read out of the whole stream, the agent's tool results included, so
    # an API project's "401 Unauthorized" was a refused key (exit 2, the loop stops) and a
    # number like 503 a failing service
    events = [{"type": "system", "subtype": "init", "model": "claude-sonnet-4-5"},
              {"type": "assistant", "message": {
                  "id": "m1", "model": "claude-sonnet-4-5", "usage": {"output_tokens": 5},
                  "content": [{"type": "tool_use", "id": "t1", "name": "Bash",
                               "input": {"command": "curl -i localhost:8080/admin"}}]}},
              {"type": "user", "message": {"role": "user", "content": [
                  {"type": "tool_result", "tool_use_id": "t1", "content": tool_output}]}}]
    script = "".join(f"print({json.dumps(json.dumps(e))})\n" for e in events)
    command = cli(tmp_path, f"#!/usr/bin/env python3\nimport os, sys\nsys.stdin.read()\n"
                            f"{script}sys.stdout.flush()\nos._exit(1)\n")
    result, feature = worker(project, command)
    assert result.returncode == 6, result.stdout + result.stderr
    assert "printed no claude JSON result" in result.stderr


def test_the_fix_for_a_missing_cli_keeps_the_presets_flags(project: Path, mission: Path,
                                                           tmp_path: Path) -> None:
    # the fix said "set the role's `command` option to its full path": a role that did so
    # ran `claude` with none of the preset's flags, no -p: it waits on its input until the
    # wall-clock cap (30 minutes), each run an attempt
    result = run_sh("worker", "F-004", "--backend", "command", "--preset", "claude", cwd=project,
                    env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    assert result.returncode == 2, result.stdout + result.stderr
    assert "cannot run agent CLI 'claude'" in result.stderr
    assert "its full path followed by the preset's flags" in result.stderr


def test_a_cli_printing_without_end_keeps_its_transcript_bounded(
        tmp_path: Path, project: Path, mission: Path) -> None:
    # every line a CLI prints went to the transcript: one printing for its whole wall-clock
    # cap (30 min by default) wrote gigabytes a run, and a loop filled the disk by morning
    command = cli(tmp_path, """#!/usr/bin/env python3
import json, sys
sys.stdin.read()
out = sys.stdout.buffer
for _ in range(6):
    out.write(b"z" * (16 << 20))  # 96 MiB, in lines of the 16 MiB a line is read whole to
usage = {"input_tokens": 10, "output_tokens": 20}
print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "num_turns": 1,
      "result": "done", "total_cost_usd": 0.25, "usage": usage}), flush=True)
""")
    result, feature = worker(project, command)
    assert result.returncode == 0, result.stdout + result.stderr[:2000]
    run = next((project / ".harness" / "runs").glob("*"))
    assert (run / "transcript.jsonl").stat().st_size < 72 << 20
    text = (run / "transcript.jsonl").read_text()
    assert "not recorded" in text  # says so, where it stopped
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["cost_usd"] == 0.25 and feature["status"] == "in_progress"
