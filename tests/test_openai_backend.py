"""The openai backend, driving the real `openai` SDK against the fake Chat Completions API
(tests/fake_openai.py), plain and streamed; and a real `run.sh worker --backend openai`."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest
from conftest import git_init, run_sh
from fake_api import make_session
from fake_openai import FakeOpenAI, Reply, call

from harness.agent.tools import ToolBox
from harness.backends.context import STUB
from harness.backends.openai import ChatLoop, OpenAIBackend, is_openai
from harness.backends.openai_errors import reset_time
from harness.backends.toolloop import CUT_CALL, CUT_TEXT
from harness.errors import BACKEND, USAGE, BackendError, HarnessError, UsageError
from harness.state import actions
from harness.types import CAPPED, FINISHED, GAVE_UP, Caps, Usage

EDITOR = "str_replace_based_edit_tool"
FAST_RETRY = {"retry-after-ms": "10"}
PRICES = {"gpt-test": {"input_tokens": 2.0, "output_tokens": 8.0,
                       "cache_creation_input_tokens": 2.0, "cache_read_input_tokens": 0.5}}


@pytest.fixture(name="oai")
def oai_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    """A running fake Chat Completions API; the SDK finds a test key in the environment."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    server = FakeOpenAI()
    server.start()
    try:
        yield server
    finally:
        server.stop()


def run(oai, tmp_path, prompt="Build the feature.", **fields):
    """Run the backend against the fake API; returns (outcome, session, events)."""
    events: list[dict] = []
    options = {"base_url": oai.base_url, **fields.pop("options", {})}
    fields = {"model": "gpt-test", "prices": PRICES, **fields}
    session = make_session(tmp_path, events=events, options=options, **fields)
    return OpenAIBackend().run(prompt, session), session, events


def script_edit_run_finish(oai):
    oai.reply("Creating the file.", call(EDITOR, {"command": "create", "path": "hello.txt",
                                                  "file_text": "hello world\n"}, id="c_create"))
    oai.reply(None, call("bash", {"command": "cat hello.txt | tr a-z A-Z"}, id="c_bash"))
    oai.reply("All done.", call("finish", {"summary": "wrote hello.txt"}, id="c_finish"))


@pytest.mark.parametrize("stream", [False, True])
def test_tool_loop_edits_a_file_runs_a_command_and_finishes(oai, tmp_path, stream):
    script_edit_run_finish(oai)
    outcome, session, events = run(oai, tmp_path, prompt="The prompt.",
                                   caps=Caps(max_tokens=1234), options={"stream": stream})
    assert (session.workdir / "hello.txt").read_text() == "hello world\n"
    assert (outcome.status, outcome.summary, outcome.turns) == (FINISHED, "wrote hello.txt", 3)
    assert [e["event"] for e in events] == ["model_turn", "tool_call"] * 3
    tools = [e for e in events if e["event"] == "tool_call"]
    assert [t["name"] for t in tools] == [EDITOR, "bash", "finish"]
    assert tools[1]["result"] == "HELLO WORLD\n[exit code 0]"
    # recorded in the Messages API's shape, as every backend records a turn
    assert events[0]["content"] == [
        {"type": "text", "text": "Creating the file."},
        {"type": "tool_use", "id": "c_create", "name": EDITOR,
         "input": {"command": "create", "path": "hello.txt", "file_text": "hello world\n"}}]
    assert (events[0]["stop_reason"], events[0]["finish_reason"]) == ("tool_use", "tool_calls")
    first = oai.requests[0]
    assert first["model"] == "gpt-test" and first["max_tokens"] == 1234
    assert first["messages"] == [{"role": "user", "content": "The prompt."}]
    assert [t["function"]["name"] for t in first["tools"]] == [
        "bash", EDITOR, "note", "verdict", "plan", "finish"]
    assert oai.headers[0]["authorization"] == "Bearer test-key"
    assert all(bool(r.get("stream")) == stream for r in oai.requests)
    if stream:
        assert all(r["stream_options"] == {"include_usage": True} for r in oai.requests)
    third = oai.requests[2]["messages"]
    assert [m["role"] for m in third] == ["user", "assistant", "tool", "assistant", "tool"]
    assert third[1] == {"role": "assistant", "content": "Creating the file.", "tool_calls": [
        {"id": "c_create", "type": "function", "function": {"name": EDITOR, "arguments": json.dumps(
            {"command": "create", "path": "hello.txt", "file_text": "hello world\n"})}}]}
    assert third[2] == {"role": "tool", "tool_call_id": "c_create", "content": "created hello.txt"}
    assert third[4] == {"role": "tool", "tool_call_id": "c_bash",
                        "content": "HELLO WORLD\n[exit code 0]"}


