"""The anthropic backend, driving the real SDK against the fake Messages API."""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone

import pytest
from fake_api import make_session, text, thinking, tool_use
from pydantic import ValidationError

from harness.backends.anthropic import AnthropicBackend
from harness.backends.api_errors import reset_time
from harness.backends.toolloop import CUT_CALL, CUT_TEXT
from harness.errors import BackendError, BudgetError, UsageError
from harness.types import CAPPED, FINISHED, GAVE_UP, Caps, Usage

EDITOR = "str_replace_based_edit_tool"
FAST_RETRY = {"retry-after-ms": "10"}


def run(api, tmp_path, prompt="Build the feature.", **fields):
    """Run the backend on a session pointed at the fake API; returns (outcome, session, events)."""
    events: list[dict] = []
    options = {"base_url": api.base_url, **fields.pop("options", {})}
    session = make_session(tmp_path, events=events, options=options, **fields)
    return AnthropicBackend().run(prompt, session), session, events


def script_edit_run_finish(api):
    api.reply(text("Creating the file."),
              tool_use(EDITOR, {"command": "create", "path": "hello.txt",
                                "file_text": "hello world\n"}, id="toolu_create"))
    api.reply(tool_use("bash", {"command": "cat hello.txt | tr a-z A-Z"}, id="toolu_bash"))
    api.reply(text("All done."), tool_use("finish", {"summary": "wrote hello.txt"},
                                          id="toolu_finish"))


def assert_edit_run_finish(api, session, outcome, events):
    assert (session.workdir / "hello.txt").read_text() == "hello world\n"
    assert (outcome.status, outcome.summary, outcome.turns) == (FINISHED, "wrote hello.txt", 3)
    assert [e["event"] for e in events] == ["model_turn", "tool_call"] * 3
    tools = [e for e in events if e["event"] == "tool_call"]
    assert [t["name"] for t in tools] == [EDITOR, "bash", "finish"]
    assert tools[1]["result"] == "HELLO WORLD\n[exit code 0]"
    assert events[0]["content"][0] == {"type": "text", "text": "Creating the file."}
    assert events[0]["stop_reason"] == "tool_use"
    # what went back to the API: the assistant turn as it came, then the tool results
    second = api.requests[1]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert second[1]["content"] == [
        {"type": "text", "text": "Creating the file."},
        {"type": "tool_use", "id": "toolu_create", "name": EDITOR,
         "input": {"command": "create", "path": "hello.txt", "file_text": "hello world\n"}}]
    assert second[2]["content"] == [{"type": "tool_result", "tool_use_id": "toolu_create",
                                     "content": "created hello.txt", "is_error": False,
                                     "cache_control": {"type": "ephemeral"}}]
    result = api.requests[2]["messages"][4]["content"][0]
    assert result["tool_use_id"] == "toolu_bash"
    assert result["content"] == "HELLO WORLD\n[exit code 0]"


def test_tool_loop_edits_a_file_runs_a_command_and_finishes(api, tmp_path):
    script_edit_run_finish(api)
    outcome, session, events = run(api, tmp_path, caps=Caps(max_tokens=1234))
    assert_edit_run_finish(api, session, outcome, events)
    first = api.requests[0]
    assert first["model"] == "claude-test" and first["max_tokens"] == 1234
    sent = api.headers[0]  # the key's header depends on the SDK's API version
    assert "test-key" in (sent.get("x-api-key"), sent.get("authorization", "").split()[-1])


def test_streamed_responses_run_the_same_loop(api, tmp_path):
    script_edit_run_finish(api)
    outcome, session, events = run(api, tmp_path, options={"stream": True})
    assert all(request["stream"] is True for request in api.requests)
    assert_edit_run_finish(api, session, outcome, events)


