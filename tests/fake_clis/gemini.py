#!/usr/bin/env python3
"""Stands in for `gemini --output-format stream-json`: prints the real event shapes.

Usage: gemini.py MODE [gemini flags...]; the prompt is read from stdin (headless mode).
"""

import json
import sys

mode = sys.argv[1] if len(sys.argv) > 1 else "success"
prompt = sys.stdin.read()
T = "2026-11-27T09:00:00.000Z"


def emit(**event):
    print(json.dumps({"timestamp": T, **event}), flush=True)


model = sys.argv[sys.argv.index("-m") + 1] if "-m" in sys.argv else "auto-gemini-2.5"
if mode == "api_key":  # what the real CLI prints with no credentials, on stderr
    print("When using Gemini API, you must specify the GEMINI_API_KEY environment variable.\n"
          "Update your environment and try again (no reload needed if using .env)!",
          file=sys.stderr)
    sys.exit(41)
emit(type="init", session_id="6c1d0000-aaaa", model=model)
emit(type="message", role="user", content=prompt)
if mode == "success":
    emit(type="message", role="assistant", content="Let me look. ", delta=True)
    emit(type="tool_use", tool_name="run_shell_command", tool_id="call_1",
         parameters={"command": "ls"})
    emit(type="tool_result", tool_id="call_1", status="success", output="README.md\n")
    emit(type="message", role="assistant", content="All done: ", delta=True)
    emit(type="message", role="assistant", content="F-001 implemented.", delta=True)
    emit(type="result", status="success", stats={
        "total_tokens": 1234, "input_tokens": 1100, "output_tokens": 134, "cached": 800,
        "input": 300, "duration_ms": 5120, "tool_calls": 1,
        "models": {"gemini-2.5-pro": {"input_tokens": 1100, "output_tokens": 134}}})
elif mode == "quota":
    emit(type="result", status="error", error={
        "type": "TerminalQuotaError",
        "message": "You have exhausted your daily quota on this model. Please retry in 37.5s."},
        stats={"total_tokens": 0, "input_tokens": 0, "output_tokens": 0})
    sys.exit(1)
elif mode == "bad_key":
    emit(type="result", status="error", error={
        "type": "ApiError", "code": 400,
        "message": "API key not valid. Please pass a valid API key."}, stats={})
    sys.exit(1)
elif mode == "no_model":
    emit(type="result", status="error", error={
        "type": "ModelNotFoundError", "code": 404,
        "message": f"Requested entity was not found. models/{model} is not found"}, stats={})
    sys.exit(1)
