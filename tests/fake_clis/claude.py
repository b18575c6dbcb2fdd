#!/usr/bin/env python3
"""Stands in for `claude -p --output-format stream-json --verbose`: prints the real event and
result shapes (the single-result modes print what `--output-format json` prints, which is
also the last line of a stream).

Usage: claude.py MODE [DUMP_FILE | ANSWER_JSON] [claude flags...]; the prompt is read from stdin.
"""

import json
import os
import sys
import time

mode = sys.argv[1] if len(sys.argv) > 1 else "argv"
prompt = sys.stdin.buffer.read()
USAGE = {
    "input_tokens": 12,
    "cache_creation_input_tokens": 2048,
    "cache_read_input_tokens": 30000,
    "output_tokens": 456,
    "server_tool_use": {"web_search_requests": 0},
    "service_tier": "standard",
}


def result(subtype="success", is_error=False, text="Implemented F-001; tests pass.", **extra):
    obj = {
        "type": "result",
        "subtype": subtype,
        "is_error": is_error,
        "duration_ms": 53120,
        "duration_api_ms": 48007,
        "num_turns": 7,
        "result": text,
        "session_id": "4b9f6c0e-2a51-4a8e-9d0e-6f1f3c1d2e77",
        "total_cost_usd": 0.1234,
        "usage": USAGE,
        "permission_denials": [],
        "uuid": "d1c3c6a2-1a0f-4e63-9a6b-1f0f5e9f1b2c",
    }
    obj.update(extra)
    if text is None:
        del obj["result"]
    print(json.dumps(obj))


SESSION = "4b9f6c0e-2a51-4a8e-9d0e-6f1f3c1d2e77"


def event(kind, **fields):
    print(json.dumps({"type": kind, **fields, "session_id": SESSION}), flush=True)


def assistant(message_id, *content, output=50):
    usage = {"input_tokens": 4, "cache_creation_input_tokens": 1000,
             "cache_read_input_tokens": 9000, "output_tokens": output, "service_tier": "standard"}
    for block in content:  # one event per content block, each with the message's usage
        event("assistant", parent_tool_use_id=None, message={
            "id": message_id, "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": [block], "stop_reason": None,
            "stop_sequence": None, "usage": usage})


def stream_two_turns():
    event("system", subtype="init", cwd=os.getcwd(), tools=["Bash", "Edit"],
          model="claude-sonnet-4-5", permissionMode="acceptEdits")
    assistant("msg_01", {"type": "text", "text": "Listing first."},
              {"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {"command": "ls"}})
    event("user", parent_tool_use_id=None, message={"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_01", "content": "a.py", "is_error": False}]})
    assistant("msg_02", {"type": "text", "text": "Now the edit."}, output=70)


if mode == "auth":  # `claude auth status`, as Claude Code 2.1 prints it
    key = next((v for v in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN") if os.environ.get(v)),
               None)
    status = {"loggedIn": bool(key), "authMethod": "api_key" if key else "none",
              "apiProvider": "firstParty", **({"apiKeySource": key} if key else {})}
    print(json.dumps(status, indent=2))
    sys.exit(0 if key else 1)
elif mode == "success":
    result()
elif mode == "stream":
    stream_two_turns()
    result(num_turns=2)
elif mode == "stream_hang":  # killed mid-run: by the wall-clock cap or SIGKILL
    stream_two_turns()
    time.sleep(300)
elif mode == "is_error_exit0":
    result("error_during_execution", True, None)
elif mode == "success_exit1":
    result()
    sys.exit(1)
elif mode == "max_turns":
    result("error_max_turns", True, None, num_turns=3)
    sys.exit(1)
elif mode == "usage_limit":
    result(
        "success", True, "Claude AI usage limit reached|1767225600", total_cost_usd=0, num_turns=1
    )
    sys.exit(1)
elif mode == "rate_limited":
    result("success", True, "API Error: Rate limit reached", total_cost_usd=0, num_turns=1)
elif mode == "no_cost":
    result(total_cost_usd=None)
elif mode == "verbose_array":
    print(
        json.dumps(
            [
                {
                    "type": "system",
                    "subtype": "init",
                    "session_id": "s",
                    "model": "claude-sonnet-4-5",
                },
                {"type": "assistant", "message": {"content": [{"type": "text", "text": "hi"}]}},
                {
                    "type": "result",
                    "subtype": "success",
                    "is_error": False,
                    "num_turns": 1,
                    "result": "hi",
                    "total_cost_usd": 0.01,
                    "usage": USAGE,
                },
            ]
        )
    )
elif mode == "not_logged_in":  # claude.py not_logged_in [FILE]: as Claude Code 2.1 prints it,
    # having written FILE in the working directory first, as a CLI's start-up may
    if len(sys.argv) > 2 and not sys.argv[2].startswith("-"):
        with open(sys.argv[2], "w", encoding="utf-8") as f:
            f.write("{}\n")
    event("system", subtype="init", cwd=os.getcwd(), tools=["Bash"], model="claude-opus-4-1")
    event("assistant", parent_tool_use_id=None, message={
        "id": "1a98643b", "model": "<synthetic>", "role": "assistant", "type": "message",
        "stop_reason": "stop_sequence", "usage": {"input_tokens": 0, "output_tokens": 0},
        "content": [{"type": "text", "text": "Not logged in · Please run /login"}]})
    result("success", True, "Not logged in · Please run /login", total_cost_usd=0,
           num_turns=1, api_error_status=None, usage={"input_tokens": 0, "output_tokens": 0})
    sys.exit(1)
elif mode == "text":  # claude.py text TEXT [flags]: one turn answering TEXT
    result(text=sys.argv[2], num_turns=1)
elif mode == "not_json":
    print("Error: Invalid API key · Please run /login")
    sys.exit(1)
elif mode == "answer":  # claude.py answer JSON [flags]: the structured output, given the schema
    schema = json.loads(sys.argv[sys.argv.index("--json-schema") + 1])
    answer = json.loads(sys.argv[2])
    assert set(schema["required"]) == set(answer), (schema["required"], answer)
    result(text="", structured_output=answer)
elif mode == "retries":  # the API failed twice, shown as Claude Code shows it, then answered
    for attempt, status, error in ((1, 500, "server_error"), (2, None, "unknown")):
        event("system", subtype="api_retry", attempt=attempt, max_retries=10,
              retry_delay_ms=1200.5, error_status=status, error=error)
        time.sleep(1)
    result()
elif mode == "dump":
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump({"env": dict(os.environ), "cwd": os.getcwd(), "stdin": prompt.decode("utf-8")}, f)
    result()
else:  # "argv": report the flags and the prompt it was given
    result(text=json.dumps({"argv": sys.argv[1:], "stdin": prompt.decode("utf-8")}))
