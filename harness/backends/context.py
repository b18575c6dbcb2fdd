"""A tool loop's conversation, kept within the role's context budget.

Before each model call the loop asks `Conversation.fit` whether the next request would pass
the budget: the input tokens the API counted for the last request, plus an estimate (four
characters a token) of what was added since. When it would, the oldest tool results are
replaced by a short stub, in one batch down to half the budget, so the next clearing is many
turns away and the cached prefix survives the turns between (bench/context.py measures it).
Never cleared: the prompt, the last turns, what the model said (thinking blocks must go back
unchanged), and the results of the tools that carry a run's decisions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from harness.types import Usage

EPHEMERAL = {"type": "ephemeral"}
CHARS_PER_TOKEN = 4
KEPT_TOOLS = frozenset({"note", "verdict", "plan", "curation", "finish"})
STUB = "[output of {name} at turn {turn} cleared; run it again if you need it]"
LOW_WATER = 0.5  # a clearing goes down to this share of the budget
KEEP_TURNS = 3  # the newest turns keep their results; when the API refuses the size, one


def estimate_tokens(value: Any) -> int:
    """Tokens of a JSON value, at four characters a token."""
    return len(json.dumps(value, ensure_ascii=False)) // CHARS_PER_TOKEN


@dataclass
class Cleared:
    """One clearing: which tool results were stubbed, and the estimated size around it."""

    ids: list[str] = field(default_factory=list)
    tokens_before: int = 0
    tokens_after: int = 0

    def event(self, turn: int, budget: int | None, why: str) -> dict[str, Any]:
        """The transcript event that records it."""
        return {"event": "context_cleared", "turn": turn, "why": why, "budget": budget,
                "cleared": len(self.ids), "tool_use_ids": self.ids,
                "tokens_before": self.tokens_before, "tokens_after": self.tokens_after}


class Conversation:
    """The messages of one run: the prompt, then an assistant and a user message a turn."""

    def __init__(self, prompt: str, budget: int | None):
        # The prompt is the first user message rather than the system prompt: these are the
        # exact bytes of prompt.md, and what the command backend pipes to an agent CLI, so
        # every backend hands the model the same thing. It is still cached: the prefix runs
        # tools -> system -> messages, and this block carries a breakpoint.
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": [
            {"type": "text", "text": prompt, "cache_control": EPHEMERAL}]}]
        self.budget = budget
        self.tail: dict[str, Any] | None = None  # the block carrying the moving breakpoint
        self.counted = 0  # input tokens of the last request, as the API counted them
        self.counted_messages = 0  # how many messages that request held
        self.origin: dict[str, tuple[str, int]] = {}  # tool_use id -> (tool name, turn)
        self.cleared: set[str] = set()  # tool_use ids whose results are stubs

    def add_turn(self, turn: int, content: list[dict[str, Any]],
                 answer: list[dict[str, Any]]) -> None:
        """The model's turn as it came, and our answer (tool results, a note) with the
        moving cache breakpoint on its last block."""
        for block in content:
            if block.get("type") == "tool_use":
                self.origin[block["id"]] = (block["name"], turn)
        # A moving breakpoint caches the conversation so far; tools, prompt and this one
        # make three of the four the API allows, so the previous one is dropped.
        if self.tail is not None:
            self.tail.pop("cache_control", None)
        self.tail = answer[-1]
        self.tail["cache_control"] = EPHEMERAL
        self.messages += [{"role": "assistant", "content": content},
                          {"role": "user", "content": answer}]

    def sent(self, usage: Usage) -> None:
        """The API took the messages as they are and counted them."""
        self.counted = (usage.input_tokens + usage.cache_creation_input_tokens
                        + usage.cache_read_input_tokens)
        self.counted_messages = len(self.messages)

    def size(self) -> int:
        """The next request's input tokens, as far as we can tell before sending it."""
        if not self.counted:
            return estimate_tokens(self.messages)
        return self.counted + estimate_tokens(self.messages[self.counted_messages:])

    def fit(self) -> Cleared | None:
        """Clear old tool results when the next request would pass the budget."""
        if self.budget is None or self.size() <= self.budget:
            return None
        return self.clear(int(self.budget * LOW_WATER), KEEP_TURNS)

    def clear_harder(self) -> Cleared | None:
        """Clear every tool result but the newest turn's (the API refused the size)."""
        return self.clear(None, 1)

    def clear(self, target: int | None, keep_turns: int) -> Cleared | None:
        """Stub the oldest clearable results until the estimate is at `target` (None: all
        of them); None if there was nothing to clear."""
        cleared = Cleared(tokens_before=self.size())
        size = cleared.tokens_before
        for block in self._clearable(keep_turns):
            if target is not None and size <= target:
                break
            name, turn = self.origin.get(block["tool_use_id"], ("a tool", 0))
            stub = STUB.format(name=name, turn=turn)
            size -= estimate_tokens(block["content"]) - estimate_tokens(stub)
            block["content"] = stub
            cleared.ids.append(block["tool_use_id"])
        if not cleared.ids:
            return None
        self.cleared.update(cleared.ids)
        if self.counted:  # until the API counts again
            self.counted -= cleared.tokens_before - size
        cleared.tokens_after = self.size()
        return cleared

    def _clearable(self, keep_turns: int) -> list[dict[str, Any]]:
        """Tool results that may be stubbed, oldest first."""
        answers = self.messages[2:len(self.messages) - 2 * keep_turns:2]
        return [block for message in answers for block in message["content"]
                if block.get("type") == "tool_result" and block["tool_use_id"] not in self.cleared
                and self.origin.get(block["tool_use_id"], ("",))[0] not in KEPT_TOOLS]