def test_function_tools_have_schemas_for_the_built_in_tools(oai, tmp_path):
    oai.reply("ok")
    run(oai, tmp_path)
    tools = {t["function"]["name"]: t for t in oai.requests[0]["tools"]}
    assert all(t["type"] == "function" for t in tools.values())
    assert set(tools["bash"]["function"]["parameters"]["properties"]) == {"command", "restart"}
    editor = tools[EDITOR]["function"]["parameters"]
    assert editor["required"] == ["command", "path"]
    assert editor["properties"]["command"]["enum"] == ["view", "create", "str_replace", "insert"]
    assert tools["verdict"]["function"]["parameters"]["required"] == ["verdict", "reason"]


def test_a_validator_gives_its_verdict(oai, tmp_path):
    oai.reply(None, call("verdict", {"verdict": "pass", "reason": "tests pass"}))
    oai.reply("Verified.")
    run_id = "1700000000-validator-F-001"
    (tmp_path / "state" / "runs" / run_id).mkdir(parents=True)
    (tmp_path / "state" / "runs" / run_id / "manifest.json").write_text('{"role": "validator"}')
    outcome, session, events = run(oai, tmp_path, role="validator", run_id=run_id,
                                   tools=["bash", "verdict", "note"])
    assert events[1]["result"].startswith("verdict recorded: pass")
    assert (outcome.status, outcome.summary) == (FINISHED, "Verified.")
    assert actions.read_verdict(session.state, session.run_id)["verdict"] == "pass"


def test_tool_errors_and_bad_arguments_go_back_as_error_results(oai, tmp_path):
    oai.reply(None, call(EDITOR, {"command": "view", "path": "missing.txt"}, id="t1"),
              call("bash", '{"command": "ls"', id="t2"))
    oai.reply("ok")
    outcome, _, events = run(oai, tmp_path)
    assert outcome.status == FINISHED
    results = oai.requests[1]["messages"][-2:]
    assert [r["tool_call_id"] for r in results] == ["t1", "t2"]
    assert all(r["content"].startswith("ERROR: ") for r in results)
    assert "takes a JSON object" in results[1]["content"]
    # the malformed arguments go back as they came
    assert oai.requests[1]["messages"][1]["tool_calls"][1]["function"]["arguments"] == (
        '{"command": "ls"')


def test_end_turn_finishes_and_a_refusal_gives_up(oai, tmp_path):
    oai.reply("Nothing to change.")
    outcome, _, _ = run(oai, tmp_path)
    assert (outcome.status, outcome.summary, outcome.detail) == (
        FINISHED, "Nothing to change.", "stop_reason end_turn")
    oai.reply(None, finish_reason="content_filter")
    assert run(oai, tmp_path)[0].status == GAVE_UP


@pytest.mark.parametrize("stream", [False, True])
def test_a_tool_call_cut_at_the_token_limit_is_continued(oai, tmp_path, stream):
    oai.reply(None, call("bash", {"command": "echo one > one.txt"}, id="ok"),
              call(EDITOR, '{"command": "create", "pa', id="cut"), finish_reason="length")
    oai.reply("done")
    outcome, session, events = run(oai, tmp_path, options={"stream": stream})
    assert (outcome.status, outcome.turns) == (FINISHED, 2)
    assert (session.workdir / "one.txt").read_text() == "one\n"
    answer = oai.requests[1]["messages"][-2:]
    assert (answer[0]["tool_call_id"], answer[0]["content"].startswith("ERROR")) == ("ok", False)
    assert answer[1] == {"role": "tool", "tool_call_id": "cut", "content": "ERROR: " + CUT_CALL}
    assert [e["cut_tool"] for e in events if e["event"] == "continued"] == [EDITOR]


def test_replies_cut_at_the_token_limit_four_times_in_a_row_end_the_run(oai, tmp_path):
    for _ in range(4):
        oai.reply("and so", finish_reason="length")
    outcome, _, events = run(oai, tmp_path, caps=Caps(max_tokens=64))
    assert (outcome.status, outcome.turns) == (CAPPED, 4)
    assert outcome.detail == "4 replies in a row cut off at max_tokens (64)"
    assert oai.requests[1]["messages"][-1] == {"role": "user", "content": CUT_TEXT}


