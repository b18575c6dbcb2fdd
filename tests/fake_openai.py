"""A fake OpenAI Chat Completions API for tests: a stdlib HTTP server on 127.0.0.1 that
answers `POST /v1/chat/completions` from a queue of scripted replies (a completion as JSON,
or as server-sent chunks when the request asks to stream), error statuses with OpenAI-shaped
bodies and headers, or hangs; `GET /v1/models` lists the models it serves. It keeps every
request body and its headers.

Like a real server it refuses a key other than `key` (401), a model it does not serve (404
model_not_found), and a request over `context_limit` tokens (400 context_length_exceeded,
counting four characters a token over messages and tools); with `count_input` it reports a
request's counted tokens as its prompt tokens.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_ids = itertools.count(1)


def call(name: str, arguments: dict[str, Any] | str, id: str | None = None) -> dict[str, Any]:
    """A tool call as the API gives it (arguments as JSON text)."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": id or f"call_{next(_ids):04d}", "type": "function",
            "function": {"name": name, "arguments": text}}


def usage(prompt: int = 10, completion: int = 5, cached: int = 0) -> dict[str, Any]:
    """A usage object as the API reports it."""
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached}}


@dataclass
class Reply:
    """One scripted answer: a message, or an error status; after `delay` seconds."""

    message: dict[str, Any] = field(default_factory=dict)
    finish_reason: str | None = "stop"  # None: a stream cut before the end
    usage: dict[str, Any] = field(default_factory=usage)
    status: int = 200
    error: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    raw: Any = None  # a body sent as it is (a dict as JSON, a str as text): a server's quirk
    chunks: list[Any] | None = None  # a stream sent as it is: each a chunk (dict) or a line


class FakeOpenAI:
    """The server; queue replies with `reply`/`error`, read `requests` afterwards."""

    def __init__(self, key: str = "test-key", models: tuple[str, ...] = ("gpt-test",)):
        self.key, self.models = key, list(models)
        self.replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.context_limit: int | None = None
        self.count_input = False
        self.closing = threading.Event()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def reply(self, text: str | None = None, *calls: dict[str, Any],
              finish_reason: str | None = None, delay: float = 0.0, **usage_counts: int) -> None:
        """Queue a message; finish_reason defaults to tool_calls when it has calls."""
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if calls:
            message["tool_calls"] = list(calls)
        self.replies.append(Reply(message, finish_reason or ("tool_calls" if calls else "stop"),
                                  usage(**usage_counts), delay=delay))

    def error(self, status: int, code: str | None, message: str,
              headers: dict[str, str] | None = None, times: int = 1,
              kind: str = "invalid_request_error") -> None:
        """Queue an error status `times` times."""
        for _ in range(times):
            self.replies.append(Reply(status=status, headers=dict(headers or {}), error={
                "message": message, "type": kind, "param": None, "code": code}))

    def raw(self, body: Any, status: int = 200, headers: dict[str, str] | None = None) -> None:
        """Queue a body as it is, whatever the request: how a real server differs."""
        self.replies.append(Reply(status=status, raw=body, headers=dict(headers or {})))

    def stream(self, *chunks: Any) -> None:
        """Queue a stream as it is: each chunk a dict (sent as `data: {json}`) or a str (sent
        as that line), then `data: [DONE]`."""
        self.replies.append(Reply(chunks=list(chunks)))

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.closing.set()  # wakes handlers that are hanging
        self.server.shutdown()
        self.server.server_close()


def count_tokens(body: dict[str, Any]) -> int:
    """A request's input tokens at four characters a token."""
    return len(json.dumps([body.get("tools"), body["messages"]], ensure_ascii=False)) // 4


