"""The `anthropic` backend: our own tool loop on the Messages API.

Each turn: check the caps and the mission budget, call the model, record the turn, run its
tool calls through the ToolBox and send the results back. The loop ends when the model stops
asking for tools, calls `finish`, or a cap is reached. The SDK retries (`max_retries`); what
still fails after its retries is a BackendError (exit 6), with the reset time when told.
"""

from __future__ import annotations

import email.utils
import re
import time
from dataclasses import asdict
from datetime import datetime, timedelta, timezone
from typing import Any

import anthropic

from harness.agent.tools import ToolBox
from harness.backends.pricing import cost_of
from harness.errors import BackendError, HarnessError
from harness.types import CAPPED, FINISHED, GAVE_UP, Outcome, Session, Usage

EPHEMERAL = {"type": "ephemeral"}
ERRORS = (  # the first match says what failed and what to do
    (anthropic.AuthenticationError,
     "the Anthropic API rejected the API key (401): set ANTHROPIC_API_KEY to a valid key"),
    (anthropic.PermissionDeniedError, "the API key may not do this (403): check its access"),
    (anthropic.NotFoundError, "not found (404): check the role's model name"),
    (anthropic.RateLimitError, "rate limited by the Anthropic API (429) after {retries} retries"),
    (anthropic.InternalServerError,
     "the Anthropic API is overloaded or failing ({status}) after {retries} retries"),
    (anthropic.APITimeoutError, "the Anthropic API did not answer in time after {retries} retries"),
    (anthropic.APIConnectionError,
     "cannot reach the Anthropic API at {url} after {retries} retries"),
    (anthropic.APIStatusError,
     "the Anthropic API rejected the request ({status}): check the role's model, caps and prompt"),
    (anthropic.APIError, "unexpected answer from the Anthropic API"),
)


class OutOfTime(Exception):
    """The wall-clock cap ran out between two attempts of one model call."""


class APIFailed(BackendError):
    """The Messages API failed after retries; `reset_at` is when a limit lifts, if told."""

    def __init__(self, message: str, reset_at: str | None = None):
        super().__init__(message + (f"; the limit resets at {reset_at}" if reset_at else ""))
        self.reset_at = reset_at


class AnthropicBackend:
    """Runs a prompt as a tool loop on `messages.create` (or `messages.stream`)."""

    def run(self, prompt: str, session: Session) -> Outcome:
        """Run the loop to the end, a cap, or an error."""
        with ToolBox(session) as tools:
            return ToolLoop(session, tools).run(prompt)