def test_which_field_carries_the_token_cap(oai, tmp_path, monkeypatch):
    assert is_openai(None) and is_openai("https://api.openai.com/v1")
    assert not is_openai("http://127.0.0.1:11434/v1")
    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.openai.com/v1")
    with ToolBox(make_session(tmp_path, tools=[])) as tools:
        session = make_session(tmp_path, tools=[], caps=Caps(max_tokens=99))
        assert ChatLoop(session, tools).max_tokens_field == "max_completion_tokens"
    oai.reply("ok")
    run(oai, tmp_path, caps=Caps(max_tokens=99),
        options={"max_tokens_field": "max_completion_tokens"})
    assert oai.requests[0]["max_completion_tokens"] == 99 and "max_tokens" not in oai.requests[0]


def test_turns_cap(oai, tmp_path):
    for _ in range(3):
        oai.reply(None, call("bash", {"command": "true"}))
    outcome, _, _ = run(oai, tmp_path, caps=Caps(turns=2))
    assert (outcome.status, outcome.turns) == (CAPPED, 2)
    assert "turns cap" in outcome.detail and len(oai.requests) == 2


def test_dollar_cap_per_run(oai, tmp_path):
    for _ in range(3):
        oai.reply(None, call("bash", {"command": "true"}), prompt=100_000)  # $0.20 a call
    outcome, _, _ = run(oai, tmp_path, caps=Caps(dollars=0.3))
    assert (outcome.status, outcome.turns) == (CAPPED, 2)
    assert "dollar cap" in outcome.detail and len(oai.requests) == 2


@pytest.mark.parametrize("stream", [False, True])
def test_wall_clock_cap_bounds_a_hanging_call_and_its_retries(oai, tmp_path, stream):
    oai.reply("too late", delay=30)
    start = time.monotonic()
    # no answer before the cap: an outage (exit 6, no attempt), not the agent's capped run
    with pytest.raises(BackendError, match="did not answer before the run's wall-clock cap"
                       ) as raised:
        run(oai, tmp_path, caps=Caps(wall_seconds=1),
            options={"max_retries": 2, "stream": stream})
    assert time.monotonic() - start < 5
    assert raised.value.outcome.turns == 0  # type: ignore[attr-defined]
    assert len(oai.requests) == 1  # no retry once the time is spent


@pytest.mark.parametrize("stream", [False, True])
def test_usage_with_cached_tokens_and_its_cost(oai, tmp_path, stream):
    oai.reply(None, call("bash", {"command": "true"}), prompt=1000, completion=200)
    oai.reply("done", prompt=1500, completion=100, cached=1000)
    outcome, _, events = run(oai, tmp_path, options={"stream": stream})
    assert outcome.usage == Usage(input_tokens=1500, output_tokens=300,
                                  cache_read_input_tokens=1000)
    expected = (1500 * 2.0 + 300 * 8.0 + 1000 * 0.5) / 1e6
    assert outcome.cost_usd == pytest.approx(expected)
    assert events[-1]["so_far"] == {"turns": 2, "cost_usd": round(expected, 6)}


def test_an_unpriced_model_has_an_unknown_cost(oai, tmp_path):
    oai.models.append("local-llm")
    oai.reply("done", prompt=1000, completion=100)
    outcome, _, events = run(oai, tmp_path, model="local-llm", prices={})
    assert outcome.cost_usd is None
    assert events[-1]["so_far"]["cost_usd"] is None


@pytest.mark.parametrize("free", [{"local-llm": {"input_tokens": 0, "output_tokens": 0}},
                                  {"default": {"input_tokens": 0, "output_tokens": 0}}])
def test_a_model_priced_at_zero_is_free(oai, tmp_path, free):
    oai.models.append("local-llm")
    oai.reply("done", prompt=1000, completion=100)
    outcome, _, events = run(oai, tmp_path, model="local-llm", prices=free)
    assert outcome.cost_usd == 0.0
    assert events[-1]["so_far"]["cost_usd"] == 0.0