def test_prompt_and_tools_carry_cache_breakpoints(api, tmp_path):
    script_edit_run_finish(api)
    run(api, tmp_path, prompt="The rendered prompt.", tools=["bash", EDITOR, "note", "finish"])
    first = api.requests[0]
    assert "system" not in first
    assert first["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": "The rendered prompt.", "cache_control": {"type": "ephemeral"}}]}]
    assert [t["name"] for t in first["tools"]] == ["bash", EDITOR, "note", "finish"]
    assert first["tools"][0] == {"type": "bash_20250124", "name": "bash"}
    assert first["tools"][1] == {"type": "text_editor_20250728", "name": EDITOR}
    assert first["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert [t.get("cache_control") for t in first["tools"][:-1]] == [None] * 3
    # one moving breakpoint on the newest tool result: never more than the API's four
    third = api.requests[2]
    assert json.dumps(third).count('"cache_control"') == 3
    assert "cache_control" in third["messages"][-1]["content"][-1]


def test_end_turn_without_tools_finishes_with_its_text(api, tmp_path):
    api.reply(text("Nothing to change."), stop_reason="end_turn")
    outcome, _, events = run(api, tmp_path)
    assert (outcome.status, outcome.summary, outcome.turns) == (FINISHED, "Nothing to change.", 1)
    assert outcome.detail == "stop_reason end_turn"
    assert len(events) == 1


def test_the_model_the_api_says_answered_is_the_one_reported(api, tmp_path):
    api.model = "claude-test-20991231"  # an alias resolved by the API
    api.reply(text("Nothing to change."), stop_reason="end_turn")
    outcome, session, _ = run(api, tmp_path)
    assert (session.model, outcome.model) == ("claude-test", "claude-test-20991231")


def test_finish_with_gave_up_and_a_refusal_give_up(api, tmp_path):
    api.reply(tool_use("finish", {"summary": "cannot build it", "status": "gave_up"}))
    outcome, _, _ = run(api, tmp_path)
    assert (outcome.status, outcome.summary) == (GAVE_UP, "cannot build it")
    api.reply(text("I won't."), stop_reason="refusal")
    assert run(api, tmp_path)[0].status == GAVE_UP


def test_tool_errors_go_back_as_error_results(api, tmp_path):
    api.reply(tool_use(EDITOR, {"command": "view", "path": "missing.txt"}, id="t1"),
              tool_use("telnet", {}, id="t2"))
    api.reply(text("ok"))
    outcome, _, events = run(api, tmp_path, tools=[EDITOR])
    assert outcome.status == FINISHED
    results = api.requests[1]["messages"][-1]["content"]
    assert [(r["tool_use_id"], r["is_error"]) for r in results] == [("t1", True), ("t2", True)]
    assert "missing.txt" in results[0]["content"] and "no tool 'telnet'" in results[1]["content"]
    assert [e["is_error"] for e in events if e["event"] == "tool_call"] == [True, True]


def test_turns_cap(api, tmp_path):
    for _ in range(3):
        api.reply(tool_use("bash", {"command": "true"}))
    outcome, _, _ = run(api, tmp_path, caps=Caps(turns=2))
    assert (outcome.status, outcome.turns) == (CAPPED, 2)
    assert "turns cap" in outcome.detail
    assert len(api.requests) == 2


def test_wall_clock_cap_is_checked_before_each_call(api, tmp_path):
    api.reply(tool_use("bash", {"command": "sleep 1.2"}))
    outcome, _, _ = run(api, tmp_path, caps=Caps(wall_seconds=1))
    assert (outcome.status, outcome.turns) == (CAPPED, 1)
    assert "wall-clock cap" in outcome.detail
    assert len(api.requests) == 1


@pytest.mark.parametrize("stream", [False, True])
def test_wall_clock_cap_bounds_a_hanging_call_and_its_retries(api, tmp_path, stream):
    api.reply(text("too late"), delay=30)
    start = time.monotonic()
    # no answer before the cap: an outage (exit 6, no attempt), not the agent's capped run
    with pytest.raises(BackendError, match="did not answer before the run's wall-clock cap"
                       ) as raised:
        run(api, tmp_path, caps=Caps(wall_seconds=1),
            options={"max_retries": 2, "stream": stream})
    assert time.monotonic() - start < 5
    assert raised.value.outcome.turns == 0  # type: ignore[attr-defined]
    assert len(api.requests) == 1  # no retry once the time is spent


def test_timeout_with_time_left_is_a_backend_error(api, tmp_path):
    api.reply(text("too late"), delay=30)
    with pytest.raises(BackendError, match="did not answer in time after 0 retries"):
        run(api, tmp_path, caps=Caps(wall_seconds=60), options={"timeout": 0.5, "max_retries": 0})


def test_dollar_cap_per_run(api, tmp_path):
    for _ in range(3):
        api.reply(tool_use("bash", {"command": "true"}), input=100_000)  # $0.30 a call
    outcome, _, _ = run(api, tmp_path, caps=Caps(dollars=0.5))
    assert (outcome.status, outcome.turns) == (CAPPED, 2)
    assert outcome.cost_usd == pytest.approx(0.6 + 2 * 5 * 15 / 1e6)
    assert "dollar cap" in outcome.detail
    assert len(api.requests) == 2


def test_mission_budget_is_checked_before_each_call(api, tmp_path):
    seen: list[float] = []

    def check_budget(cost: float) -> None:
        seen.append(cost)
        if cost > 0.25:
            raise BudgetError("mission budget spent")

    for _ in range(2):
        api.reply(tool_use("bash", {"command": "true"}), input=100_000)
    with pytest.raises(BudgetError) as caught:
        run(api, tmp_path, check_budget=check_budget)
    assert seen[0] == 0 and seen[1] == pytest.approx(0.300075)
    assert len(api.requests) == 1
    assert caught.value.outcome.usage.input_tokens == 100_000  # for the run record


def test_rate_limit_then_success(api, tmp_path):
    api.error(429, "rate_limit_error", "slow down", FAST_RETRY)
    api.reply(text("done"))
    outcome, _, _ = run(api, tmp_path)
    assert (outcome.status, outcome.summary) == (FINISHED, "done")
    assert len(api.requests) == 2


def test_overloaded_until_retries_run_out(api, tmp_path):
    api.error(529, "overloaded_error", "Overloaded", FAST_RETRY, times=3)
    with pytest.raises(BackendError) as caught:
        run(api, tmp_path, options={"max_retries": 2})
    assert caught.value.exit_code == 6
    assert "overloaded or failing (529) after 2 retries (Overloaded)" in str(caught.value)
    assert len(api.requests) == 3


def test_rate_limit_after_retries_gives_the_reset_time(api, tmp_path):
    api.error(429, "rate_limit_error", "tokens per minute", {
        "anthropic-ratelimit-tokens-reset": "2030-01-01T00:00:00Z",
        "anthropic-ratelimit-requests-reset": "2029-06-01T00:00:00Z"})
    with pytest.raises(BackendError) as caught:
        run(api, tmp_path, options={"max_retries": 0})
    assert caught.value.reset_at == "2030-01-01T00:00:00Z"
    assert str(caught.value).endswith("resets at 2030-01-01T00:00:00Z")
    assert "rate limited" in str(caught.value)


def test_reset_time_from_headers():
    now = datetime(2026, 4, 24, 10, 0, 0, tzinfo=timezone.utc)
    assert reset_time({"retry-after": "30"}, now) == "2026-04-24T10:00:30Z"
    assert reset_time({"retry-after": "Fri, 24 Apr 2026 11:00:00 GMT"}, now) == (
        "2026-04-24T11:00:00Z")
    assert reset_time({"anthropic-ratelimit-input-tokens-reset": "2026-04-24T10:01:00+00:00"},
                      now) == "2026-04-24T10:01:00Z"
    assert reset_time({"retry-after": "soon"}, now) is None
    assert reset_time({}, now) is None


def test_a_refused_key_is_a_usage_error_naming_the_variable_and_the_files(api, tmp_path):
    api.error(401, "authentication_error", "invalid x-api-key")
    with pytest.raises(UsageError) as caught:
        run(api, tmp_path)
    said = str(caught.value)
    assert "refused the key in ANTHROPIC_API_KEY (401) (invalid x-api-key)" in said
    assert f"{tmp_path / 'state' / 'env'}" in said and ".config/autonomous-harness/env" in said
    assert caught.value.exit_code == 2 and not isinstance(caught.value, BackendError)
    assert len(api.requests) == 1  # not retried
    api.error(403, "permission_error", "not allowed")
    with pytest.raises(UsageError, match=r"may not do this \(403\).*ANTHROPIC_API_KEY"):
        run(api, tmp_path)


def test_an_unknown_model_is_a_usage_error_naming_the_roles_file(api, tmp_path):
    api.error(404, "not_found_error", "model: claude-test")
    with pytest.raises(UsageError) as caught:
        run(api, tmp_path)
    assert "does not know model 'claude-test' (404)" in str(caught.value)
    assert f"set `model` in {tmp_path / 'state' / 'roles' / 'worker.yaml'}" in str(caught.value)


def test_bad_request_is_not_retried(api, tmp_path):
    api.error(400, "invalid_request_error", "max_tokens: too large")
    with pytest.raises(UsageError, match=r"refused the request \(400\).*too large.*caps"):
        run(api, tmp_path)
    assert len(api.requests) == 1


def test_missing_api_key_is_a_clear_error(api, tmp_path, monkeypatch):
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_PROFILE", "ANTHROPIC_CONFIG_DIR",
                 "ANTHROPIC_IDENTITY_TOKEN", "ANTHROPIC_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    with pytest.raises(UsageError, match="no Anthropic API key: ANTHROPIC_API_KEY is not set;"
                       " put a valid key in ANTHROPIC_API_KEY: the line `ANTHROPIC_API_KEY=...`"):
        run(api, tmp_path)
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path / "no-config"))
    with pytest.raises(UsageError, match="cannot load Anthropic credentials: .*no-config"):
        run(api, tmp_path)
    assert api.requests == []


