"""The Chat Completions shapes beside the Messages API's, with literal inputs."""

from __future__ import annotations

from harness.agent.tools import TOOL_SPECS
from harness.backends.chat_format import (
    chat_messages,
    fold_stream,
    function_tools,
    reply_of,
    usage_of,
)
from harness.backends.toolloop import CUT_TEXT
from harness.types import Usage


def test_every_tool_becomes_a_function_tool_with_an_object_schema():
    tools = function_tools([dict(spec) for spec in TOOL_SPECS.values()])
    assert [t["function"]["name"] for t in tools] == list(TOOL_SPECS)
    for tool in tools:
        assert tool["type"] == "function" and tool["function"]["description"]
        assert tool["function"]["parameters"]["type"] == "object"
    plan = next(t for t in tools if t["function"]["name"] == "plan")
    assert plan["function"]["parameters"] == TOOL_SPECS["plan"]["input_schema"]


def test_the_conversation_as_chat_messages():
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "Do it.",
                                      "cache_control": {"type": "ephemeral"}}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hm", "signature": "s"},
            {"type": "text", "text": "Two calls."},
            {"type": "tool_use", "id": "a", "name": "bash", "input": {"command": "ls"}},
            {"type": "tool_use", "id": "b", "name": "note", "input": '{"kind": '}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "a", "content": "x.py", "is_error": False},
            {"type": "tool_result", "tool_use_id": "b", "content": "bad arguments",
             "is_error": True, "cache_control": {"type": "ephemeral"}}]},
        {"role": "assistant", "content": [{"type": "text", "text": "The plan is"}]},
        {"role": "user", "content": [{"type": "text", "text": CUT_TEXT}]},
    ]
    assert chat_messages(messages) == [
        {"role": "user", "content": "Do it."},
        {"role": "assistant", "content": "Two calls.", "tool_calls": [
            {"id": "a", "type": "function",
             "function": {"name": "bash", "arguments": '{"command": "ls"}'}},
            {"id": "b", "type": "function",
             "function": {"name": "note", "arguments": '{"kind": '}}]},
        {"role": "tool", "tool_call_id": "a", "content": "x.py"},
        {"role": "tool", "tool_call_id": "b", "content": "ERROR: bad arguments"},
        {"role": "assistant", "content": "The plan is"},
        {"role": "user", "content": CUT_TEXT},
    ]


def test_a_completion_as_a_reply():
    reply = reply_of({"choices": [{"finish_reason": "stop", "message": {
        "content": "Done.", "tool_calls": [
            {"id": None, "function": {"name": "finish", "arguments": '{"summary": "ok"}'}},
            {"id": "c2", "function": {"name": "bash", "arguments": ""}}]}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 7,
                  "prompt_tokens_details": {"cached_tokens": 60}}})
    assert reply.stop_reason == "tool_use"  # "stop" with calls: some servers say so
    assert reply.text == "Done."
    assert [(c["name"], c["input"]) for c in reply.calls] == [
        ("finish", {"summary": "ok"}), ("bash", {})]
    assert reply.calls[0]["id"].startswith("call_")  # a server that gave no id gets one
    assert reply.usage == Usage(40, 7, 0, 60)
    assert reply.extra == {"finish_reason": "stop"}
    refused = reply_of({"choices": [{"finish_reason": "stop", "message": {
        "content": None, "refusal": "I can't help with that."}}]})
    assert (refused.stop_reason, refused.text) == ("refusal", "I can't help with that.")
    assert reply_of({"choices": [{"finish_reason": "length", "message": {}}]}).stop_reason == (
        "max_tokens")


def test_usage_without_details_or_at_all():
    assert usage_of({"prompt_tokens": 12, "completion_tokens": 3}) == Usage(12, 3, 0, 0)
    assert usage_of(None) == Usage()


def test_streamed_chunks_fold_into_one_completion():
    def chunk(delta, finish=None):
        return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "Two "}), chunk({"content": "calls."}),
        chunk({"tool_calls": [{"index": 0, "id": "a", "type": "function",
                               "function": {"name": "bash", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 1, "id": "b", "type": "function",
                               "function": {"name": "note", "arguments": '{"ki'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"command"'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": ': "ls"}'}}]}),
        chunk({"tool_calls": [{"index": 1, "function": {"arguments": 'nd": "-", "text": "t"}'}}]}),
        chunk({}, "tool_calls"),
        {"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 9}},
    ]
    reply = reply_of(fold_stream(chunks))
    assert reply.content == [
        {"type": "text", "text": "Two calls."},
        {"type": "tool_use", "id": "a", "name": "bash", "input": {"command": "ls"}},
        {"type": "tool_use", "id": "b", "name": "note", "input": {"kind": "-", "text": "t"}}]
    assert (reply.stop_reason, reply.usage) == ("tool_use", Usage(50, 9, 0, 0))


def test_what_some_servers_send_instead():
    parts = reply_of({"choices": [{"finish_reason": "stop", "message": {
        "content": [{"type": "text", "text": "one "}, {"type": "text", "text": "two"}]}}]})
    assert parts.text == "one two"
    unnumbered = [{"choices": [{"delta": {"tool_calls": [piece]}}]} for piece in (
        {"id": "a", "function": {"name": "bash", "arguments": '{"command": '}},
        {"function": {"arguments": '"ls"}'}},
        {"id": "b", "function": {"name": "finish", "arguments": "{}"}})]
    calls = reply_of(fold_stream(unnumbered)).calls
    assert [(c["id"], c["input"]) for c in calls] == [("a", {"command": "ls"}), ("b", {})]