def test_old_tool_results_are_cleared_within_the_budget(oai, tmp_path):
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "big.txt").write_text("x" * 8000 + "\n")
    for _ in range(5):
        oai.reply(None, call("bash", {"command": "cat big.txt"}))
    oai.reply("done")
    oai.count_input = True  # the server counts each request's tokens, as a real one does
    outcome, _, events = run(oai, tmp_path, caps=Caps(context_tokens=5000))
    assert outcome.status == FINISHED
    cleared = [e for e in events if e["event"] == "context_cleared"]
    assert cleared and cleared[0]["why"] == "budget"
    last = oai.requests[-1]["messages"]
    stubs = [m for m in last if m["role"] == "tool" and m["content"] == STUB.format(
        name="bash", turn=1)]
    assert len(stubs) == 1
    assert last[-1]["content"].startswith("x" * 100)  # the newest result is kept


def test_a_context_length_error_clears_harder_then_ends_the_run_as_failed(oai, tmp_path):
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "big.txt").write_text("y" * 6000 + "\n")
    oai.reply(None, call("bash", {"command": "cat big.txt"}))
    oai.reply(None, call("bash", {"command": "cat big.txt"}))
    oai.reply("done")
    oai.context_limit = 2500  # the third request holds two results: refused
    outcome, _, events = run(oai, tmp_path, caps=Caps(context_tokens=None))
    assert outcome.status == FINISHED  # cleared harder, then accepted
    assert [e["why"].startswith("the API refused the size") for e in events
            if e["event"] == "context_cleared"] == [True]
    oai.context_limit = 10
    oai.reply("never")
    outcome, _, _ = run(oai, tmp_path)
    assert outcome.status == CAPPED
    assert "context full" in outcome.detail and "context length" in outcome.detail


@pytest.mark.parametrize("stream", [False, True])
def test_a_refused_key_is_a_usage_error_naming_the_fix(oai, tmp_path, monkeypatch, stream):
    monkeypatch.setenv("OPENAI_API_KEY", "wrong-key")
    with pytest.raises(UsageError) as caught:
        run(oai, tmp_path, options={"stream": stream})
    message = str(caught.value)
    assert caught.value.exit_code == USAGE
    assert "refused the key (401)" in message and "OPENAI_API_KEY" in message
    assert str(tmp_path / "state" / "env") in message
    assert ".config/autonomous-harness/env" in message
    assert len(oai.requests) == 1  # not retried


def test_no_key_for_openai_itself_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    session = make_session(tmp_path, model="gpt-5")
    with pytest.raises(UsageError, match="no OpenAI API key: put OPENAI_API_KEY"):
        OpenAIBackend().run("prompt", session)


def test_a_local_server_needs_no_key_and_comes_from_the_environment(oai, tmp_path,
                                                                    monkeypatch):
    oai.key = "no-key"
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("OPENAI_BASE_URL", oai.base_url)
    oai.reply("done")
    events: list[dict] = []
    session = make_session(tmp_path, events=events, model="gpt-test", prices=PRICES)
    assert OpenAIBackend().run("prompt", session).status == FINISHED


@pytest.mark.parametrize(("path", "says"), [
    ("/v1", "has no model 'gpt-missing' (404)"),
    ("/nowhere", "has no Chat Completions endpoint (404)"),
])
def test_an_unknown_model_or_endpoint_is_a_usage_error(oai, tmp_path, path, says):
    base = oai.base_url.removesuffix("/v1") + path
    with pytest.raises(UsageError, match=r"(?s)" + says.replace("(", r"\(").replace(")", r"\)")):
        run(oai, tmp_path, model="gpt-missing", options={"base_url": base})


def test_a_bad_request_naming_the_model_is_a_usage_error(oai, tmp_path):
    oai.error(400, None, "gpt-tset is not a valid model ID")
    with pytest.raises(UsageError, match=r"has no model 'gpt-test' \(400\)"):
        run(oai, tmp_path)
    oai.error(400, None, "messages: too many items")
    with pytest.raises(BackendError, match=r"rejected the request \(400\)"):
        run(oai, tmp_path)


def test_rate_limit_then_success(oai, tmp_path):
    oai.error(429, "rate_limit_exceeded", "slow down", FAST_RETRY, kind="requests")
    oai.reply("done")
    outcome, _, _ = run(oai, tmp_path)
    assert (outcome.status, len(oai.requests)) == (FINISHED, 2)