def test_unreachable_api_is_a_backend_error(api, tmp_path):
    port = api.server.server_address[1]
    api.stop()
    with pytest.raises(BackendError, match=f"cannot reach the Anthropic API at .*:{port}"):
        run(api, tmp_path, options={"max_retries": 0})


@pytest.mark.parametrize("stream", [False, True])
def test_usage_and_cost_are_summed_over_calls_with_cache_tokens(api, tmp_path, stream):
    api.reply(tool_use("bash", {"command": "true"}), input=1000, output=200, cache_write=5000)
    api.reply(text("done"), input=50, output=100, cache_read=5000)
    outcome, _, events = run(api, tmp_path, options={"stream": stream})
    assert outcome.usage == Usage(input_tokens=1050, output_tokens=300,
                                  cache_creation_input_tokens=5000, cache_read_input_tokens=5000)
    expected = (1050 * 3.0 + 300 * 15.0 + 5000 * 3.75 + 5000 * 0.3) / 1e6
    assert outcome.cost_usd == pytest.approx(expected)
    assert [e["so_far"] for e in events if e["event"] == "model_turn"][-1] == {
        "turns": 2, "cost_usd": round(expected, 6)}  # what `status` shows of a running run
    assert [e["usage"] for e in events if e["event"] == "model_turn"] == [
        {"input_tokens": 1000, "output_tokens": 200,
         "cache_creation_input_tokens": 5000, "cache_read_input_tokens": 0},
        {"input_tokens": 50, "output_tokens": 100,
         "cache_creation_input_tokens": 0, "cache_read_input_tokens": 5000}]


