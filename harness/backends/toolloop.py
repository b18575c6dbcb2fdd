"""The tool loop every API backend runs: `anthropic` (Messages API) and `openai` (Chat
Completions). A backend adds only its client: `tool_specs` (the tools in its API's shape)
and `request` (one model call, its answer as a `Reply`).

Each turn: check the caps and the mission budget, keep the conversation within the context
budget (harness/backends/context.py), call the model, record the turn, run its tool calls
through the ToolBox and send the results back. The loop ends when the model stops asking for
tools, calls `finish`, or a cap is reached. A reply cut at `max_tokens` is continued, a few
times in a row at most. A prompt the API finds too long even after clearing harder ends the
run as capped (the attempt counts). The conversation and the records keep the Messages API's
shape whatever the backend, so clearing, `run.sh show` and the report read every backend alike.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from harness.agent.tools import ToolBox
from harness.backends.context import Conversation
from harness.backends.pricing import cost_of, known_cost
from harness.errors import BackendError
from harness.types import CAPPED, FINISHED, GAVE_UP, Outcome, Session, Usage

CONTINUATIONS = 3  # replies in a row cut at max_tokens that are continued
CUT_CALL = ("This call was cut off at the max_tokens limit before its input was complete, "
            "so it was not run. Send it again; if its input is large, split the work "
            "(e.g. write a large file in several edits).")
CUT_TEXT = "Your reply was cut off at the max_tokens limit. Go on from where it stopped."


class OutOfTime(Exception):
    """The wall-clock cap ran out between two attempts of one model call."""


class ContextFull(Exception):
    """The API refused the prompt's size even after old tool results were cleared."""


class PromptTooLong(Exception):
    """The API refused the request's size: the conversation, not the service, is at fault."""


@dataclass
class Reply:
    """One model turn in the Messages API's shape: content blocks (`text`, `tool_use` with
    id, name and input, `thinking`), the stop reason in its words (`end_turn`, `tool_use`,
    `max_tokens`, `refusal`), the usage, and `extra` fields recorded with the turn."""

    content: list[dict[str, Any]]
    stop_reason: str | None
    usage: Usage
    extra: dict[str, Any] = field(default_factory=dict)
    model: str | None = None  # the model the API says answered

    @property
    def calls(self) -> list[dict[str, Any]]:
        return [block for block in self.content if block.get("type") == "tool_use"]

    @property
    def text(self) -> str:
        return "\n".join(block["text"] for block in self.content if block.get("type") == "text")