@pytest.mark.parametrize("stream", [False, True])
def test_rate_limit_after_retries_gives_the_reset_time(oai, tmp_path, stream):
    oai.error(429, "rate_limit_exceeded", "Rate limit reached", {"retry-after": "30"},
              kind="requests")
    before = datetime.now(timezone.utc)
    with pytest.raises(BackendError) as caught:
        run(oai, tmp_path, options={"max_retries": 0, "stream": stream})
    assert caught.value.exit_code == BACKEND
    reset = datetime.fromisoformat(caught.value.reset_at.replace("Z", "+00:00"))
    assert 28 <= (reset - before).total_seconds() <= 32
    assert "rate limited" in str(caught.value) and "Rate limit reached" in str(caught.value)
    assert caught.value.outcome.status == CAPPED  # the run's record gets what it spent


@pytest.mark.parametrize("status", [500, 503])
def test_a_failing_server_after_retries_is_a_backend_error(oai, tmp_path, status):
    oai.error(status, None, "The server had an error", FAST_RETRY, times=3, kind="server_error")
    with pytest.raises(BackendError) as caught:
        run(oai, tmp_path, options={"max_retries": 2})
    assert caught.value.exit_code == BACKEND
    assert f"is failing ({status}) after 2 retries" in str(caught.value)
    assert len(oai.requests) == 3


def test_a_timeout_with_time_left_is_a_backend_error(oai, tmp_path):
    oai.reply("too late", delay=30)
    with pytest.raises(BackendError, match="did not answer in time after 0 retries"):
        run(oai, tmp_path, caps=Caps(wall_seconds=60), options={"timeout": 0.5, "max_retries": 0})


def test_a_stream_that_ends_before_the_reply_is_a_backend_error(oai, tmp_path):
    oai.replies.append(Reply({"role": "assistant", "content": "half a"}, finish_reason=None))
    with pytest.raises(BackendError, match="ended before it was finished"):
        run(oai, tmp_path, options={"stream": True})


def test_an_unreachable_server_is_a_backend_error(oai, tmp_path):
    oai.stop()
    with pytest.raises(BackendError, match="cannot reach the API at"):
        run(oai, tmp_path, options={"max_retries": 0})


def test_reset_time_from_headers():
    now = datetime(2026, 4, 24, 10, 0, 0, tzinfo=timezone.utc)
    assert reset_time({"Retry-After": "30"}, now) == "2026-04-24T10:00:30Z"
    assert reset_time({"retry-after-ms": "1500"}, now) == "2026-04-24T10:00:01Z"
    assert reset_time({"retry-after": "Fri, 24 Apr 2026 11:00:00 GMT"}, now) == (
        "2026-04-24T11:00:00Z")
    assert reset_time({"x-ratelimit-reset-requests": "1s",
                       "x-ratelimit-reset-tokens": "6m0s"}, now) == "2026-04-24T10:06:00Z"
    assert reset_time({"x-ratelimit-reset-tokens": "1h2m3.5s"}, now) == "2026-04-24T11:02:03Z"
    assert reset_time({"x-ratelimit-reset": "1777028400"}, now) == "2026-04-24T11:00:00Z"
    assert reset_time({"x-ratelimit-reset": "1777028400000"}, now) == "2026-04-24T11:00:00Z"
    assert reset_time({"retry-after": "soon"}, now) is None
    assert reset_time({}, now) is None


def test_a_spent_budget_stops_before_the_call(oai, tmp_path):
    def check_budget(cost: float) -> None:
        raise HarnessError("mission budget spent")

    with pytest.raises(HarnessError, match="budget"):
        run(oai, tmp_path, check_budget=check_budget)
    assert oai.requests == []


# --- a real run.sh worker against the fake server --------------------------------------


