"""The openai backend against servers of others' making: what vLLM, Ollama, llama.cpp's
llama-server, LM Studio, OpenRouter and LiteLLM send where OpenAI's API sends otherwise,
reproduced verbatim by the fake Chat Completions server (tests/fake_openai.py `raw`,
`stream`), each through a real `run.sh worker --backend openai`, plain and streamed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_sh
from fake_openai import FakeOpenAI
from test_openai_backend import oai_fixture  # noqa: F401  (the fake API, as `oai`)

EDITOR = "str_replace_based_edit_tool"




def worker(oai: FakeOpenAI, project: Path, model: str = "gpt-test", stream: bool = False,
           **options: Any) -> tuple[Any, dict[str, Any], list[dict[str, Any]]]:
    """A real run.sh worker run against the fake server: the result, its manifest and the
    transcript's events."""
    role = project / ".harness" / "roles" / "worker.yaml"
    options = {"stream": stream, **options}
    role.parent.mkdir(exist_ok=True)
    role.write_text(f"options: {json.dumps(options)}\n")  # role files override key by key
    env = {"OPENAI_BASE_URL": oai.base_url, "OPENAI_API_KEY": oai.key}
    result = run_sh("worker", "F-004", "--backend", "openai", "--model", model,
                    cwd=project, env=env)
    run = max((project / ".harness" / "runs").iterdir(), key=lambda p: p.stat().st_mtime)
    manifest = json.loads((run / "manifest.json").read_text())
    transcript = run / "transcript.jsonl"
    events = [json.loads(line) for line in transcript.read_text().splitlines()
              ] if transcript.exists() else []
    return result, manifest, events


def completion(message: dict[str, Any], finish: Any = "stop", **extra: Any) -> dict[str, Any]:
    choice = {"index": 0, "message": message}
    if finish != "absent":
        choice["finish_reason"] = finish
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "gpt-test",
            "choices": [choice], **extra}


def chunk(delta: dict[str, Any] | None = None, finish: Any = None, **extra: Any
          ) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0,
            "model": "gpt-test", "choices": choices, **extra}


def tool_call(name: str, arguments: Any, id: Any = "call_1", **extra: Any) -> dict[str, Any]:
    call = {"type": "function", "function": {"name": name, "arguments": arguments}, **extra}
    if id != "absent":
        call["id"] = id
    return call


def create(path: str, text: str) -> dict[str, Any]:
    return {"command": "create", "path": path, "file_text": text}


def finish(oai: FakeOpenAI) -> None:
    """Queue the call that ends the run (streamed if asked to)."""
    oai.reply(None, tool_call("finish", json.dumps({"summary": "done"}), id="call_fin"))


def tool_results(events: list[dict[str, Any]]) -> list[tuple[str, bool, str]]:
    return [(e["name"], e["is_error"], e["result"]) for e in events
            if e.get("event") == "tool_call"]


# --- usage ------------------------------------------------------------------------------


