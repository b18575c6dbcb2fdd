"""A run's transcript.jsonl read back as turns: what the model said and which tools it called.

One reader for every backend's events, used by `run.sh show` and the HTML report: the
native tool loop's `model_turn`/`tool_call`, and an agent CLI's `cli_event`s (Claude's
stream-json messages, Codex's items). Events of any other shape stay as they are, listed
in the turn they came in, so nothing recorded is hidden.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.state.reading import parse_json_line


@dataclass
class ToolCall:
    """One tool call and, once it came back, its result."""

    id: str
    name: str
    input: Any
    result: str | None = None
    is_error: bool = False


@dataclass
class Turn:
    """One model turn: its text, its tool calls, and any other events recorded with it."""

    number: int
    texts: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)


def read_events(path: Path) -> tuple[list[dict[str, Any]], int]:
    """The events of a transcript.jsonl and how many lines did not parse (a killed run's last)."""
    events, bad = [], 0
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return [], 0
    for line in text.splitlines():
        event = parse_json_line(line)
        if event is None:
            bad += 1
        else:
            events.append(event)
    return events, bad


def result_text(content: Any) -> str:
    """A tool result's content as text (Claude gives a string or a list of blocks)."""
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) if isinstance(b, dict) else str(b)
                         for b in content)
    return "" if content is None else str(content)


class _Folder:
    """Builds turns from events in order; tool results find their call by id."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.calls: dict[str, ToolCall] = {}

    def turn(self, number: int | None = None) -> Turn:
        """The current turn; a new one when `number` is not its number (turn 0 holds events
        recorded before the first turn)."""
        if number is None:
            if not self.turns:
                self.turns.append(Turn(0))
        elif not self.turns or self.turns[-1].number != number:
            self.turns.append(Turn(number))
        return self.turns[-1]

    def next_turn(self) -> Turn:
        return self.turn(self.turns[-1].number + 1 if self.turns else 1)

    def content(self, turn: Turn, blocks: Any) -> None:
        for block in blocks if isinstance(blocks, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and block.get("text"):
                turn.texts.append(str(block["text"]))
            elif block.get("type") == "tool_use":
                call = ToolCall(str(block.get("id", "")), str(block.get("name", "?")),
                                block.get("input"))
                self.calls[call.id] = call
                turn.calls.append(call)
            elif block.get("type") == "tool_result":
                self.result(str(block.get("tool_use_id", "")), result_text(block.get("content")),
                            bool(block.get("is_error")))

    def result(self, call_id: str, text: str, is_error: bool, name: str = "?",
               tool_input: Any = None) -> None:
        call = self.calls.get(call_id)
        if call is None:  # a result whose call was not recorded: show it on its own
            call = self.calls[call_id] = ToolCall(call_id, name, tool_input)
            self.turn().calls.append(call)
        call.result, call.is_error = text, is_error

    def feed(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        if kind == "model_turn":
            turn = self.turn(int(event["turn"])) if event.get("turn") else self.next_turn()
            turn.usage = dict(event.get("usage") or {})
            self.content(turn, event.get("content"))
        elif kind == "tool_call":
            self.result(str(event.get("id", "")), result_text(event.get("result")),
                        bool(event.get("is_error")), str(event.get("name", "?")),
                        event.get("input"))
        elif event.get("type") == "cli_event" and isinstance(event.get("event"), dict):
            self.cli_event(event["event"])
        else:
            self.turn().events.append(event)

    def cli_event(self, event: dict[str, Any]) -> None:
        kind, message = event.get("type"), event.get("message")
        if kind == "assistant" and isinstance(message, dict):
            self.content(self.next_turn(), message.get("content"))
        elif kind == "user" and isinstance(message, dict):
            self.content(self.turn(), message.get("content"))
        elif kind == "item.completed" and isinstance(item := event.get("item"), dict):
            self.codex_item(item)
        else:
            self.turn().events.append(event)

    def codex_item(self, item: dict[str, Any]) -> None:
        if item.get("type") == "agent_message":
            self.next_turn().texts.append(str(item.get("text") or ""))
        elif item.get("type") == "command_execution":
            call = ToolCall(str(item.get("id", "")), "bash", {"command": item.get("command")},
                            str(item.get("aggregated_output") or ""),
                            item.get("exit_code") not in (0, None))
            self.turn().calls.append(call)
        else:
            self.turn().events.append({"type": "item.completed", "item": item})


def fold_turns(events: list[dict[str, Any]]) -> list[Turn]:
    """The turns of a run, in order, from its transcript events."""
    folder = _Folder()
    for event in events:
        folder.feed(event)
    return folder.turns