@pytest.mark.parametrize("stream", [False, True])
def test_a_tool_call_cut_at_max_tokens_is_continued(api, tmp_path, stream):
    api.reply(text("Two steps."), tool_use("bash", {"command": "echo one > one.txt"}, id="ok"),
              tool_use(EDITOR, {"command": "create", "path": "big.txt"}, id="cut"),
              stop_reason="max_tokens")
    api.reply(tool_use(EDITOR, {"command": "create", "path": "big.txt", "file_text": "all\n"}))
    api.reply(text("done"))
    outcome, session, events = run(api, tmp_path, options={"stream": stream})
    assert (outcome.status, outcome.turns, outcome.summary) == (FINISHED, 3, "done")
    assert (session.workdir / "one.txt").read_text() == "one\n"  # the finished call ran
    assert (session.workdir / "big.txt").read_text() == "all\n"  # made by the second try
    second = api.requests[1]["messages"]
    assert [b["type"] for b in second[1]["content"]] == ["text", "tool_use", "tool_use"]
    answer = second[2]["content"]
    assert [(b["tool_use_id"], b["is_error"]) for b in answer] == [("ok", False), ("cut", True)]
    assert answer[1]["content"] == CUT_CALL and "cache_control" in answer[1]
    continued = [e for e in events if e["event"] == "continued"]
    assert continued == [{"event": "continued", "turn": 1, "reason": "max_tokens",
                          "cut_tool": EDITOR}]
    assert [e["name"] for e in events if e["event"] == "tool_call"] == ["bash", EDITOR]


