"""A fake Anthropic Messages API for tests: a stdlib HTTP server on 127.0.0.1 that replays
a queue of scripted replies (plain JSON, or server-sent events when the request asks to
stream), error statuses with headers, or hangs; it keeps every request body it got.

Like the real API it counts a request's input tokens (here: four characters a token over
tools, system and messages) and reports them when `count_input` is set, refuses a request
over `context_limit` tokens with 400 "prompt is too long", and refuses a thinking block that
does not come back exactly as it was sent.

Tests use it through the `api` fixture (tests/conftest.py) and drive the real `anthropic` SDK
against it; bench/context.py does too, so this module needs no pytest.
Also here: `make_session`, the Session every backend and tool test builds on.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from harness.types import Caps, Session

PRICES = {"claude-test": {"input_tokens": 3.0, "output_tokens": 15.0,
                          "cache_creation_input_tokens": 3.75, "cache_read_input_tokens": 0.3}}
ALL_TOOLS = ["bash", "str_replace_based_edit_tool", "note", "verdict", "plan", "finish"]
_ids = itertools.count(1)


def text(s: str) -> dict[str, Any]:
    """A text content block."""
    return {"type": "text", "text": s}


def tool_use(name: str, input: dict[str, Any], id: str | None = None) -> dict[str, Any]:
    """A tool_use content block."""
    return {"type": "tool_use", "id": id or f"toolu_{next(_ids):04d}", "name": name,
            "input": input}


def thinking(thought: str) -> dict[str, Any]:
    """A thinking block, signed as the API signs it."""
    return {"type": "thinking", "thinking": thought, "signature": f"sig-{next(_ids):04d}"}


def count_tokens(body: dict[str, Any]) -> int:
    """A request's input tokens at four characters a token (cache markers do not count)."""
    counted = {k: body[k] for k in ("tools", "system", "messages") if k in body}
    return len(json.dumps(without_cache_marks(counted), ensure_ascii=False)) // 4