class _Handler(BaseHTTPRequestHandler):
    api: FakeOpenAI

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if (refused := self._refused()) or self.path != "/v1/models":
            return self._error(refused or Reply(status=404, error={"message": "no such path"}))
        self._json(200, {"object": "list", "data": [
            {"id": m, "object": "model", "created": 0, "owned_by": "test"}
            for m in self.api.models]})

    def do_POST(self) -> None:
        api = self.api
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        api.requests.append(body)
        api.headers.append({k.lower(): v for k, v in self.headers.items()})
        reply = self._refused() or self._checked(body)
        if reply is None and not api.replies:
            reply = Reply(status=500, error={"message": "fake API: no reply queued"},
                          headers={"x-should-retry": "false"})
        reply = reply or api.replies.popleft()
        if api.closing.wait(reply.delay):
            return
        if reply.error is not None:
            return self._error(reply)
        if reply.chunks is not None:
            return self._sse_raw(reply.chunks)
        if reply.raw is not None:
            return self._verbatim(reply)
        counted = {"prompt_tokens": count_tokens(body)} if api.count_input else {}
        completion = {
            "id": f"chatcmpl-{next(_ids)}", "object": "chat.completion", "created": 0,
            "model": body["model"], "usage": {**reply.usage, **counted},
            "choices": [{"index": 0, "message": reply.message,
                         "finish_reason": reply.finish_reason}]}
        if body.get("stream"):
            return self._sse(completion, body)
        self._json(200, completion)

    def _refused(self) -> Reply | None:
        if self.headers.get("authorization") != f"Bearer {self.api.key}":
            return Reply(status=401, error={"message": "Incorrect API key provided",
                                            "type": "invalid_request_error",
                                            "code": "invalid_api_key"})
        return None

    def _checked(self, body: dict[str, Any]) -> Reply | None:
        if self.path != "/v1/chat/completions":
            return Reply(status=404, error={"message": f"no route {self.path}"})
        if body["model"] not in self.api.models:
            return Reply(status=404, error={
                "message": f"The model `{body['model']}` does not exist or you do not have "
                           "access to it.", "type": "invalid_request_error",
                "code": "model_not_found"})
        tokens = count_tokens(body)
        if self.api.context_limit is not None and tokens > self.api.context_limit:
            return Reply(status=400, error={
                "message": f"This model's maximum context length is {self.api.context_limit}"
                           f" tokens. However, your messages resulted in {tokens} tokens.",
                "type": "invalid_request_error", "code": "context_length_exceeded"})
        return None

    def _error(self, reply: Reply) -> None:
        error = {"type": "invalid_request_error", "param": None, "code": None,
                 **(reply.error or {})}
        self._json(reply.status, {"error": error}, reply.headers)

    def _json(self, status: int, obj: object, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _verbatim(self, reply: Reply) -> None:
        is_text = isinstance(reply.raw, str)
        data = reply.raw.encode() if is_text else json.dumps(reply.raw).encode()
        self.send_response(reply.status)
        self.send_header("content-type", "text/plain" if is_text else "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _sse_raw(self, chunks: list[Any]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        for chunk in chunks:
            line = chunk if isinstance(chunk, str) else f"data: {json.dumps(chunk)}"
            self.wfile.write(f"{line}\n\n".encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")

    def _sse(self, completion: dict[str, Any], body: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        with_usage = (body.get("stream_options") or {}).get("include_usage")
        for chunk in stream_chunks(completion, bool(with_usage)):
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")


def _handler(api: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    return type("Handler", (_Handler,), {"api": api})


def stream_chunks(completion: dict[str, Any], with_usage: bool) -> Iterator[dict[str, Any]]:
    """The chunks the API streams for `completion`: the text in words, each tool call's id
    and name once and its arguments in small pieces, the finish reason, then the usage."""
    choice = completion["choices"][0]
    message = choice["message"]
    head = {k: completion[k] for k in ("id", "created", "model")}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    words = (message.get("content") or "").split(" ")
    for piece in [w + " " for w in words[:-1]] + [w for w in words[-1:] if w]:
        yield chunk({"content": piece})
    for index, tool in enumerate(message.get("tool_calls") or []):
        yield chunk({"tool_calls": [{"index": index, "id": tool["id"], "type": "function",
                                     "function": {"name": tool["function"]["name"],
                                                  "arguments": ""}}]})
        raw = tool["function"]["arguments"]
        for i in range(0, len(raw), 7):
            yield chunk({"tool_calls": [{"index": index,
                                         "function": {"arguments": raw[i:i + 7]}}]})
    yield chunk({}, choice["finish_reason"])
    if with_usage:
        yield {**head, "object": "chat.completion.chunk", "choices": [],
               "usage": completion["usage"]}
