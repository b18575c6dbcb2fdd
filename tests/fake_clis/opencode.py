#!/usr/bin/env python3
"""Stands in for `opencode run --format json`: prints the real event shapes.

Usage: opencode.py MODE [opencode flags...]; the prompt is read from stdin.
"""

import json
import sys

mode = sys.argv[1] if len(sys.argv) > 1 else "success"
if mode == "auth":  # `opencode auth list`
    print("Credentials ~/.local/share/opencode/auth.json\n  Anthropic api\n1 credentials")
    sys.exit(0)
sys.stdin.read()
SESSION = "ses_494719016ffe85dkDMj0FPRbHK"


def emit(kind, **part):
    print(json.dumps({"type": kind, "timestamp": 1767036059338, "sessionID": SESSION,
                      "part": {"sessionID": SESSION, "messageID": "msg_1", **part}}),
          flush=True)


def finish(reason, cost, tokens):
    emit("step_finish", type="step-finish", reason=reason, cost=cost, tokens=tokens)


if mode == "success":
    emit("step_start", type="step-start", snapshot="46358aa5")
    emit("tool_use", type="tool", tool="bash", callID="call_1",
         state={"status": "completed", "input": {"command": "ls"}, "output": "a.py\n"})
    finish("tool-calls", 0.0021, {"input": 1200, "output": 40, "reasoning": 10,
                                  "cache": {"read": 9000, "write": 500}})
    emit("step_start", type="step-start", snapshot="46358aa6")
    emit("text", type="text", text="All done: F-001 implemented.")
    finish("stop", 0.0009, {"input": 300, "output": 20, "reasoning": 0,
                            "cache": {"read": 9500, "write": 0}})
elif mode in ("rate_limit", "bad_key"):
    emit("step_start", type="step-start", snapshot="46358aa5")
    status, message = {"rate_limit": (429, "Rate limit reached; try again in 20 min"),
                       "bad_key": (401, "invalid x-api-key")}[mode]
    print(json.dumps({"type": "error", "timestamp": 1767036059338, "sessionID": SESSION,
                      "error": {"name": "APIError",
                                "data": {"message": message, "statusCode": status}}}),
          flush=True)
    sys.exit(1)
