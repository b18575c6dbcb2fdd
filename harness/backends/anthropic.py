"""The `anthropic` backend: our own tool loop (harness/backends/toolloop.py) on the Messages
API.

The SDK retries (`max_retries`); what still fails after its retries is a BackendError
(exit 6), with the reset time when told, or for a refused key or model a UsageError (exit 2)
naming the fix (api_errors.py); a prompt the API finds too long is PromptTooLong, which the
loop answers by clearing old tool results.
"""

from __future__ import annotations

from typing import Any

import anthropic

from harness.agent.tools import ToolBox
from harness.backends.api_errors import (
    APIFailed,
    Where,
    backend_error,
    is_prompt_too_long,
    key_fix,
    retry_after,
    role_file,
)
from harness.backends.context import EPHEMERAL
from harness.backends.server import server_url
from harness.backends.toolloop import OutOfTime, PromptTooLong, Reply, ToolLoop
from harness.errors import UsageError
from harness.types import Outcome, Session, Usage

KEY_VAR = "ANTHROPIC_API_KEY"


class AnthropicBackend:
    """Runs a prompt as a tool loop on `messages.create` (or `messages.stream`)."""

    def run(self, prompt: str, session: Session) -> Outcome:
        """Run the loop to the end, a cap, or an error."""
        with ToolBox(session) as tools:
            return MessagesLoop(session, tools).run(prompt)


class MessagesLoop(ToolLoop):
    """The tool loop with an Anthropic client."""

    def __init__(self, session: Session, tools: ToolBox):
        super().__init__(session, tools)
        try:
            self.client = anthropic.Anthropic(
                max_retries=self.retries,
                timeout=float(session.options.get("timeout", 600)),
                base_url=server_url(session.options, "ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
                middleware=[self.stop_when_out_of_time_middleware],
            )
        except anthropic.AnthropicError as e:  # e.g. a broken credentials profile
            raise UsageError(f"cannot load Anthropic credentials: {e}; "
                             f"{key_fix(KEY_VAR, session.state)}") from e
        if not (self.client.api_key or self.client.auth_token or self.client.credentials):
            raise UsageError(f"no Anthropic API key: {KEY_VAR} is not set; "
                             f"{key_fix(KEY_VAR, session.state)} (or run with --backend "
                             "command --preset claude to use a logged-in CLI)")
        var = KEY_VAR if self.client.api_key else "ANTHROPIC_AUTH_TOKEN"
        self.where = Where(var, session.model, session.state,
                           role_file(session.state, session.role))

    def tool_specs(self) -> list[dict[str, Any]]:
        specs = self.tools.specs()
        if specs:
            specs[-1]["cache_control"] = EPHEMERAL
        return specs

    def request(self, specs: list[dict[str, Any]], messages: list[dict[str, Any]]
                ) -> Reply | None:
        message = self.call(specs, messages)
        if message is None:
            return None
        return Reply([block.to_dict() for block in message.content], message.stop_reason,
                     usage_of(message.usage), model=getattr(message, "model", None))

    def call(self, specs: list[dict[str, Any]], messages: list[dict[str, Any]]) -> Any:
        """One model call; None when the wall-clock cap ran out during it."""
        params = {"model": self.session.model, "max_tokens": self.session.caps.max_tokens,
                  "messages": messages, "timeout": self.call_timeout(),
                  **({"tools": specs} if specs else {})}
        if self.session.caps.thinking_tokens:
            params["thinking"] = {"type": "enabled",
                                  "budget_tokens": self.session.caps.thinking_tokens}
        try:
            if self.session.options.get("stream"):
                with self.client.messages.stream(**params) as stream:
                    message = stream.get_final_message()
                if message.stop_reason is None:  # the stream ended before message_delta
                    raise APIFailed(f"the reply streamed from the API at {self.client.base_url} "
                                    "ended before it was finished (no stop_reason)")
                return message
            return self.client.messages.create(**params)
        except OutOfTime:
            return None
        except anthropic.APIError as e:
            if isinstance(e, anthropic.APITimeoutError) and self.out_of_time():
                return None
            if is_prompt_too_long(e):
                raise PromptTooLong(getattr(e, "message", str(e))) from e
            raise backend_error(e, self.retries, self.client.base_url, self.where) from e

    def stop_when_out_of_time_middleware(self, request: Any, call_next: Any) -> Any:
        """SDK middleware: no new attempt (a retry) once the wall-clock cap has run out, nor
        one the API asks to wait for past it (the SDK sleeps any retry-after, an hour too)."""
        self.stop_when_out_of_time()
        result = call_next(request)
        response = getattr(result, "http_response", None)
        if response is not None and not response.is_success and self.waits_past_cap(
                retry_after(response.headers)):
            response.headers["x-should-retry"] = "false"  # the error, with its reset time
        return result


def usage_of(usage: Any) -> Usage:
    """Our Usage from the SDK's (cache counts may be missing)."""
    return Usage(usage.input_tokens, usage.output_tokens,
                 usage.cache_creation_input_tokens or 0, usage.cache_read_input_tokens or 0)