def without_cache_marks(value: Any) -> Any:
    """`value` with every `cache_control` key left out."""
    if isinstance(value, dict):
        return {k: without_cache_marks(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [without_cache_marks(v) for v in value]
    return value


def usage(input: int = 10, output: int = 5, cache_write: int = 0,
          cache_read: int = 0) -> dict[str, int]:
    """A usage object as the API reports it."""
    return {"input_tokens": input, "output_tokens": output,
            "cache_creation_input_tokens": cache_write, "cache_read_input_tokens": cache_read}


@dataclass
class Reply:
    """One scripted answer: a message, or an error status; after `delay` seconds."""

    content: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str | None = None
    usage: dict[str, int] = field(default_factory=usage)
    status: int = 200
    error: tuple[str, str] | None = None  # (error type, message)
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    cut_after: int | None = None  # a stream: close the connection after this many events


class FakeAPI:
    """The server; queue replies with `reply`/`error`, read `requests` afterwards."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.context_limit: int | None = None  # refuse requests over this many tokens
        self.count_input = False  # report each request's counted tokens as its input
        self.model: str | None = None  # the model replies say served them; None: the one asked
        self.keys: set[str] | None = None  # the keys it takes (x-api-key or bearer); None: any
        self.models: set[str] | None = None  # the models it knows; None: any
        self.counted: list[dict[str, Any]] = []  # count_tokens requests (free: no reply used)
        self.signed: dict[str, dict[str, Any]] = {}  # thinking blocks sent, by signature
        # makes a reply's content from the request when none is queued (bench/judge_model.py)
        self.respond: Callable[[dict[str, Any]], list[dict[str, Any]]] | None = None
        self.closing = threading.Event()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def reply(self, *content: dict[str, Any], stop_reason: str | None = None,
              delay: float = 0.0, **usage_counts: int) -> None:
        """Queue a message; stop_reason defaults to tool_use when it has a tool call."""
        if stop_reason is None:
            uses_tool = any(block["type"] == "tool_use" for block in content)
            stop_reason = "tool_use" if uses_tool else "end_turn"
        self.replies.append(Reply(list(content), stop_reason, usage(**usage_counts),
                                  delay=delay))

    def error(self, status: int, kind: str, message: str, headers: dict[str, str] | None = None,
              times: int = 1) -> None:
        """Queue an error status `times` times."""
        for _ in range(times):
            self.replies.append(Reply(status=status, error=(kind, message),
                                      headers=dict(headers or {})))

    def changed_thinking(self, body: dict[str, Any]) -> str | None:
        """The API's complaint when a thinking block it sent comes back changed."""
        for i, message in enumerate(body.get("messages", [])):
            content = message["content"] if isinstance(message["content"], list) else []
            for j, block in enumerate(content):
                if block.get("type") == "thinking" and self.signed.get(
                        block.get("signature")) != block:
                    return (f"messages.{i}.content.{j}: thinking blocks cannot be modified; "
                            "they must remain as they were in the original response")
        return None

    def before_reply(self, path: str, headers: Any, body: dict[str, Any]
                     ) -> tuple[int, dict[str, Any]] | None:
        """The answer to a request that gets none of the queued replies: an unknown path, a
        key it does not take (401), a model it does not know (404), a count_tokens call, a
        prompt over the context limit or a changed thinking block (400)."""
        key = headers.get("x-api-key") or headers.get("authorization", "").removeprefix(
            "Bearer ")
        tokens = count_tokens(body)
        if path not in ("/v1/messages", "/v1/messages/count_tokens"):
            return 404, _error_body("not_found_error", path)
        if self.keys is not None and key not in self.keys:
            return 401, _error_body("authentication_error", "invalid x-api-key")
        if self.models is not None and body.get("model") not in self.models:
            return 404, _error_body("not_found_error", f"model: {body.get('model')}")
        if path.endswith("/count_tokens"):
            self.counted.append(body)
            return 200, {"input_tokens": tokens}
        if self.context_limit is not None and tokens > self.context_limit:
            return 400, _error_body("invalid_request_error", f"prompt is too long: {tokens} "
                                    f"tokens > {self.context_limit} maximum")
        if changed := self.changed_thinking(body):
            return 400, _error_body("invalid_request_error", changed)
        return None

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.closing.set()  # wakes handlers that are hanging
        self.server.shutdown()
        self.server.server_close()


class _Handler(BaseHTTPRequestHandler):
    """Answers POST /v1/messages with the next reply queued on `api`."""

    api: FakeAPI

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        api = self.api
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        api.requests.append(body)
        api.headers.append({k.lower(): v for k, v in self.headers.items()})
        if answered := api.before_reply(self.path.split("?")[0], self.headers, body):
            return self._json(*answered, {})  # Claude Code adds ?beta=true to the path
        tokens = count_tokens(body)
        if not api.replies and api.respond is not None:
            api.reply(*api.respond(body))
        if not api.replies:
            return self._json(500, _error_body("api_error", "fake API: no reply queued"),
                              {"x-should-retry": "false"})
        reply = api.replies.popleft()
        if api.closing.wait(reply.delay):
            return
        if reply.error:
            return self._json(reply.status, _error_body(*reply.error), reply.headers)
        counted = {"input_tokens": tokens} if api.count_input else {}
        message = {
            "id": f"msg_{next(_ids):04d}", "type": "message", "role": "assistant",
            "model": api.model or body["model"], "content": reply.content,
            "stop_reason": reply.stop_reason,
            "stop_sequence": None, "usage": {**reply.usage, **counted},
        }
        api.signed.update({b["signature"]: b for b in reply.content if b["type"] == "thinking"})
        if body.get("stream"):
            return self._sse(message, reply.cut_after)
        return self._json(200, message, {})

    def _json(self, status: int, obj: object, headers: dict[str, str]) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", f"req_{next(_ids):04d}")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, message: dict[str, Any], cut_after: int | None = None) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        for sent, (name, data) in enumerate(stream_events(message)):
            if sent == cut_after:  # the connection drops mid-stream
                self.close_connection = True
                return
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()


def _handler(api: FakeAPI) -> type[BaseHTTPRequestHandler]:
    """A handler class that serves `api` (the server makes one handler per request)."""
    return type("Handler", (_Handler,), {"api": api})


def _error_body(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def stream_events(message: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The server-sent events the API sends for `message`, in the real order."""
    final_usage = message["usage"]
    start_usage = {**final_usage, "output_tokens": 1}
    yield "message_start", {"type": "message_start", "message": {
        **message, "content": [], "stop_reason": None, "usage": start_usage}}
    yield "ping", {"type": "ping"}
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {"type": "text", "text": ""}}
            words = block["text"].split(" ")
            pieces = [w + " " for w in words[:-1]] + words[-1:]
            for piece in pieces:
                yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "text_delta", "text": piece}}
        elif block["type"] == "thinking":
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {**block, "thinking": "",
                                                            "signature": ""}}
            yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": {
                "type": "thinking_delta", "thinking": block["thinking"]}}
            yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": {
                "type": "signature_delta", "signature": block["signature"]}}
        else:
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {**block, "input": {}}}
            raw = json.dumps(block["input"])
            for i in range(0, len(raw), 7):  # the API sends partial JSON in small pieces
                yield "content_block_delta", {
                    "type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": raw[i:i + 7]}}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield "message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
        "usage": {"output_tokens": final_usage["output_tokens"]}}
    yield "message_stop", {"type": "message_stop"}


def make_session(tmp_path: Path, *, tools: list[str] | None = None,
                 events: list[dict[str, Any]] | None = None, **fields: Any) -> Session:
    """A Session in `tmp_path` (workdir `work/`, state `state/`); `fields` override the rest."""
    workdir, state = tmp_path / "work", tmp_path / "state"
    workdir.mkdir(exist_ok=True)
    state.mkdir(exist_ok=True)
    recorded = events if events is not None else []
    values: dict[str, Any] = {
        "run_id": "1700000000-worker-F-001", "role": "worker", "feature_id": "F-001",
        "workdir": workdir, "state": state, "home": tmp_path, "model": "claude-test",
        "caps": Caps(), "tools": list(ALL_TOOLS if tools is None else tools),
        "prices": PRICES, "record": recorded.append, "check_budget": lambda cost: None,
    }
    values.update(fields)
    return Session(**values)
