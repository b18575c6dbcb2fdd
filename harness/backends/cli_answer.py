"""An agent CLI's structured final answer: a verdict and notes that need no file system.

A CLI whose sandbox cannot write the state directory (Codex's `--sandbox read-only`, the
harness's bwrap, where `run.sh` is refused) cannot `run.sh verdict` or `run.sh note`. So the
claude and codex presets ask for a final answer matching a JSON schema (Codex's
`--output-schema FILE`, Claude Code's `--json-schema`), and the harness records what it
holds after the CLI exits, through the same functions and checks as `run.sh verdict` and
`run.sh note`. The answer is the agent's last word: its verdict replaces one given earlier
in the run with `run.sh verdict`. A note or verdict the checks refuse is named in the
transcript and the run's detail, never dropped silently.

On by default for a role with the `verdict` tool (the validator), for any other role with
`options: {structured_answer: true}`; `structured_answer: false` turns it off. A role that
names its own `command` gets the flags only when it sets `structured_answer: true`.
"""

from __future__ import annotations

import json
from typing import Any

from harness.errors import UsageError
from harness.state.actions import VERDICTS, read_verdict, record_verdict
from harness.state.memory import KINDS, append_entry, make_entry
from harness.types import Session

ANSWERING_PRESETS = ("claude", "codex")  # whose CLIs can return a structured final answer
NOTES = {
    "type": "array",
    "description": "what the next run should know, one line each (as `run.sh note KIND TEXT`)",
    "items": {
        "type": "object",
        "additionalProperties": False,
        "required": ["kind", "text"],
        "properties": {"kind": {"type": "string", "enum": list(KINDS)},
                       "text": {"type": "string"}},
    },
}


def wants_answer(options: dict[str, Any], tools: list[str]) -> bool:
    """Whether this run asks its CLI for a structured final answer."""
    asked, preset = options.get("structured_answer"), options.get("preset")
    if asked is None:
        return (preset in ANSWERING_PRESETS and "verdict" in tools
                and not options.get("command"))
    if not isinstance(asked, bool):
        raise UsageError(f"options.structured_answer must be true or false, not {asked!r}")
    if asked and preset not in ANSWERING_PRESETS:
        raise UsageError("options.structured_answer needs `preset: claude` or `preset: codex`")
    return asked


def answer_schema(tools: list[str]) -> dict[str, Any]:
    """The JSON schema of the final answer: a verdict and its reason for a role that gives
    verdicts, else a summary; and the notes. Every field is required and no other is allowed,
    as OpenAI's strict structured outputs demand."""
    if "verdict" in tools:
        fields: dict[str, Any] = {
            "verdict": {"type": "string", "enum": list(VERDICTS)},
            "reason": {"type": "string", "description": "why; a fail says what to fix"},
        }
    else:
        fields = {"summary": {"type": "string", "description": "what this run did"}}
    fields["notes"] = NOTES
    return {"type": "object", "additionalProperties": False, "required": list(fields),
            "properties": fields}


def answer_flags(parser: str, schema: dict[str, Any], schema_file: str) -> list[str]:
    """The CLI flags that ask for the answer: Codex reads the schema from a file."""
    if parser == "codex":
        return ["--output-schema", schema_file]
    return ["--json-schema", json.dumps(schema, separators=(",", ":"))]


def parse_answer(raw: object) -> dict[str, Any] | None:
    """The answer as an object: Claude Code's `structured_output`, or Codex's last message
    (JSON text, perhaps in a code fence); None when it is neither."""
    if isinstance(raw, str):
        text = raw.strip().removeprefix("```json").removeprefix("```").removesuffix("```")
        try:
            raw = json.loads(text)
        except ValueError:
            return None
    return raw if isinstance(raw, dict) else None


def record_answer(session: Session, answer: dict[str, Any] | None) -> dict[str, Any]:
    """Record the answer's verdict and notes as `run.sh verdict` and `run.sh note` would;
    the transcript event saying what was recorded and what was refused."""
    if answer is None:
        return {"type": "structured_answer", "error": "the CLI gave no structured answer"}
    event: dict[str, Any] = {"type": "structured_answer", "answer": answer, "refused": []}
    if "verdict" in session.tools:
        earlier = read_verdict(session.state, session.run_id)
        try:
            record_verdict(session.state, session.run_id, str(answer.get("verdict", "")),
                           str(answer.get("reason", "")))
        except UsageError as e:
            event["refused"].append(f"verdict: {e}")
        else:
            if earlier is not None:
                event["replaced"] = earlier
    notes = answer.get("notes")
    for note in notes if isinstance(notes, list) else []:
        try:
            if not isinstance(note, dict):
                raise ValueError(f"a note must be an object with kind and text, not {note!r}")
            append_entry(session.state, make_entry(
                session.role, session.feature_id, str(note.get("kind", "")),
                str(note.get("text", "")), run=session.run_id))
        except ValueError as e:
            event["refused"].append(f"note: {e}")
    return event


def answer_summary(answer: dict[str, Any] | None) -> str | None:
    """The run's summary from its answer: the verdict's reason, or the summary."""
    if answer is None:
        return None
    if "verdict" in answer:
        return f"{answer.get('verdict')}: {answer.get('reason', '')}"
    summary = answer.get("summary")
    return summary if isinstance(summary, str) else None