def test_run_sh_worker_with_backend_openai(oai, project: Path, tmp_path: Path):
    git_init(project)
    state = project / ".harness"
    (state / "config.yaml").write_text("prices:\n  gpt-test: {input_tokens: 1.0, "
                                       "output_tokens: 4.0}\n")
    oai.reply("Writing it.", call(EDITOR, {"command": "create", "path": "out.txt",
                                           "file_text": "made by the openai backend\n"}),
              prompt=1000, completion=50)
    oai.reply(None, call("bash", {"command": "echo key=$OPENAI_API_KEY"}), prompt=1100,
              completion=10)
    oai.reply(None, call("finish", {"summary": "out.txt written"}), prompt=1200, completion=20)
    oai.key = "sk-proj-0123456789abcdefghij0123456789"
    env = {"OPENAI_BASE_URL": oai.base_url, "OPENAI_API_KEY": oai.key}
    result = run_sh("worker", "next", "--backend", "openai", "--model", "gpt-test",
                    cwd=project, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (project / "out.txt").read_text() == "made by the openai backend\n"
    runs = sorted((state / "runs").iterdir())
    manifest = json.loads((runs[-1] / "manifest.json").read_text())
    assert (manifest["backend"], manifest["model"], manifest["turns"]) == (
        "openai", "gpt-test", 3)
    assert manifest["cost_usd"] == pytest.approx((3300 * 1.0 + 80 * 4.0) / 1e6)
    transcript = (runs[-1] / "transcript.jsonl").read_text()
    assert '"result": "key=\\n[exit code 0]"' in transcript  # the agent's shell has no key
    assert not [p for p in runs[-1].rglob("*") if p.is_file() and oai.key in p.read_text()]
    assert oai.requests[0]["messages"][0]["content"] == (runs[-1] / "prompt.md").read_text()


NO_RETRY = {"x-should-retry": "false"}


@pytest.mark.parametrize(("key", "model", "error", "code", "says"), [
    ("wrong-key", "gpt-test", None, 2, "refused the key (401)"),
    ("test-key", "gpt-missing", None, 2, "has no model 'gpt-missing' (404)"),
    ("test-key", "gpt-test", (429, "rate_limit_exceeded", {"retry-after": "120", **NO_RETRY}),
     6, "usage limit resets at "),
    ("test-key", "gpt-test", (500, None, NO_RETRY), 6, "is failing (500)"),
    ("test-key", "gpt-test", (400, "context_length_exceeded", {}), 1, "context full"),
])
def test_run_sh_worker_failures_keep_the_exit_code_contract(oai, project: Path, key, model,
                                                             error, code, says):
    if error:
        status, kind, headers = error
        oai.error(status, kind, "maximum context length is 10 tokens", headers, times=3)
    env = {"OPENAI_BASE_URL": oai.base_url, "OPENAI_API_KEY": key}
    result = run_sh("worker", "F-004", "--backend", "openai", "--model", model,
                    cwd=project, env=env)
    assert result.returncode == code, result.stdout + result.stderr
    assert says in result.stdout + result.stderr
    manifest = json.loads(max((project / ".harness" / "runs").glob("*/manifest.json"),
                              key=lambda p: p.stat().st_mtime).read_text())
    assert manifest["exit_code"] == code
    if code == 6 and status == 429:
        assert manifest["reset_at"] > datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    if code == 2:
        assert "OPENAI_API_KEY" in result.stderr or "--model" in result.stderr
    assert manifest["result"] == {1: "capped", 2: "error", 6: "backend-error"}[code]


# --- run.sh doctor: the key asked about at no cost -------------------------------------


def doctor_lines(invoke, oai, key: str) -> list[str]:
    env = {"OPENAI_BASE_URL": oai.base_url, "OPENAI_API_KEY": key}
    lines = invoke("doctor", "--backend", "openai", "--no-cron", env=env).output.splitlines()
    at = next(i for i, line in enumerate(lines) if "  backend worker: " in line)
    return lines[at:at + 2]  # the check and its fix


def test_doctor_asks_the_server_whether_it_takes_the_key(invoke, oai):
    oai.models.append("claude-sonnet-4-5")  # the example roles' model
    lines = doctor_lines(invoke, oai, "test-key")
    assert lines[0].startswith("ok    backend worker: openai: http://127.0.0.1:")
    assert "takes OPENAI_API_KEY" in lines[0]
    assert oai.requests == []  # it listed the models: no completion was asked for


def test_doctor_fails_a_refused_key_and_warns_of_an_unlisted_model(invoke, oai):
    lines = doctor_lines(invoke, oai, "wrong-key")
    assert lines[0].startswith("FAIL  backend worker: openai:")
    assert "refused the key (401)" in lines[0] and "OPENAI_API_KEY" in lines[0]
    lines = doctor_lines(invoke, oai, "test-key")
    assert lines[0].startswith("warn  backend worker:")
    assert "model claude-sonnet-4-5, which is not among the 1 models it lists" in lines[0]
    assert "set the role's `model`" in lines[1]
