"""The Chat Completions API's shapes beside ours, as plain functions over dicts.

The tool loop keeps its conversation and records in the Messages API's shape
(harness/backends/toolloop.py); the `openai` backend translates at the edge: the tool specs
to function tools (`function_tools`), the conversation to chat messages (`chat_messages`),
and a completion, whole or streamed (`fold_stream`), back to a Reply (`reply_of`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from typing import Any

from harness.agent.editor import EDIT_COMMANDS
from harness.backends.toolloop import Reply
from harness.types import Usage

# finish_reason -> the Messages API's stop_reason, which the loop reads
STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "function_call": "tool_use",
                "length": "max_tokens", "content_filter": "refusal"}
ERROR_PREFIX = "ERROR: "  # Chat Completions has no is_error: the result says it

# The tools that are built into the Messages API (no schema there), with their arguments as
# harness/agent/tools.py executes them.
BUILT_IN: dict[str, dict[str, Any]] = {
    "bash": {
        "description": "Run a command in a persistent bash shell in the working directory: "
                       "the current folder and variables carry over between calls. Long "
                       "output is truncated; a command that runs too long is stopped. "
                       "Set `restart` to true (and no command) for a fresh shell.",
        "parameters": {"type": "object", "properties": {
            "command": {"type": "string", "description": "the bash command to run"},
            "restart": {"type": "boolean", "description": "restart the shell instead"}}},
    },
    "str_replace_based_edit_tool": {
        "description": "View, create and edit files in the working directory. `view`: a "
                       "file's numbered lines (`view_range` [start, end], end -1 for the "
                       "last line) or a folder's listing; `create`: write `file_text` to "
                       "`path`; `str_replace`: replace `old_str`, which must occur exactly "
                       "once, with `new_str`; `insert`: put `insert_text` after line "
                       "`insert_line` (0: at the top).",
        "parameters": {"type": "object", "properties": {
            "command": {"type": "string", "enum": list(EDIT_COMMANDS)},
            "path": {"type": "string", "description": "relative to the working directory"},
            "file_text": {"type": "string"},
            "old_str": {"type": "string"},
            "new_str": {"type": "string"},
            "insert_line": {"type": "integer"},
            "insert_text": {"type": "string"},
            "view_range": {"type": "array", "items": {"type": "integer"},
                           "minItems": 2, "maxItems": 2}},
            "required": ["command", "path"]},
    },
}


def function_tools(specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Messages API's tool specs as Chat Completions function tools."""
    tools = []
    for spec in specs:
        name = spec["name"]
        function = BUILT_IN.get(name) or {"description": spec.get("description", ""),
                                          "parameters": spec["input_schema"]}
        tools.append({"type": "function", "function": {"name": name, **function}})
    return tools


def chat_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation as chat messages: an assistant turn keeps its text and tool calls;
    each tool result becomes a `tool` message, any other text a `user` message after them."""
    chat: list[dict[str, Any]] = []
    for message in messages:
        blocks = message["content"]
        if isinstance(blocks, str):
            chat.append({"role": message["role"], "content": blocks})
        elif message["role"] == "assistant":
            chat.append(assistant_message(blocks))
        else:
            chat += [tool_message(b) for b in blocks if b.get("type") == "tool_result"]
            if texts := [b["text"] for b in blocks if b.get("type") == "text"]:
                chat.append({"role": "user", "content": "\n\n".join(texts)})
    return chat


def assistant_message(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """A model turn as the API gave it: its text and its tool calls."""
    text = "\n".join(b["text"] for b in blocks if b.get("type") == "text")
    calls = [{"id": b["id"], "type": "function", "function": {
        "name": b["name"],
        "arguments": b["input"] if isinstance(b["input"], str) else json.dumps(b["input"])}}
        for b in blocks if b.get("type") == "tool_use"]
    message: dict[str, Any] = {"role": "assistant", "content": text or (None if calls else "")}
    if calls:
        message["tool_calls"] = calls
    return message


def tool_message(block: dict[str, Any]) -> dict[str, Any]:
    """A tool result; an error says so in its text."""
    content = block["content"]
    if not isinstance(content, str):
        content = "\n".join(str(part.get("text", "")) for part in content)
    return {"role": "tool", "tool_call_id": block["tool_use_id"],
            "content": ERROR_PREFIX + content if block.get("is_error") else content}


def reply_of(completion: dict[str, Any]) -> Reply:
    """A completion (as a dict) as the loop's Reply; its finish_reason kept as it came."""
    choices = completion.get("choices") or [{}]
    message, finish = choices[0].get("message") or {}, choices[0].get("finish_reason")
    content: list[dict[str, Any]] = []
    if text := text_of(message.get("content")) or message.get("refusal"):
        content.append({"type": "text", "text": text})
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        content.append({"type": "tool_use", "id": call.get("id") or f"call_{uuid.uuid4().hex}",
                        "name": function.get("name") or "",
                        "input": arguments_of(function.get("arguments"))})
    stop = "refusal" if message.get("refusal") else STOP_REASONS.get(finish or "", finish)
    if stop == "end_turn" and any(b["type"] == "tool_use" for b in content):
        stop = "tool_use"  # some servers say "stop" after tool calls
    return Reply(content, stop, usage_of(completion.get("usage")), {"finish_reason": finish},
                 model=completion.get("model") or None)


