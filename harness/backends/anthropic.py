"""The `anthropic` backend: our own tool loop on the Messages API.

Each turn: check the caps and the mission budget, keep the conversation within the context
budget (harness/backends/context.py), call the model, record the turn, run its tool calls
through the ToolBox and send the results back. The loop ends when the model stops asking for
tools, calls `finish`, or a cap is reached. A reply cut at `max_tokens` is continued, a few
times in a row at most. The SDK retries (`max_retries`); what still fails after its retries
is a BackendError (exit 6), with the reset time when told, or for a refused key or model a
UsageError (exit 2) naming the fix (api_errors.py); a prompt the API finds too long
even after clearing harder ends the run as capped (the attempt counts).
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

import anthropic

from harness.agent.tools import ToolBox
from harness.backends.api_errors import (
    PromptTooLong,
    Where,
    backend_error,
    is_prompt_too_long,
    key_fix,
    role_file,
)
from harness.backends.context import EPHEMERAL, Conversation
from harness.backends.pricing import cost_of, priced
from harness.errors import HarnessError, UsageError
from harness.types import CAPPED, FINISHED, GAVE_UP, Outcome, Session, Usage

KEY_VAR = "ANTHROPIC_API_KEY"
CONTINUATIONS = 3  # replies in a row cut at max_tokens that are continued
CUT_CALL = ("This call was cut off at the max_tokens limit before its input was complete, "
            "so it was not run. Send it again; if its input is large, split the work "
            "(e.g. write a large file in several edits).")
CUT_TEXT = "Your reply was cut off at the max_tokens limit. Go on from where it stopped."


class OutOfTime(Exception):
    """The wall-clock cap ran out between two attempts of one model call."""


class ContextFull(Exception):
    """The API refused the prompt's size even after old tool results were cleared."""


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
        self.cut_offs = 0  # replies in a row stopped at max_tokens
        self.served: str | None = None  # the model the API says answered
        self.retries = int(session.options.get("max_retries", 2))
        try:
            self.client = anthropic.Anthropic(
                max_retries=self.retries,
                timeout=float(session.options.get("timeout", 600)),
                base_url=session.options.get("base_url"),  # None: ANTHROPIC_BASE_URL or the API
                middleware=[self.stop_when_out_of_time],
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

    def run(self, prompt: str) -> Outcome:
        specs = self.tools.specs()
        if specs:
            specs[-1]["cache_control"] = EPHEMERAL
        convo = Conversation(prompt, self.session.caps.context_tokens)
        summary = ""
        try:
            while True:
                if cap := self.cap_reached():
                    return self.outcome(CAPPED, summary, cap)
                self.session.check_budget(self.cost)
                try:
                    message = self.call_fitted(specs, convo)
                except ContextFull as e:
                    return self.outcome(CAPPED, summary, str(e))
                if message is None:
                    return self.outcome(CAPPED, summary, self.wall_cap_detail())
                content = self.take(message, convo)
                summary = "\n".join(b.text for b in message.content if b.type == "text") or summary
                if ended := self.answer(message, content, convo, summary):
                    return ended
        except HarnessError as e:
            e.outcome = self.outcome(CAPPED, summary, str(e))  # type: ignore[attr-defined]
            raise

    def take(self, message: Any, convo: Conversation) -> list[dict[str, Any]]:
        """Count and record a model turn; its content blocks as they came."""
        self.turns += 1
        self.served = getattr(message, "model", None) or self.served
        self.usage.add(turn_usage := usage_of(message.usage))
        convo.sent(turn_usage)
        content = [block.to_dict() for block in message.content]
        cost = round(self.cost, 6) if priced(self.session.model, self.session.prices) else None
        self.session.record({"event": "model_turn", "turn": self.turns,
                             "stop_reason": message.stop_reason, "usage": asdict(turn_usage),
                             "content": content, "so_far": {"turns": self.turns,
                                                            "cost_usd": cost}})
        return content

    def answer(self, message: Any, content: list[dict[str, Any]], convo: Conversation,
               summary: str) -> Outcome | None:
        """Run the turn's tool calls and add the turn; the Outcome when the run ends here."""
        calls = [b for b in message.content if b.type == "tool_use"]
        if message.stop_reason == "max_tokens":
            self.cut_offs += 1
            if self.cut_offs > CONTINUATIONS:
                return self.outcome(CAPPED, summary, f"{self.cut_offs} replies in a row cut "
                                    f"off at max_tokens ({self.session.caps.max_tokens})")
            answer = self.execute(calls[:-1]) + self.cut_answer(calls[-1:])
            self.session.record({"event": "continued", "turn": self.turns,
                                 "reason": "max_tokens", "cut_tool": calls[-1].name
                                 if calls else None})
            convo.add_turn(self.turns, content, answer)
            return None
        self.cut_offs = 0
        if not calls:
            status = GAVE_UP if message.stop_reason == "refusal" else FINISHED
            return self.outcome(status, summary, f"stop_reason {message.stop_reason}")
        convo.add_turn(self.turns, content, self.execute(calls))
        if self.tools.finished is not None:
            status = GAVE_UP if self.tools.finish_status == "gave_up" else FINISHED
            return self.outcome(status, self.tools.finished, "finish called")
        return None

    @staticmethod
    def cut_answer(cut: list[Any]) -> list[dict[str, Any]]:
        """What asks the model to go on: an error result for the unfinished call, if any."""
        if cut:
            return [{"type": "tool_result", "tool_use_id": cut[0].id, "content": CUT_CALL,
                     "is_error": True}]
        return [{"type": "text", "text": CUT_TEXT}]

    def call_fitted(self, specs: list[dict[str, Any]], convo: Conversation) -> Any:
        """One model call on a conversation within its budget; when the API still refuses
        the size, one more after clearing harder. None when the wall-clock cap ran out."""
        self.clear(convo, convo.fit(), "budget")
        try:
            return self.call(specs, convo.messages)
        except PromptTooLong as e:
            if not self.clear(convo, convo.clear_harder(), f"the API refused the size: {e}"):
                raise ContextFull(f"context full: {e}; no old tool result left to clear") from e
        try:
            return self.call(specs, convo.messages)
        except PromptTooLong as e:
            raise ContextFull(f"context full: {e}, even with old tool results cleared") from e

    def clear(self, convo: Conversation, cleared: Any, why: str) -> bool:
        """Record a clearing, if there was one."""
        if cleared is not None:
            self.session.record(cleared.event(self.turns, convo.budget, why))
        return cleared is not None

    def call(self, specs: list[dict[str, Any]], messages: list[dict[str, Any]]) -> Any:
        """One model call; None when the wall-clock cap ran out during it."""
        caps, options = self.session.caps, self.session.options
        timeout = float(options.get("timeout", 600))
        if caps.wall_seconds is not None:
            timeout = min(timeout, max(caps.wall_seconds - self.elapsed, 0.01))
        params = {"model": self.session.model, "max_tokens": caps.max_tokens,
                  "messages": messages, "timeout": timeout, **({"tools": specs} if specs else {})}
        if caps.thinking_tokens:
            params["thinking"] = {"type": "enabled", "budget_tokens": caps.thinking_tokens}
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
            if is_prompt_too_long(e):
                raise PromptTooLong(getattr(e, "message", str(e))) from e
            raise backend_error(e, self.retries, self.client.base_url, self.where) from e

    def execute(self, calls: list[Any]) -> list[dict[str, Any]]:
        """Run the tool calls in order; their results."""
        results = []
        for call in calls:
            result = self.tools.execute(call.name, call.input)
            self.session.record({"event": "tool_call", "turn": self.turns, "id": call.id,
                                 "name": call.name, "input": call.input,
                                 "result": result.text, "is_error": result.is_error})
            results.append({"type": "tool_result", "tool_use_id": call.id,
                            "content": result.text, "is_error": result.is_error})
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
                       turns=self.turns, detail=detail, model=self.served)


def usage_of(usage: Any) -> Usage:
    """Our Usage from the SDK's (cache counts may be missing)."""
    return Usage(usage.input_tokens, usage.output_tokens,
                 usage.cache_creation_input_tokens or 0, usage.cache_read_input_tokens or 0)
