"""What an agent CLI's failure means, on the messages the real CLIs print (taken from
codex-cli 0.169.0 and Claude Code 2.1.197 against the fake APIs; tests/test_real_clis.py
drives the binaries themselves)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.backends.cli_errors import CliRefused, Setup, classify, fix_for
from harness.backends.cli_results import (
    ClaudeEvents,
    UsageLimitReached,
    claude_outcome,
    parse_codex,
    raise_for_failure,
)
from harness.errors import BACKEND, USAGE
from harness.run.stuck import agent_worked, no_change_streak
from harness.types import Usage


@pytest.mark.parametrize(("message", "status", "code", "says"), [
    ("We’re currently experiencing high demand, which may cause temporary errors.", None,
     BACKEND, "service failed"),
    ("stream disconnected before completion: The model failed", None, BACKEND, "failed"),
    ("API Error: 500 Internal server error. This is a server-side issue", 500, BACKEND, ""),
    ("API Error: 529 Overloaded.", 529, BACKEND, ""),
    ("API Error: Unable to connect to API (FailedToOpenSocket)", None, BACKEND, ""),
    ("unexpected status 401 Unauthorized: Incorrect API key provided: sk-bad., url: x", None,
     USAGE, "codex login"),
    ("Invalid API key · Fix external API key", 401, USAGE, "pass_env"),
    ("Not logged in · Please run /login", None, USAGE, "claude login"),
    ("The model `nope` does not exist or you do not have access to it.", None, USAGE,
     "role's `model`"),
    ("There's an issue with the selected model (x). It may not exist", 404, USAGE, "model"),
    ("Missing environment variable: `OPENAI_API_KEY`.", None, USAGE,
     "pass_env: [OPENAI_API_KEY]"),
    ("Not inside a trusted directory and --skip-git-repo-check was not specified.", None,
     USAGE, "refused to run"),
])
def test_a_cli_failure_maps_to_the_exit_code_contract(message, status, code, says):
    error = classify(message, status)
    assert error is not None and error.exit_code == code
    assert says in str(error)


def test_the_agents_own_failure_is_left_to_judge():
    assert classify("I could not make the tests pass.") is None
    raise_for_failure("I gave up on F-001.")  # returns


def test_limits_are_read_before_anything_else_and_keep_their_reset_time():
    with pytest.raises(UsageLimitReached) as caught:
        raise_for_failure("You’ve hit your usage limit. ... try again at Jan 15th, 2027 7:59 AM.")
    assert caught.value.reset_at is not None
    with pytest.raises(UsageLimitReached):
        raise_for_failure("API Error: Request rejected (429) · Rate limited", 429)


def test_a_codex_turn_failed_by_an_outage_raises_instead_of_giving_up():
    lines = ['{"type":"turn.started"}',
             '{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized"}}']
    with pytest.raises(Exception) as caught:
        parse_codex(lines)
    assert getattr(caught.value, "exit_code", None) == USAGE


def test_codex_cache_writes_are_kept_apart_from_plain_input():
    lines = ['{"type":"turn.completed","usage":{"input_tokens":1000,"cached_input_tokens":300,'
             '"cache_write_input_tokens":200,"output_tokens":5}}']
    usage = parse_codex(lines).usage
    assert (usage.input_tokens, usage.cache_creation_input_tokens,
            usage.cache_read_input_tokens) == (500, 200, 300)


def test_an_unpriced_model_has_an_unknown_cost_not_zero():
    lines = ['{"type":"turn.completed","usage":{"input_tokens":10,"output_tokens":5}}']
    assert parse_codex(lines, "some-new-model", {}).cost_usd is None
    assert parse_codex(lines, "gpt-5-codex", {}).cost_usd == pytest.approx(
        (10 * 1.25 + 5 * 10) / 1e6)


def test_claude_codes_own_messages_are_no_model_calls():
    events = ClaudeEvents()
    synthetic = {"type": "assistant", "message": {"id": "u1", "model": "<synthetic>",
                                                  "usage": {}}}
    assert not events.feed(synthetic) and events.turns == 0
    assert events.feed({"type": "assistant", "message": {"id": "m1", "model": "claude",
                                                         "usage": {"output_tokens": 3}}})
    assert events.usage == Usage(output_tokens=3)


def test_a_claude_result_with_an_api_error_status_raises():
    result = {"type": "result", "subtype": "success", "is_error": True, "api_error_status": 500,
              "result": "API Error: 500 Internal server error.", "num_turns": 1}
    with pytest.raises(Exception) as caught:
        claude_outcome(result, "claude-sonnet-4-5", {})
    assert getattr(caught.value, "exit_code", None) == BACKEND


def test_the_no_progress_rule_counts_only_runs_the_agent_worked_in():
    idle = {"status": "finished", "commit": None, "turns": 3}
    outage = {"status": "finished", "commit": None, "turns": 0,
              "error": "BackendError: the agent CLI's model service failed"}
    assert agent_worked(idle) and not agent_worked(outage)
    assert not agent_worked({"status": "finished", "commit": None, "turns": 0})
    assert not no_change_streak([idle, outage, outage, idle], 3)
    assert no_change_streak([idle, outage, idle, outage, idle], 3)


# --- the one fix for a CLI's refusal, naming the variable and the file ------------------

KEYS = ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN")


@pytest.mark.parametrize(("message", "pass_env", "environ", "says"), [
    ("Not logged in · Please run /login", (), {"ANTHROPIC_API_KEY": "k"},
     "ANTHROPIC_API_KEY is set but not passed to the CLI: add `options: {pass_env: "
     "[ANTHROPIC_API_KEY]}` to /s/roles/worker.yaml"),
    ("Invalid API key · Fix external API key", ("ANTHROPIC_API_KEY",),
     {"ANTHROPIC_API_KEY": "k"}, "the key in ANTHROPIC_API_KEY was refused: put the line "
     "`ANTHROPIC_API_KEY=...` in /s/env"),
    ("Not logged in · Please run /login", ("ANTHROPIC_API_KEY",), {},
     "ANTHROPIC_API_KEY is listed in pass_env but not set: put the line"),
    ("Not logged in · Please run /login", (), {}, "log the CLI in (`claude login`"),
    ("Missing environment variable: `OPENAI_API_KEY`.", (), {"OPENAI_API_KEY": "k"},
     "OPENAI_API_KEY is set, but no secret reaches the CLI unless asked: add `options: "
     "{pass_env: [OPENAI_API_KEY]}` to /s/roles/worker.yaml"),
    ("Missing environment variable: `OPENAI_API_KEY`.", ("OPENAI_API_KEY",), {},
     "OPENAI_API_KEY is not set: put the line `OPENAI_API_KEY=...` in /s/env"),
    ("The model `nope` does not exist or you do not have access to it.", (), {},
     "set `model` in /s/roles/worker.yaml"),
])
def test_a_refusals_fix_names_the_variable_and_the_file(message, pass_env, environ, says):
    error = classify(message)
    assert isinstance(error, CliRefused) and error.exit_code == USAGE
    setup = Setup("`claude login`", KEYS, pass_env, environ, Path("/s"), "worker")
    assert says in fix_for(error, setup)