def text_of(content: Any) -> str:
    """A message's text: a string, or (from some servers) a list of text parts."""
    if isinstance(content, list):
        return "".join(str(part.get("text") or "") for part in content if isinstance(part, dict))
    return content or ""


def arguments_of(arguments: Any) -> Any:
    """A call's arguments: the JSON object they spell, else the text as it came (the ToolBox
    answers that with an error the model can read)."""
    if not arguments:
        return {}
    try:
        return json.loads(arguments)
    except (TypeError, ValueError):
        return arguments


def usage_of(usage: dict[str, Any] | None) -> Usage:
    """Our Usage from the API's: cached prompt tokens apart from the rest of the input."""
    usage = usage or {}
    details = usage.get("prompt_tokens_details") or {}
    cached, written = details.get("cached_tokens") or 0, details.get("cache_write_tokens") or 0
    prompt = usage.get("prompt_tokens") or 0
    return Usage(max(prompt - cached - written, 0), usage.get("completion_tokens") or 0,
                 written, cached)


def fold_stream(chunks: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The completion that streamed chunks (as dicts) add up to."""
    texts, refusals, calls = [], [], {}
    finish, usage, model = None, None, None
    for chunk in chunks:
        usage = chunk.get("usage") or usage  # on the last chunk, with stream_options
        model = chunk.get("model") or model
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            texts.append(delta.get("content") or "")
            refusals.append(delta.get("refusal") or "")
            for piece in delta.get("tool_calls") or []:
                add_call_piece(calls, piece)
            finish = choice.get("finish_reason") or finish
    message = {"role": "assistant", "content": "".join(texts) or None,
               "refusal": "".join(refusals) or None,
               "tool_calls": [calls[index] for index in sorted(calls)]}
    return {"choices": [{"message": message, "finish_reason": finish}], "usage": usage,
            "model": model}


def add_call_piece(calls: dict[int, dict[str, Any]], piece: dict[str, Any]) -> None:
    """Add one streamed piece of a tool call: its id and name come once, its arguments in
    pieces."""
    function = piece.get("function") or {}
    index = piece.get("index")
    if index is None:  # a server that numbers no call: a new id, or a new name, starts one
        index = len(calls) if not calls or starts_a_call(piece, calls[max(calls)]) else max(calls)
    call = calls.setdefault(index, {
        "id": "", "type": "function", "function": {"name": "", "arguments": ""}})
    call["id"] = piece.get("id") or call["id"]
    call["function"]["name"] = function.get("name") or call["function"]["name"]
    arguments = function.get("arguments") or ""
    # some servers stream a call's arguments whole, as an object
    call["function"]["arguments"] += (arguments if isinstance(arguments, str)
                                      else json.dumps(arguments))


def starts_a_call(piece: dict[str, Any], last: dict[str, Any]) -> bool:
    """Whether an unnumbered piece begins a call after `last`: it has an id of its own, or
    (with no id) a name when `last` has one already."""
    if piece.get("id"):
        return piece["id"] != last["id"]
    return bool((piece.get("function") or {}).get("name") and last["function"]["name"])
