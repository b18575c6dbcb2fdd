"""A fake OpenAI Responses API for driving the real Codex CLI in tests: a stdlib HTTP server
on 127.0.0.1 that answers `POST /v1/responses` from a queue of scripted replies, each a
stream of server-sent events (output items, then `response.completed` or `response.failed`)
or an error status with an OpenAI-shaped error body. It keeps every request body it got.

`codex_home` writes a `$CODEX_HOME/config.toml` whose `model_providers` entry points Codex
here (no retries, so a failure reaches the harness at once).
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

_ids = itertools.count(1)


def message(text: str) -> dict[str, Any]:
    """An assistant message output item."""
    return {"type": "message", "role": "assistant", "id": f"msg_{next(_ids):04d}",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def shell_call(command: str) -> dict[str, Any]:
    """A call of Codex's shell tool (`exec_command`, which takes one command line)."""
    return {"type": "function_call", "id": f"fc_{next(_ids):04d}", "call_id":
            f"call_{next(_ids):04d}", "name": "exec_command",
            "arguments": json.dumps({"cmd": command, "login": False, "tty": False})}


@dataclass
class Reply:
    """One scripted answer: output items streamed, a failed response, or an error status."""

    items: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    status: int = 200
    error: dict[str, Any] | None = None  # the error object of a status or response.failed


class FakeResponses:
    """The server; queue replies with `reply`/`fail`/`error`, read `requests` afterwards."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def reply(self, *items: dict[str, Any], input: int = 100, cached: int = 20,
              output: int = 10) -> None:
        """Queue a streamed response with these output items and usage."""
        self.replies.append(Reply(list(items), {"input_tokens": input, "cached": cached,
                                                "output_tokens": output}))

    def fail(self, code: str, message: str) -> None:
        """Queue a stream that ends in `response.failed`."""
        self.replies.append(Reply(error={"code": code, "message": message}))

    def error(self, status: int, code: str, message: str, kind: str = "invalid_request_error",
              **extra: Any) -> None:
        """Queue an HTTP error status with an OpenAI-shaped body."""
        self.replies.append(Reply(status=status, error={
            "message": message, "type": kind, "param": None, "code": code, **extra}))

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def codex_home(folder: Path, base_url: str, model: str = "gpt-5-codex") -> Path:
    """A CODEX_HOME whose config sends `model` to the fake server, keyed by OPENAI_API_KEY."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text(
        f'model = "{model}"\nmodel_provider = "fake"\n\n'
        "[model_providers.fake]\n"
        'name = "fake"\n'
        f'base_url = "{base_url}"\n'
        'env_key = "OPENAI_API_KEY"\n'
        'wire_api = "responses"\n'
        "request_max_retries = 0\n"
        "stream_max_retries = 0\n"
        "stream_idle_timeout_ms = 20000\n")
    return folder


def _events(reply: Reply, model: str) -> list[tuple[str, dict[str, Any]]]:
    rid = f"resp_{next(_ids):04d}"
    response = {"id": rid, "object": "response", "model": model, "status": "in_progress",
                "output": []}
    events = [("response.created", {"response": response})]
    if reply.error is not None:
        failed = {**response, "status": "failed", "error": reply.error}
        return [*events, ("response.failed", {"response": failed})]
    for index, item in enumerate(reply.items):
        events.append(("response.output_item.added", {"output_index": index, "item": item}))
        events.append(("response.output_item.done", {"output_index": index, "item": item}))
    u = reply.usage
    usage = {"input_tokens": u["input_tokens"],
             "input_tokens_details": {"cached_tokens": u["cached"]},
             "output_tokens": u["output_tokens"],
             "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": u["input_tokens"] + u["output_tokens"]}
    done = {**response, "status": "completed", "output": reply.items, "usage": usage}
    return [*events, ("response.completed", {"response": done})]


def _handler(fake: FakeResponses) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            self._send(404, {"error": {"message": "not found", "type": "not_found"}})

        def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
            fake.requests.append({"path": self.path, "body": body,
                                  "authorization": self.headers.get("authorization", "")})
            if not fake.replies:
                self._send(500, {"error": {"message": "fake: no reply queued",
                                           "type": "server_error"}})
                return
            reply = fake.replies.popleft()
            if reply.status != 200:
                self._send(reply.status, {"error": reply.error})
                return
            stream = "".join(f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"
                             for kind, data in _events(reply, str(body.get("model", ""))))
            self._raw(200, "text/event-stream", stream.encode())

        def _send(self, status: int, obj: dict[str, Any]) -> None:
            self._raw(status, "application/json", json.dumps(obj).encode())

        def _raw(self, status: int, kind: str, data: bytes) -> None:
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
