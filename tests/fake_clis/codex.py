#!/usr/bin/env python3
"""Stands in for `codex exec --json -`: prints the real JSONL event shapes.

Usage: codex.py MODE [ANSWER_TEXT] [codex flags...]; the prompt is read from stdin.
"""

import json
import os
import sys

mode = sys.argv[1] if len(sys.argv) > 1 else "success"
if mode == "login":  # `codex login status`: logged in when CODEX_HOME holds auth.json
    home = os.environ.get("CODEX_HOME") or os.path.expanduser("~/.codex")
    if os.path.exists(os.path.join(home, "auth.json")):
        print("Logged in using ChatGPT")
        sys.exit(0)
    print("Not logged in", file=sys.stderr)
    sys.exit(1)
sys.stdin.read()
LIMIT = (
    "You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing), visit"
    " https://chatgpt.com/codex/settings/usage to purchase more credits or try again at"
    " Jan 5th, 2027 3:04 PM."
)


def emit(**event):
    print(json.dumps(event), flush=True)


emit(type="thread.started", thread_id="0199a213-81c0-7800-8aa1-bbab2a035a53")
emit(type="turn.started")
if mode == "success":
    emit(type="item.completed", item={"id": "item_0", "type": "reasoning", "text": "**Plan**"})
    emit(
        type="item.started",
        item={
            "id": "item_1",
            "type": "command_execution",
            "command": "bash -lc ls",
            "aggregated_output": "",
            "exit_code": None,
            "status": "in_progress",
        },
    )
    emit(
        type="item.completed",
        item={
            "id": "item_1",
            "type": "command_execution",
            "command": "bash -lc ls",
            "aggregated_output": "a.py\n",
            "exit_code": 0,
            "status": "completed",
        },
    )
    emit(
        type="item.completed",
        item={"id": "item_2", "type": "agent_message", "text": "First pass done."},
    )
    emit(
        type="turn.completed",
        usage={"input_tokens": 24763, "cached_input_tokens": 24448, "output_tokens": 122},
    )
    emit(type="turn.started")
    emit(
        type="item.completed",
        item={"id": "item_3", "type": "agent_message", "text": "All done: F-001 implemented."},
    )
    emit(
        type="turn.completed",
        usage={"input_tokens": 1000, "cached_input_tokens": 500, "output_tokens": 50},
    )
elif mode == "answer":  # codex.py answer TEXT [flags]: TEXT is the last message, given a schema
    with open(sys.argv[sys.argv.index("--output-schema") + 1], encoding="utf-8") as f:
        json.load(f)
    emit(type="item.completed", item={"id": "item_0", "type": "agent_message", "text": sys.argv[2]})
    emit(type="turn.completed", usage={"input_tokens": 100, "output_tokens": 10})
elif mode == "turn_failed":
    message = "unexpected status 400 Bad Request: model not supported"
    emit(type="error", message=message)
    emit(type="turn.failed", error={"message": message})
    sys.exit(1)
elif mode == "usage_limit":
    emit(type="error", message=LIMIT)
    emit(type="turn.failed", error={"message": LIMIT})
    sys.exit(1)