def test_text_cut_at_max_tokens_is_continued_a_few_times_in_a_row_at_most(api, tmp_path):
    api.reply(text("The plan is"), stop_reason="max_tokens")
    api.reply(text("to finish."))
    outcome, _, _ = run(api, tmp_path)
    assert (outcome.status, outcome.summary) == (FINISHED, "to finish.")
    assert api.requests[1]["messages"][-1]["content"] == [
        {"type": "text", "text": CUT_TEXT, "cache_control": {"type": "ephemeral"}}]
    for _ in range(4):
        api.reply(tool_use("bash", {"command": "echo cut"}), stop_reason="max_tokens")
    outcome, _, events = run(api, tmp_path)
    assert (outcome.status, outcome.turns) == (CAPPED, 4)
    assert outcome.detail == "4 replies in a row cut off at max_tokens (8192)"
    assert len([e for e in events if e["event"] == "continued"]) == 3
    assert not [e for e in events if e["event"] == "tool_call"]  # a cut call never runs


@pytest.mark.parametrize("stream", [False, True])
def test_thinking_is_asked_for_and_its_blocks_go_back_unchanged(api, tmp_path, stream):
    thought = thinking("The file should exist first; list the folder.")
    api.reply(thought, tool_use("bash", {"command": "ls"}))
    api.reply(text("done"))
    outcome, _, events = run(api, tmp_path, caps=Caps(thinking_tokens=2048),
                             options={"stream": stream})
    assert (outcome.status, outcome.summary) == (FINISHED, "done")
    assert all(r["thinking"] == {"type": "enabled", "budget_tokens": 2048}
               for r in api.requests)
    assert api.requests[1]["messages"][1]["content"][0] == thought
    assert events[0]["content"][0] == thought


def test_the_fake_api_refuses_a_changed_thinking_block(api):
    sent = thinking("a thought")
    api.signed[sent["signature"]] = sent
    changed = {"messages": [{"role": "assistant", "content": [{**sent, "thinking": "other"}]}]}
    assert "cannot be modified" in api.changed_thinking(changed)
    assert api.changed_thinking({"messages": [{"role": "assistant", "content": [sent]}]}) is None


def test_thinking_budget_must_be_under_max_tokens():
    assert Caps(thinking_tokens=1024, max_tokens=4096).thinking_tokens == 1024
    with pytest.raises(ValidationError, match=r"thinking_tokens \(8192\) must be less than"):
        Caps(thinking_tokens=8192, max_tokens=8192)
    with pytest.raises(ValidationError, match="greater than or equal to 1024"):
        Caps(thinking_tokens=500)


@pytest.mark.parametrize("where", ["env", "role"])
@pytest.mark.parametrize("url", ["localhost:8080", "htp://127.0.0.1/v1", "http://[::1"])
def test_a_server_address_that_is_no_http_url_is_exit_2_naming_it(project, where, url):
    """`ANTHROPIC_BASE_URL=localhost:8080` (a proxy's port, the scheme left out) was 'cannot
    reach the API' after the retries, exit 6, which a loop waits out all night: exit 2 naming
    where the address came from (an ANTHROPIC_ variable's value is masked as a secret's);
    `doctor` says the same instead of 'could not check the key'."""
    from conftest import run_sh

    role = project / ".harness" / "roles" / "worker.yaml"
    role.parent.mkdir(exist_ok=True)
    role.write_text("backend: anthropic\n"
                    f"options: {json.dumps({'base_url': url} if where == 'role' else {})}\n")
    env = {"ANTHROPIC_API_KEY": "k", **({"ANTHROPIC_BASE_URL": url} if where == "env" else {})}
    named = "ANTHROPIC_BASE_URL" if where == "env" else "options.base_url"
    said = f"{named} {repr('[REDACTED]' if where == 'env' else url)} is no http(s) URL"
    result = run_sh("worker", "F-004", cwd=project, env=env)
    assert result.returncode == 2, result.stdout + result.stderr
    assert said in result.stderr and "https://" in result.stderr
    if url == "localhost:8080":  # doctor takes seconds: once per place the address comes from
        doctor = run_sh("doctor", cwd=project, env=env).stdout
        assert f"FAIL  auth worker: anthropic: {named} " in doctor and "no http(s) URL" in doctor
