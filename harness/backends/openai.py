"""The `openai` backend: our own tool loop (harness/backends/toolloop.py) on the Chat
Completions API, through the official SDK: OpenAI itself, or any server that speaks it
(Ollama, vLLM, llama.cpp's server, OpenRouter, a company gateway).

The server is `options.base_url`, else `OPENAI_BASE_URL`, else OpenAI's API; the key is
`OPENAI_API_KEY` (from the environment or the env files). A server other than OpenAI's may
need no key. The conversation stays in the Messages API's shape, so the context budget,
the clearing and the records are the anthropic backend's; harness/backends/chat_format.py
translates at the edge and harness/backends/openai_errors.py says what a failure means.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import openai

from harness.agent.tools import ToolBox
from harness.backends import server
from harness.backends.chat_format import chat_messages, fold_stream, function_tools, reply_of
from harness.backends.openai_errors import (
    APIFailed,
    api_failure,
    cut_stream,
    is_context_too_long,
    key_fix,
    no_reply,
)
from harness.backends.toolloop import OutOfTime, PromptTooLong, Reply, ToolLoop
from harness.errors import HarnessError, UsageError
from harness.types import Outcome, Session

OPENAI_HOST = "api.openai.com"
UNREADABLE = (AttributeError, TypeError, KeyError, IndexError, ValueError)
NO_KEY = "no-key"  # what a server that wants no key is sent: the SDK insists on one


class OpenAIBackend:
    """Runs a prompt as a tool loop on `chat.completions.create` (streamed or not)."""

    def run(self, prompt: str, session: Session) -> Outcome:
        """Run the loop to the end, a cap, or an error."""
        with ToolBox(session) as tools:
            return ChatLoop(session, tools).run(prompt)


class Client(openai.OpenAI):
    """The SDK's client, which makes no new attempt (a retry) once the run's time is out."""

    def __init__(self, before_attempt: Callable[[], None] = lambda: None, **options: Any):
        super().__init__(**options)
        self.before_attempt = before_attempt

    def _prepare_request(self, request: Any) -> None:
        # The SDK calls this before each attempt, outside its retry handling.
        self.before_attempt()
        super()._prepare_request(request)


def make_client(options: dict[str, Any], state: Path,
                before_attempt: Callable[[], None] = lambda: None, retries: int = 2) -> Client:
    """A client for the role's server; a UsageError when OpenAI's API has no key."""
    base_url = server_url(options)
    key = os.environ.get("OPENAI_API_KEY")
    if not key and is_openai(base_url):
        raise UsageError(f"no OpenAI API key: {key_fix(state)}; or set OPENAI_BASE_URL to a "
                         "server that needs none")
    return Client(before_attempt=before_attempt, api_key=key or NO_KEY, base_url=base_url,
                  max_retries=retries, timeout=float(options.get("timeout", 600)))


def server_url(options: dict[str, Any]) -> str | None:
    """The role's server (None: OpenAI's), checked (`api_errors.server_url`)."""
    return server.server_url(options, "OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")


def check_access(options: dict[str, Any], state: Path, model: str,
                 sources: dict[str, str] | None = None) -> tuple[bool, str, str, bool]:
    """Whether the server takes the key, asked at no cost (its list of models): `ok`, what
    was found, the fix, and `warn` (the model is not among those listed), as `run.sh
    doctor` shows a check."""
    try:
        client = make_client({**options, "timeout": 15}, state, retries=0)
        try:
            listed = {m.id for m in client.models.list()}
        except openai.APIError as e:
            raise api_failure(e, model=model, url=client.base_url, retries=0, state=state) from e
    except HarnessError as e:
        return False, f"openai: {e}", ("the message names it; the server is OPENAI_BASE_URL "
                                       "or the role's options.base_url"), False
    key = "OPENAI_API_KEY" if os.environ.get("OPENAI_API_KEY") else "no key"
    said = (f"openai: {client.base_url} takes {key}"
            f"{f' (from {sources[key]})' if key in (sources or {}) else ''}, model {model}")
    if model in listed or not listed:
        return True, said, "", False
    return True, f"{said}, which is not among the {len(listed)} models it lists", (
        "set the role's `model` to one the server lists"), True


def is_openai(base_url: str | None) -> bool:
    """Whether `base_url` is OpenAI's own API (None: the SDK's default, which is)."""
    return base_url is None or urlsplit(base_url).hostname == OPENAI_HOST


class ChatLoop(ToolLoop):
    """The tool loop with an OpenAI client."""

    def __init__(self, session: Session, tools: ToolBox):
        super().__init__(session, tools)
        self.client = make_client(session.options, session.state, self.stop_when_out_of_time,
                                  self.retries)
        # OpenAI's newer models take only max_completion_tokens; most other servers know
        # only max_tokens. `options.max_tokens_field` says otherwise.
        self.max_tokens_field = session.options.get("max_tokens_field") or (
            "max_completion_tokens" if is_openai(str(self.client.base_url)) else "max_tokens")

    def tool_specs(self) -> list[dict[str, Any]]:
        return function_tools(self.tools.specs())

    def request(self, specs: list[dict[str, Any]], messages: list[dict[str, Any]]
                ) -> Reply | None:
        """One model call; None when the wall-clock cap ran out during it."""
        options = self.session.options
        params: dict[str, Any] = {
            "model": self.session.model, "messages": chat_messages(messages),
            self.max_tokens_field: self.session.caps.max_tokens, "timeout": self.call_timeout(),
            **({"tools": specs} if specs else {}),
            **{k: options[k] for k in ("reasoning_effort", "temperature") if k in options}}
        try:
            if options.get("stream"):
                return self.streamed(params)
            answer = self.client.chat.completions.create(**params)
            completion = (answer.model_dump(warnings=False) if hasattr(answer, "model_dump")
                          else answer)
            if not isinstance(completion, dict) or not completion.get("choices"):
                raise no_reply(completion, self.client.base_url)
            return self.readable(completion)
        except OutOfTime:
            return None
        except openai.APIError as e:
            if isinstance(e, openai.APIConnectionError) and self.out_of_time():
                return None
            if is_context_too_long(e):
                raise PromptTooLong(e.message) from e
            raise api_failure(e, model=self.session.model, url=self.client.base_url,
                              retries=self.retries, state=self.session.state) from e

    def streamed(self, params: dict[str, Any]) -> Reply:
        """One streamed call, its chunks folded into a reply."""
        try:
            with self.client.chat.completions.create(
                    **params, stream=True, stream_options={"include_usage": True}) as chunks:
                kind = chunks.response.headers.get("content-type", "")
                if "html" in kind:  # a proxy's or a login page, which no stream is
                    page = chunks.response.read()[:500].decode("utf-8", "replace")
                    raise no_reply(f"a page ({kind}): {page}", self.client.base_url)
                completion = fold_stream(chunk.model_dump(warnings=False) for chunk in chunks)
        except json.JSONDecodeError as e:
            raise APIFailed(f"the API at {self.client.base_url} streamed a line that is no "
                            f"JSON ({e})") from e
        except UNREADABLE as e:  # a chunk of a shape no server should send
            raise APIFailed(f"the API at {self.client.base_url} streamed a chunk the backend "
                            f"cannot read ({type(e).__name__}: {e})") from e
        if completion["choices"][0]["finish_reason"] is None:
            raise cut_stream(self.client.base_url)
        return self.readable(completion)

    def readable(self, completion: dict[str, Any]) -> Reply:
        """The completion as the loop's Reply; exit 6 naming it when it has a shape no
        server should send (`choices` an object, a null choice, `usage` as text)."""
        try:
            return reply_of(completion)
        except UNREADABLE as e:
            said = json.dumps(completion, default=str)[:300]
            raise APIFailed(f"the API at {self.client.base_url} sent a reply the backend "
                            f"cannot read ({type(e).__name__}: {e}): {said}") from e