class ToolLoop:
    """One run's conversation, counters and caps; subclasses add the client."""

    def __init__(self, session: Session, tools: ToolBox):
        self.session, self.tools = session, tools
        self.usage, self.turns, self.started = Usage(), 0, time.monotonic()
        self.cut_offs = 0  # replies in a row stopped at max_tokens
        self.served: str | None = None  # the model the API says answered
        self.retries = int(session.options.get("max_retries", 2))

    def tool_specs(self) -> list[dict[str, Any]]:
        """The session's tools as the API takes them."""
        raise NotImplementedError

    def request(self, specs: list[dict[str, Any]], messages: list[dict[str, Any]]
                ) -> Reply | None:
        """One model call; None when the wall-clock cap ran out during it. Raises
        PromptTooLong when the API refuses the size, a HarnessError when it fails."""
        raise NotImplementedError

    def run(self, prompt: str) -> Outcome:
        """Run the loop to the end, a cap, or an error."""
        specs = self.tool_specs()
        convo = Conversation(prompt, self.session.caps.context_tokens)
        summary = ""
        try:
            while True:
                if cap := self.cap_reached():
                    return self.outcome(CAPPED, summary, cap)
                self.session.check_budget(self.cost)
                try:
                    reply = self.call_fitted(specs, convo)
                except ContextFull as e:
                    return self.outcome(CAPPED, summary, str(e))
                if reply is None and not self.turns:  # no answer ever came: an outage
                    raise BackendError("the API did not answer before the run's wall-clock "
                                       f"cap ({self.session.caps.wall_seconds:g}s)")
                if reply is None:
                    return self.outcome(CAPPED, summary, self.wall_cap_detail())
                self.take(reply, convo)
                summary = reply.text or summary
                if ended := self.answer(reply, convo, summary):
                    return ended
        except BaseException as e:  # a SIGTERM too: what was spent and done is the run's
            e.outcome = self.outcome(CAPPED, summary, str(e))  # type: ignore[attr-defined]
            raise

    def take(self, reply: Reply, convo: Conversation) -> None:
        """Count and record a model turn."""
        self.turns += 1
        self.usage.add(reply.usage)
        self.served = reply.model or self.served
        convo.sent(reply.usage)
        cost = known_cost(self.usage, self.session.model, self.session.prices)
        self.session.record({"event": "model_turn", "turn": self.turns,
                             "stop_reason": reply.stop_reason, **reply.extra,
                             "usage": asdict(reply.usage), "content": reply.content,
                             "so_far": {"turns": self.turns,
                                        "cost_usd": None if cost is None else round(cost, 6)}})

    def answer(self, reply: Reply, convo: Conversation, summary: str) -> Outcome | None:
        """Run the turn's tool calls and add the turn; the Outcome when the run ends here."""
        calls = reply.calls
        if reply.stop_reason == "max_tokens":
            self.cut_offs += 1
            if self.cut_offs > CONTINUATIONS:
                return self.outcome(CAPPED, summary, f"{self.cut_offs} replies in a row cut "
                                    f"off at max_tokens ({self.session.caps.max_tokens})")
            answer = self.execute(calls[:-1]) + self.cut_answer(calls[-1:])
            self.session.record({"event": "continued", "turn": self.turns,
                                 "reason": "max_tokens", "cut_tool": calls[-1]["name"]
                                 if calls else None})
            convo.add_turn(self.turns, reply.content, answer)
            return None
        self.cut_offs = 0
        if not calls:
            status = GAVE_UP if reply.stop_reason == "refusal" else FINISHED
            return self.outcome(status, summary, f"stop_reason {reply.stop_reason}")
        convo.add_turn(self.turns, reply.content, self.execute(calls))
        if self.tools.finished is not None:
            status = GAVE_UP if self.tools.finish_status == "gave_up" else FINISHED
            return self.outcome(status, self.tools.finished, "finish called")
        return None

    @staticmethod
    def cut_answer(cut: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """What asks the model to go on: an error result for the unfinished call, if any."""
        if cut:
            return [{"type": "tool_result", "tool_use_id": cut[0]["id"], "content": CUT_CALL,
                     "is_error": True}]
        return [{"type": "text", "text": CUT_TEXT}]

    def call_fitted(self, specs: list[dict[str, Any]], convo: Conversation) -> Reply | None:
        """One model call on a conversation within its budget; when the API still refuses
        the size, one more after clearing harder. None when the wall-clock cap ran out."""
        self.clear(convo, convo.fit(), "budget")
        try:
            return self.request(specs, convo.messages)
        except PromptTooLong as e:
            if not self.clear(convo, convo.clear_harder(), f"the API refused the size: {e}"):
                raise ContextFull(f"context full: {e}; no old tool result left to clear") from e
        try:
            return self.request(specs, convo.messages)
        except PromptTooLong as e:
            raise ContextFull(f"context full: {e}, even with old tool results cleared") from e

    def clear(self, convo: Conversation, cleared: Any, why: str) -> bool:
        """Record a clearing, if there was one."""
        if cleared is not None:
            self.session.record(cleared.event(self.turns, convo.budget, why))
        return cleared is not None

    def execute(self, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Run the tool calls in order; their results."""
        results = []
        for call in calls:
            result = self.tools.execute(call["name"], call["input"])
            self.session.record({"event": "tool_call", "turn": self.turns, "id": call["id"],
                                 "name": call["name"], "input": call["input"],
                                 "result": result.text, "is_error": result.is_error})
            results.append({"type": "tool_result", "tool_use_id": call["id"],
                            "content": result.text, "is_error": result.is_error})
        return results

    def call_timeout(self) -> float:
        """The next call's timeout: the role's, within what is left of the wall clock."""
        timeout = float(self.session.options.get("timeout", 600))
        wall = self.session.caps.wall_seconds
        return timeout if wall is None else min(timeout, max(wall - self.elapsed, 0.01))

    def stop_when_out_of_time(self) -> None:
        """Before each attempt of a call (a retry too): none once the wall clock has run out."""
        if self.out_of_time():
            raise OutOfTime()

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @property
    def cost(self) -> float:
        return cost_of(self.usage, self.session.model, self.session.prices)

    def waits_past_cap(self, seconds: float | None) -> bool:
        """Whether a retry after waiting `seconds` would start past the wall-clock cap."""
        wall = self.session.caps.wall_seconds
        return seconds is not None and wall is not None and self.elapsed + seconds >= wall

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
        """The run's Outcome; its cost None when no price table knows the model."""
        return Outcome(status=status, summary=summary, usage=self.usage,
                       cost_usd=known_cost(self.usage, self.session.model, self.session.prices),
                       turns=self.turns, detail=detail, model=self.served)
