"""The event streams of the Gemini CLI (`gemini --output-format stream-json`) and OpenCode
(`opencode run --format json`), folded as `cli_results.CodexEvents` folds Codex's: the
turns and usage so far while the CLI runs, and the run's Outcome once it exits.

Gemini's stream: `init` (the model asked for), `message` (the user's, then the assistant's
text in deltas), `tool_use`, `tool_result`, `error` and a last `result` with `status` and
`stats` (input tokens with the cached ones inside, `input` without them, and per model).
A turn is the assistant speaking or calling tools after the prompt or a tool's result.

OpenCode's: `step_start`, `text`, `tool_use`, `step_finish` (the step's `tokens` and its
`cost`, which OpenCode prices itself) and `error` (`error.data.message`, `statusCode`).
A step is one model call: a turn.
"""

from __future__ import annotations

import json
from typing import Any

from harness.backends.cli_results import raise_for_failure
from harness.backends.pricing import known_cost
from harness.types import FINISHED, GAVE_UP, Outcome, Usage

# the event types each CLI's stream has: a stream holding JSON objects of none of them is a
# format the harness does not read (codex before 0.44 printed {"id", "msg": {...}})
EVENT_TYPES = {
    "claude": {"system", "assistant", "user", "result", "stream_event"},
    "codex": {"thread.started", "turn.started", "turn.completed", "turn.failed", "error",
              "item.started", "item.updated", "item.completed"},
    "gemini": {"init", "message", "tool_use", "tool_result", "error", "result"},
    "opencode": {"step_start", "text", "tool_use", "step_finish", "error", "reasoning"},
}


def foreign_events(parser: str, stdout: str) -> bool:
    """Whether `stdout` holds JSON objects and none of them is an event `parser` knows."""
    known = EVENT_TYPES.get(parser)
    seen = False
    for line in stdout.splitlines() if known else ():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            if event.get("type") in known:
                return False
            seen = True
    return seen


def own_words(stdout: str) -> str:
    """What the CLI itself said on stdout: its lines that are no JSON event, and the text of
    Claude Code's own (`<synthetic>`) messages; not its events, which hold the agent's work
    (a tool's "401 Unauthorized" is no refused key)."""
    said = []
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            said.append(line)
            continue
        message = event.get("message") if isinstance(event, dict) else None
        if isinstance(message, dict) and message.get("model") == "<synthetic>":
            said += [str(b.get("text")) for b in message.get("content") or []
                     if isinstance(b, dict) and b.get("text")]
    return "\n".join(said)


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) else 0


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


class GeminiEvents:
    """Folds `gemini --output-format stream-json` events (see the module docstring)."""

    def __init__(self) -> None:
        self.usage, self.turns, self.summary = Usage(), 0, ""
        self.model: str | None = None  # what served the run, as the stream says
        self.failure: str | None = None
        self.code: int | None = None  # the failure's HTTP status, when given
        self.ended = False  # a `result` came
        self._speaking = False  # the assistant has the floor (its text or tool calls)

    def feed(self, event: dict[str, Any]) -> bool:
        """Take one event; True when it started a turn or brought the usage."""
        kind = event.get("type")
        if kind == "init" and isinstance(model := event.get("model"), str):
            self.model = None if model.startswith("auto") else model
        elif kind == "tool_use" or (kind == "message" and event.get("role") == "assistant"):
            started = not self._speaking
            if started:
                self.turns, self.summary, self._speaking = self.turns + 1, "", True
            if kind == "message":
                self.summary += str(event.get("content") or "")
            return started
        elif kind in ("tool_result", "message"):
            self._speaking = False
        elif kind == "error" and event.get("severity") != "warning":
            self.failure = str(event.get("message") or "error")
        elif kind == "result":
            self._result(event)
            return True
        return False

    def _result(self, event: dict[str, Any]) -> None:
        self.ended = True
        stats = _dict(event.get("stats"))
        cached, total = _int(stats.get("cached")), _int(stats.get("input_tokens"))
        uncached = _int(stats["input"]) if "input" in stats else total - cached
        self.usage = Usage(max(uncached, 0), _int(stats.get("output_tokens")),
                           cache_read_input_tokens=cached)
        models = _dict(stats.get("models"))
        if models:
            self.model = max(models, key=lambda m: _int(_dict(models[m]).get("output_tokens")))
        if event.get("status") == "error":
            error = _dict(event.get("error"))
            self.failure = str(error.get("message") or error.get("type") or "error")
            self.code = _int(error.get("code")) or None
        elif event.get("status") == "success":
            self.failure = None

    def outcome(self, model: str, prices: dict) -> Outcome | None:
        """The run's Outcome, or None when the stream said nothing; a limit, a refused key
        or model, or an outage raises (`raise_for_failure`)."""
        if not self.ended and self.failure is None:
            return None
        if self.failure is not None:
            raise_for_failure(self.failure, self.code if self.code and self.code >= 400
                              else None)
        return Outcome(FINISHED if self.failure is None else GAVE_UP, summary=self.summary,
                       usage=self.usage, cost_usd=known_cost(self.usage, model, prices),
                       turns=self.turns, detail=(self.failure or "")[:500], model=self.model)


class OpenCodeEvents:
    """Folds `opencode run --format json` events (see the module docstring)."""

    def __init__(self) -> None:
        self.usage, self.turns, self.summary = Usage(), 0, ""
        self.model: str | None = None  # OpenCode's events do not name it
        self.failure: str | None = None
        self.code: int | None = None
        self.cost = 0.0  # what OpenCode says its steps cost

    def feed(self, event: dict[str, Any]) -> bool:
        """Take one event; True when it started a turn or brought usage."""
        kind, part = event.get("type"), _dict(event.get("part"))
        if kind == "step_start":
            self.turns, self.summary = self.turns + 1, ""
            return True
        if kind == "text":
            self.summary += str(part.get("text") or "")
        elif kind == "step_finish":
            tokens = _dict(part.get("tokens"))
            cache = _dict(tokens.get("cache"))
            self.usage.add(Usage(_int(tokens.get("input")),
                                 _int(tokens.get("output")) + _int(tokens.get("reasoning")),
                                 cache_creation_input_tokens=_int(cache.get("write")),
                                 cache_read_input_tokens=_int(cache.get("read"))))
            if isinstance(part.get("cost"), int | float):
                self.cost += float(part["cost"])
            return True
        elif kind == "error":
            error = _dict(event.get("error"))
            data = _dict(error.get("data"))
            self.failure = str(data.get("message") or error.get("message")
                               or error.get("name") or "error")
            if error.get("name"):
                self.failure = f"{error['name']}: {self.failure}"
            self.code = _int(data.get("statusCode")) or None
        return False

    def outcome(self, model: str, prices: dict) -> Outcome | None:
        """The run's Outcome, or None when no step ran and nothing failed; a failure that
        is a limit, a refusal or an outage raises."""
        if self.failure is None and not self.turns:
            return None
        if self.failure is not None:
            raise_for_failure(self.failure, self.code)
        # OpenCode says $0 for a model it has no price for: that is unknown, unless the
        # mission's table says the model is free
        cost = self.cost if self.cost > 0 else known_cost(self.usage, model, prices)
        return Outcome(FINISHED if self.failure is None else GAVE_UP, summary=self.summary,
                       usage=self.usage, cost_usd=cost, turns=self.turns,
                       detail=(self.failure or "")[:500])