class ToolLoop:
    """One run's conversation, counters and client."""

    def __init__(self, session: Session, tools: ToolBox):
        self.session, self.tools = session, tools
        self.usage, self.turns, self.started = Usage(), 0, time.monotonic()
        self.tail: dict[str, Any] | None = None  # the block carrying the moving breakpoint
        self.retries = int(session.options.get("max_retries", 2))
        try:
            self.client = anthropic.Anthropic(
                max_retries=self.retries,
                timeout=float(session.options.get("timeout", 600)),
                base_url=session.options.get("base_url"),  # None: ANTHROPIC_BASE_URL or the API
                middleware=[self.stop_when_out_of_time],
            )
        except anthropic.AnthropicError as e:  # e.g. a broken credentials profile
            raise BackendError(f"cannot load Anthropic credentials: {e}") from e
        if not (self.client.api_key or self.client.auth_token or self.client.credentials):
            raise BackendError("no Anthropic API key: set ANTHROPIC_API_KEY (or run with "
                               "--backend command --preset claude to use a logged-in CLI)")

    def run(self, prompt: str) -> Outcome:
        specs = self.tools.specs()
        if specs:
            specs[-1]["cache_control"] = EPHEMERAL
        # The prompt is the first user message rather than the system prompt: these are the
        # exact bytes of prompt.md, and what the command backend pipes to an agent CLI, so
        # every backend hands the model the same thing. It is still cached: the prefix runs
        # tools -> system -> messages, and this block carries a breakpoint.
        messages: list[dict[str, Any]] = [{"role": "user", "content": [
            {"type": "text", "text": prompt, "cache_control": EPHEMERAL}]}]
        summary = ""
        try:
            while True:
                if cap := self.cap_reached():
                    return self.outcome(CAPPED, summary, cap)
                self.session.check_budget(self.cost)
                message = self.call(specs, messages)
                if message is None:
                    return self.outcome(CAPPED, summary, self.wall_cap_detail())
                self.turns += 1
                self.usage.add(turn_usage := usage_of(message.usage))
                content = [block.to_dict() for block in message.content]
                self.session.record({"event": "model_turn", "turn": self.turns,
                                     "stop_reason": message.stop_reason,
                                     "usage": asdict(turn_usage), "content": content})
                summary = "\n".join(b.text for b in message.content if b.type == "text") or summary
                calls = [b for b in message.content if b.type == "tool_use"]
                if not calls:
                    status = GAVE_UP if message.stop_reason == "refusal" else FINISHED
                    return self.outcome(status, summary, f"stop_reason {message.stop_reason}")
                messages.append({"role": "assistant", "content": content})
                messages.append({"role": "user", "content": self.execute(calls)})
                if self.tools.finished is not None:
                    status = GAVE_UP if self.tools.finish_status == "gave_up" else FINISHED
                    return self.outcome(status, self.tools.finished, "finish called")
        except HarnessError as e:
            e.outcome = self.outcome(CAPPED, summary, str(e))  # type: ignore[attr-defined]
            raise

    def call(self, specs: list[dict[str, Any]], messages: list[dict[str, Any]]) -> Any:
        """One model call; None when the wall-clock cap ran out during it."""
        caps, options = self.session.caps, self.session.options
        timeout = float(options.get("timeout", 600))
        if caps.wall_seconds is not None:
            timeout = min(timeout, max(caps.wall_seconds - self.elapsed, 0.01))
        params = {"model": self.session.model, "max_tokens": caps.max_tokens,
                  "messages": messages, "timeout": timeout, **({"tools": specs} if specs else {})}
        try:
            if options.get("stream"):
                with self.client.messages.stream(**params) as stream:
                    return stream.get_final_message()
            return self.client.messages.create(**params)
        except OutOfTime:
            return None
        except anthropic.APIError as e:
            if isinstance(e, anthropic.APITimeoutError) and self.out_of_time():
                return None
            raise self.backend_error(e) from e

    def execute(self, calls: list[Any]) -> list[dict[str, Any]]:
        """Run the tool calls in order; their results, with a cache breakpoint on the last."""
        results = []
        for call in calls:
            result = self.tools.execute(call.name, call.input)
            self.session.record({"event": "tool_call", "turn": self.turns, "id": call.id,
                                 "name": call.name, "input": call.input,
                                 "result": result.text, "is_error": result.is_error})
            results.append({"type": "tool_result", "tool_use_id": call.id,
                            "content": result.text, "is_error": result.is_error})
        # A moving breakpoint caches the conversation so far; tools, prompt and this one
        # make three of the four the API allows, so the previous one is dropped.
        if self.tail is not None:
            self.tail.pop("cache_control", None)
        self.tail = results[-1]
        self.tail["cache_control"] = EPHEMERAL
        return results

    def stop_when_out_of_time(self, request: Any, call_next: Any) -> Any:
        """SDK middleware: no new attempt (a retry) once the wall-clock cap has run out."""
        if self.out_of_time():
            raise OutOfTime()
        return call_next(request)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @property
    def cost(self) -> float:
        return cost_of(self.usage, self.session.model, self.session.prices)

    def out_of_time(self) -> bool:
        wall = self.session.caps.wall_seconds
        return wall is not None and self.elapsed >= wall

    def wall_cap_detail(self) -> str:
        return f"wall-clock cap reached ({self.session.caps.wall_seconds:g}s)"

    def cap_reached(self) -> str | None:
        """Which cap stops the run before the next call, if any."""
        caps = self.session.caps
        if caps.turns is not None and self.turns >= caps.turns:
            return f"turns cap reached ({caps.turns} model calls)"
        if self.out_of_time():
            return self.wall_cap_detail()
        if caps.dollars is not None and self.cost >= caps.dollars:
            return f"dollar cap reached (${self.cost:.4f} of ${caps.dollars:g})"
        return None

    def outcome(self, status: str, summary: str, detail: str) -> Outcome:
        return Outcome(status=status, summary=summary, usage=self.usage, cost_usd=self.cost,
                       turns=self.turns, detail=detail)

    def backend_error(self, e: anthropic.APIError) -> APIFailed:
        """A BackendError that says what failed and what to do about it."""
        what = next(text for kind, text in ERRORS if isinstance(e, kind))
        what = what.format(retries=self.retries, url=self.client.base_url,
                           status=getattr(e, "status_code", "?"))
        response = getattr(e, "response", None)
        return APIFailed(f"{what} ({getattr(e, 'api_message', None) or e.message})",
                         reset_time(response.headers) if response is not None else None)


def usage_of(usage: Any) -> Usage:
    """Our Usage from the SDK's (cache counts may be missing)."""
    return Usage(usage.input_tokens, usage.output_tokens,
                 usage.cache_creation_input_tokens or 0, usage.cache_read_input_tokens or 0)


def reset_time(headers: Any, now: datetime | None = None) -> str | None:
    """When a limit lifts (ISO-8601 UTC), from `retry-after` or the latest ratelimit reset."""
    now = now or datetime.now(timezone.utc)
    try:
        if retry_after := headers.get("retry-after"):
            try:
                when = now + timedelta(seconds=float(retry_after))
            except ValueError:
                when = email.utils.parsedate_to_datetime(retry_after)
        else:
            when = max((datetime.fromisoformat(value.replace("Z", "+00:00"))
                        for name, value in headers.items()
                        if re.fullmatch(r"anthropic-ratelimit-.+-reset", name.lower())),
                       default=None)
    except (TypeError, ValueError):  # a malformed header must not hide the real error
        return None
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if when else None