@pytest.mark.parametrize("usage", ["absent", None, {"prompt_tokens": None}])
def test_a_completion_without_usage(oai, project, usage):
    edit = completion({"role": "assistant", "content": "", "tool_calls": [
        tool_call(EDITOR, json.dumps(create("a.txt", "A\n")))]}, "tool_calls",
        **({} if usage == "absent" else {"usage": usage}))
    oai.raw(edit)
    finish(oai)
    result, manifest, events = worker(oai, project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (project / "a.txt").read_text() == "A\n"
    assert manifest["turns"] == 2


@pytest.mark.parametrize("usage_chunk", ["final, no choices", "none", "with finish"])
def test_a_stream_with_usage_anywhere_or_nowhere(oai, project, usage_chunk):
    usage = {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107}
    chunks = [chunk({"role": "assistant", "content": ""}),
              chunk({"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {
                  "name": EDITOR, "arguments": json.dumps(create("b.txt", "B\n"))}}]})]
    if usage_chunk == "with finish":
        chunks.append(chunk({}, "tool_calls", usage=usage))
    else:
        chunks.append(chunk({}, "tool_calls", usage=None))
    if usage_chunk == "final, no choices":
        chunks.append(chunk(None, usage=usage))
    oai.stream(*chunks)
    finish(oai)
    result, manifest, events = worker(oai, project, stream=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (project / "b.txt").read_text() == "B\n"
    turns = [e for e in events if e.get("event") == "model_turn"]
    assert turns[0]["usage"]["input_tokens"] == (0 if usage_chunk == "none" else 100)


# --- tool calls ---------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_arguments_as_an_object(oai, project, stream):
    args = create("c.txt", "C\n")
    if stream:
        oai.stream(chunk({"role": "assistant", "content": None, "tool_calls": [
            {"index": 0, "id": "c1", "type": "function",
             "function": {"name": EDITOR, "arguments": args}}]}),
            chunk({}, "tool_calls"))
    else:
        oai.raw(completion({"role": "assistant", "content": None, "tool_calls": [
            tool_call(EDITOR, args)]}, "tool_calls"))
    finish(oai)
    result, manifest, events = worker(oai, project, stream=stream)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (project / "c.txt").read_text() == "C\n"
    # sent back as the JSON text the API takes
    sent = oai.requests[1]["messages"][-2]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(sent) == args


@pytest.mark.parametrize("stream", [False, True])
def test_invalid_json_arguments_go_back_as_an_error_the_model_reads(oai, project, stream):
    bad = '{"command": "create", "path": "d.txt", "file_text": "D\n'
    if stream:
        oai.stream(chunk({"role": "assistant", "tool_calls": [
            {"index": 0, "id": "c1", "type": "function",
             "function": {"name": EDITOR, "arguments": bad}}]}), chunk({}, "tool_calls"))
    else:
        oai.raw(completion({"role": "assistant", "content": None, "tool_calls": [
            tool_call(EDITOR, bad)]}, "tool_calls"))
    finish(oai)
    result, manifest, events = worker(oai, project, stream=stream)
    assert result.returncode == 0, result.stdout + result.stderr
    [(name, is_error, text)] = tool_results(events)[:1]
    assert is_error and name == EDITOR
    assert oai.requests[1]["messages"][-1]["role"] == "tool"
    assert oai.requests[1]["messages"][-1]["content"].startswith("ERROR: ")


@pytest.mark.parametrize("ids", ["absent", "", None, "same"])
def test_several_calls_with_missing_empty_or_repeated_ids(oai, project, ids):
    calls = [tool_call(EDITOR, json.dumps(create(f"{n}.txt", f"{n}\n")),
                       id="call_x" if ids == "same" else ids) for n in ("e", "f", "g")]
    oai.raw(completion({"role": "assistant", "content": "Three files.", "tool_calls": calls},
                       "tool_calls"))
    finish(oai)
    result, manifest, events = worker(oai, project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [(project / f"{n}.txt").read_text() for n in "efg"] == ["e\n", "f\n", "g\n"]
    second = oai.requests[1]["messages"]
    sent_ids = [c["id"] for c in second[-4]["tool_calls"]]
    assert [m["tool_call_id"] for m in second[-3:]] == sent_ids
    assert all(sent_ids)


@pytest.mark.parametrize("numbered", [True, False])
def test_streamed_calls_split_across_chunks_with_or_without_index(oai, project, numbered):
    chunks = [chunk({"role": "assistant", "content": ""})]
    for n, name in enumerate(("h", "i")):
        raw = json.dumps(create(f"{name}.txt", f"{name}\n"))
        index = {"index": n} if numbered else {}
        chunks.append(chunk({"tool_calls": [{**index, "id": f"c_{name}", "type": "function",
                                             "function": {"name": EDITOR, "arguments": ""}}]}))
        for i in range(0, len(raw), 5):
            chunks.append(chunk({"tool_calls": [{**index,
                                                 "function": {"arguments": raw[i:i + 5]}}]}))
    chunks.append(chunk({}, "tool_calls"))
    oai.stream(*chunks)
    finish(oai)
    result, manifest, events = worker(oai, project, stream=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [(project / f"{n}.txt").read_text() for n in "hi"] == ["h\n", "i\n"]


def test_streamed_whole_calls_without_index_or_id(oai, project):
    """Some servers send each call whole, in one chunk, with no index and no id."""
    chunks = [chunk({"role": "assistant", "content": ""})]
    for name in ("j", "k"):
        chunks.append(chunk({"tool_calls": [{"type": "function", "function": {
            "name": EDITOR, "arguments": json.dumps(create(f"{name}.txt", f"{name}\n"))}}]}))
    chunks.append(chunk({}, "tool_calls"))
    oai.stream(*chunks)
    finish(oai)
    result, manifest, events = worker(oai, project, stream=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [(project / f"{n}.txt").read_text() for n in "jk"] == ["j\n", "k\n"]


# --- finish_reason, content ---------------------------------------------------------------


@pytest.mark.parametrize("reason", ["stop", None, "absent", "eos", "tool_call"])
def test_tool_calls_whatever_the_finish_reason(oai, project, reason):
    oai.raw(completion({"role": "assistant", "content": "", "tool_calls": [
        tool_call(EDITOR, json.dumps(create("l.txt", "L\n")))]}, reason))
    finish(oai)
    result, manifest, events = worker(oai, project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (project / "l.txt").read_text() == "L\n"
    assert manifest["turns"] == 2


@pytest.mark.parametrize("stream", [False, True])
def test_reasoning_fields_and_empty_content(oai, project, stream):
    message = {"role": "assistant", "content": "", "reasoning_content": "I think.",
               "reasoning": "I think.", "tool_calls": [
                   tool_call(EDITOR, json.dumps(create("m.txt", "M\n")))]}
    if stream:
        oai.stream(chunk({"role": "assistant", "content": None, "reasoning_content": "I"}),
                   chunk({"content": "", "reasoning": " think", "tool_calls": [
                       {"index": 0, **message["tool_calls"][0]}]}),
                   chunk({}, "tool_calls"))
    else:
        oai.raw(completion(message, "tool_calls"))
    finish(oai)
    result, manifest, events = worker(oai, project, stream=stream)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (project / "m.txt").read_text() == "M\n"
    assert not [m for m in oai.requests[1]["messages"] if "reasoning" in m]


# --- failures as other servers say them ---------------------------------------------------

MAX_TOKENS_REFUSED = {"error": {
    "message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
               "'max_completion_tokens' instead.", "type": "invalid_request_error",
    "param": "max_tokens", "code": "unsupported_parameter"}}
NO_RETRY = {"x-should-retry": "false"}


@pytest.mark.slow  # one run.sh run per case: CI runs them all (HARNESS_SLOW=1)
@pytest.mark.parametrize(("status", "body", "code", "says"), [
    (404, {"error": "model 'llama9' not found, try pulling it first"}, 2,
     "has no model 'gpt-test' (404)"),
    (404, {"object": "error", "message": "The model `gpt-test` does not exist.",
           "type": "NotFoundError", "param": None, "code": 404}, 2, "has no model 'gpt-test'"),
    (400, {"error": {"message": "gpt-test is not a valid model ID", "code": 400}}, 2,
     "has no model 'gpt-test'"),
    (404, "404 page not found", 2, "404 page not found"),
    (500, "Internal Server Error: the GPU fell off", 6, "the GPU fell off"),
    (503, {"error": "Loading model"}, 6, "Loading model"),
    (400, MAX_TOKENS_REFUSED, 2, "max_tokens_field"),
    (400, {"error": {"message": "Unrecognized request argument supplied: "
                                "max_completion_tokens", "code": None}}, 2, "max_tokens_field"),
    (200, {"error": {"message": "Provider returned error", "code": 502}}, 6,
     "Provider returned error"),
    (200, {"id": "x", "object": "chat.completion", "created": 0, "model": "gpt-test",
           "choices": []}, 6, "no choices"),
    (500, {"error": {"code": 500, "message": "tools param requires --jinja flag",
                     "type": "server_error"}}, 2, "does not take tools"),
    (500, {"code": 500, "message": "Unsupported param: tools", "type": "server_error"}, 2,
     "does not take tools"),
    (400, {"error": {"message": "registry.ollama.ai/library/gemma:2b does not support tools",
                     "type": "api_error"}}, 2, "does not take tools"),
    (400, {"object": "error", "message": "\"auto\" tool choice requires "
           "--enable-auto-tool-choice and --tool-call-parser to be set", "code": 400}, 2,
     "does not take tools"),
    (200, "<html>Bad gateway</html>", 6, "Bad gateway"),
    (200, ["a", "list"], 6, "no reply"),
])
def test_failures_as_servers_say_them(oai, project, status, body, code, says):
    for _ in range(3):  # the SDK's retries
        oai.raw(body, status, NO_RETRY)
    result, manifest, events = worker(oai, project)
    out = result.stdout + result.stderr
    assert result.returncode == code, out
    assert says in out
    assert manifest["exit_code"] == code
    assert "Traceback" not in out


def test_an_error_streamed_with_status_200(oai, project):
    oai.stream(chunk({"role": "assistant", "content": "Hel"}),
               {"error": {"message": "upstream provider overloaded", "code": 502}})
    result, manifest, events = worker(oai, project, stream=True)
    out = result.stdout + result.stderr
    assert result.returncode == 6, out
    assert "upstream provider overloaded" in out


def test_a_model_named_with_slashes(oai, project):
    model = "anthropic/claude-sonnet-4.5:beta"
    oai.models.append(model)
    (project / ".harness" / "config.yaml").open("a").write(
        f'prices:\n  "{model}": {{input_tokens: 1.0, output_tokens: 4.0}}\n')
    oai.reply(None, tool_call(EDITOR, json.dumps(create("n.txt", "N\n"))), prompt=1000,
              completion=10)
    finish(oai)
    result, manifest, events = worker(oai, project, model=model)
    assert result.returncode == 0, result.stdout + result.stderr
    assert manifest["model"] == model and manifest["cost_usd"] > 0
    assert oai.requests[0]["model"] == model
    show = run_sh("show", manifest["run_id"], cwd=project)
    assert show.returncode == 0 and model in show.stdout, show.stdout + show.stderr


def test_a_server_that_ignores_tools_and_answers_in_text(oai, project):
    oai.reply('{"name": "bash", "arguments": {"command": "ls"}}')
    result, manifest, events = worker(oai, project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert manifest["turns"] == 1


@pytest.mark.parametrize("line", ["data: {not json", 'error: {"code": 500, "message": "x"}'])
def test_a_stream_with_a_line_that_is_no_chunk(oai, project, line):
    oai.stream(chunk({"role": "assistant", "content": "Hel"}), line)
    result, manifest, events = worker(oai, project, stream=True)
    out = result.stdout + result.stderr
    assert result.returncode == 6, out
    assert "Traceback" not in out and manifest["exit_code"] == 6


@pytest.mark.parametrize("stream", [False, True])
def test_the_run_records_the_model_that_served_it(oai, project, stream):
    """OpenRouter's openrouter/auto answers with the model it chose, as OpenAI's gpt-5 with
    a dated snapshot: the run records it, as the anthropic backend's do."""
    served = "anthropic/claude-sonnet-4.5"
    message = {"role": "assistant", "content": "Nothing to do."}
    if stream:
        oai.stream({**chunk({"role": "assistant", "content": "Nothing to do."}),
                    "model": served}, {**chunk({}, "stop"), "model": served})
    else:
        oai.raw({**completion(message), "model": served})
    result, manifest, events = worker(oai, project, stream=stream)
    assert result.returncode == 0, result.stdout + result.stderr
    assert manifest["model"] == served


def test_a_server_that_refuses_stream_options(oai, project):
    """An older server (Azure's older API versions, pydantic servers that forbid extras)
    refuses `stream_options`: exit 2 naming the option, not an outage retried all night."""
    for _ in range(3):
        oai.raw({"error": {"message": "Unrecognized request argument supplied: stream_options",
                           "code": None}}, 400, NO_RETRY)
    result, manifest, events = worker(oai, project, stream=True)
    out = result.stdout + result.stderr
    assert result.returncode == 2, out
    assert "stream_options" in out and "options.stream" in out


def test_a_server_that_ignores_stream_and_answers_whole(oai, project):
    oai.raw(completion({"role": "assistant", "content": "Nothing to do."}))
    result, manifest, events = worker(oai, project, stream=True)
    out = result.stdout + result.stderr
    assert result.returncode == 6, out
    assert "run without `stream`" in out and "Traceback" not in out


@pytest.mark.parametrize("where", ["env", "role"])
@pytest.mark.parametrize("url", ["localhost:11434/v1", "127.0.0.1:11434", "htp://127.0.0.1/v1",
                                 "http://[::1/v1", "http://127.0.0.1:port/v1"])
def test_a_server_address_that_is_no_http_url(project, where, url):
    """`OPENAI_BASE_URL=localhost:11434/v1` (Ollama's port, the scheme left out) was 'cannot
    reach the API' after the retries, exit 6, which a loop waits out and retries all night:
    exit 2 naming where the address came from."""
    role = project / ".harness" / "roles" / "worker.yaml"
    role.parent.mkdir(exist_ok=True)
    role.write_text(f"options: {json.dumps({'base_url': url} if where == 'role' else {})}\n")
    env = {"OPENAI_API_KEY": "k", **({"OPENAI_BASE_URL": url} if where == "env" else {})}
    result = run_sh("worker", "F-004", "--backend", "openai", "--model", "qwen", cwd=project,
                    env=env)
    out = result.stdout + result.stderr
    assert result.returncode == 2, out
    assert url in out and "http://" in out
    assert ("OPENAI_BASE_URL" if where == "env" else "options.base_url") in out


def test_a_proxy_page_answering_a_streamed_request_is_named(oai, project):
    """A proxy's login page (HTML, status 200) answering a streamed request was 'ended before
    it was finished (no finish_reason); run without stream', which sends the person to the
    wrong fix: the page is named, as for a request not streamed."""
    oai.raw("<html><title>Sign in to Corp Proxy</title></html>",
            headers={"content-type": "text/html"})
    result, manifest, events = worker(oai, project, stream=True)
    out = result.stdout + result.stderr
    assert result.returncode == 6, out
    assert "Sign in to Corp Proxy" in out and "text/html" in out
    assert "without `stream`" not in out


@pytest.mark.parametrize("status, code, says", [
    (429, "insufficient_quota", "You exceeded your current quota, please check your plan and "
                                "billing details."),                            # OpenAI
    (402, 402, "Insufficient credits. Add more using https://openrouter.ai/settings/credits"),
])
def test_an_account_out_of_credit_is_a_setup_error(oai, project, status, code, says):
    """OpenAI's 429 insufficient_quota, OpenRouter's 402: no credit left on the account, no
    limit that lifts; exit 6 had a loop wait and retry it all night. Exit 2, saying to add
    credit."""
    for _ in range(3):
        oai.raw({"error": {"message": says, "type": "insufficient_quota", "code": code}},
                status, NO_RETRY)
    result, manifest, events = worker(oai, project)
    out = result.stdout + result.stderr
    assert result.returncode == 2, out
    assert says[:30] in out and "add credit" in out


def test_a_password_in_the_server_address_is_recorded_nowhere(project):
    """A gateway reached as http://user:password@host/v1: the failure message named the
    address whole, so the password went to the run's manifest and to stderr."""
    url = "http://bob:hunter2-gateway-pass@127.0.0.1:9/v1"
    result = run_sh("worker", "F-004", "--backend", "openai", "--model", "qwen", cwd=project,
                    env={"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "k"})
    assert result.returncode == 6, result.stdout + result.stderr
    assert "127.0.0.1:9" in result.stderr
    assert "hunter2" not in result.stdout + result.stderr
    state = project / ".harness"
    assert not [p for p in state.rglob("*") if p.is_file() and b"hunter2" in p.read_bytes()]


@pytest.mark.parametrize("body", [
    {**completion({}), "choices": {"0": {"message": {"role": "assistant", "content": "hi"}}}},
    {**completion({}), "choices": [None]},
    {**completion({"role": "assistant", "content": "hi"}), "usage": "n/a"},
    {**completion({"role": "assistant", "content": "hi"}), "usage": {"prompt_tokens": "12"}},
    completion({"role": "assistant", "content": None, "tool_calls": "none"}),
], ids=["choices-an-object", "a-null-choice", "usage-as-text", "a-count-as-text",
        "tool-calls-as-text"])
def test_a_reply_of_a_shape_no_server_should_send(oai, project, body):
    """A body the backend cannot read was a traceback and exit 1 (the agent's failure, to a
    loop): exit 6 naming what the server sent."""
    oai.raw(body)
    result, manifest, events = worker(oai, project)
    out = result.stdout + result.stderr
    assert result.returncode == 6, out
    assert "sent a reply the backend cannot read" in out and "Traceback" not in out


@pytest.mark.parametrize("chunks", [
    [chunk({"role": "assistant", "content": "hi"}), {**chunk({}, "stop"), "usage": "n/a"}],
    [chunk({"tool_calls": "x"}), chunk({}, "stop")],
    [chunk({"content": ["a", "b"]}), chunk({}, "stop")],
], ids=["usage-as-text", "tool-calls-as-text", "content-a-list-of-strings"])
def test_a_stream_of_a_shape_no_server_should_send(oai, project, chunks):
    oai.stream(*chunks)
    result, manifest, events = worker(oai, project, stream=True)
    out = result.stdout + result.stderr
    assert result.returncode == 6, out
    assert "the backend cannot read" in out and "Traceback" not in out
