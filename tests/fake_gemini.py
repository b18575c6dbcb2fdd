"""A fake Gemini API (generativelanguage) for tests: a stdlib HTTP server on 127.0.0.1 that
answers `models/MODEL:streamGenerateContent` (server-sent events) and `:generateContent`
from a queue of scripted replies (text or function calls, with usage), refuses a key other
than `key` (400 API_KEY_INVALID, as Google does) and a model it does not serve (404), and
keeps every request body. The real Gemini CLI reaches it through GOOGLE_GEMINI_BASE_URL."""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeGemini:
    """The server; queue replies with `reply`, read `requests` afterwards."""

    def __init__(self, key: str = "test-key", models: tuple[str, ...] = ("gemini-2.5-pro",)):
        self.key, self.models = key, list(models)
        self.replies: deque[dict[str, Any]] = deque()
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def reply(self, text: str | None = None, *calls: dict[str, Any], prompt: int = 10,
              output: int = 5, cached: int = 0) -> None:
        """Queue an answer: text and/or function calls ({"name", "args"})."""
        parts = ([{"text": text}] if text else []) + [{"functionCall": c} for c in calls]
        self.replies.append({
            "candidates": [{"content": {"role": "model", "parts": parts},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": output,
                              "totalTokenCount": prompt + output,
                              "cachedContentTokenCount": cached}})

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _Handler(BaseHTTPRequestHandler):
    api: FakeGemini

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.api.paths.append(f"GET {self.path}")
        self._json(200, {"models": [{"name": f"models/{m}"} for m in self.api.models]})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"] or 0)) or "{}")
        self.api.paths.append(f"POST {self.path}")
        self.api.requests.append(body)
        m = re.search(r"models/([^:/?]+):(\w+)", self.path)
        if (refused := self._refused(m)) is not None:
            return self._error(*refused)
        if m[2] == "countTokens":
            return self._json(200, {"totalTokens": 10})
        if not self.api.replies:
            return self._error(500, "INTERNAL", "fake Gemini: no reply queued")
        answer = self.api.replies.popleft()
        if m[2] != "streamGenerateContent":
            return self._json(200, answer)
        data = f"data: {json.dumps(answer)}\r\n\r\n".encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _refused(self, m: re.Match[str] | None) -> tuple[int, str, str] | None:
        if self.headers.get("x-goog-api-key") != self.api.key:
            return 400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key."
        if m is None or m[1] not in self.api.models:
            return 404, "NOT_FOUND", (f"models/{m and m[1]} is not found for API version"
                                      " v1beta, or is not supported")
        return None

    def _error(self, status: int, code: str, message: str) -> None:
        self._json(status, {"error": {"code": status, "message": message, "status": code}})

    def _json(self, status: int, obj: object) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _handler(api: FakeGemini) -> type[BaseHTTPRequestHandler]:
    return type("Handler", (_Handler,), {"api": api})
