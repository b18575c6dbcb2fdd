"""An agent CLI's structured final answer: a verdict and notes that need no file system.

A CLI whose sandbox cannot write the state directory (Codex's `--sandbox read-only`, the
harness's bwrap, where `run.sh` is refused) cannot `run.sh verdict` or `run.sh note`. So the
claude and codex presets ask for a final answer matching a JSON schema (Codex's
`--output-schema FILE`, Claude Code's `--json-schema`), and the harness records what it
holds after the CLI exits, through the same functions and checks as `run.sh verdict` and
`run.sh note`. The answer is the agent's last word: its verdict replaces one given earlier
in the run with `run.sh verdict`. A note or verdict the checks refuse is named in the
transcript and the run's detail, never dropped silently.

The curator in model mode (a role with the `curation` tool) answers the same way: its
rewrite of summary.md and MEMORY.md, words for the promotions and its same-lesson answers,
recorded as the `curation` tool records them (`actions.record_curation`).

On by default for a role with the `verdict` or `curation` tool, for any other role with
`options: {structured_answer: true}`; `structured_answer: false` turns it off. A role that
names its own `command` gets the flags only when it sets `structured_answer: true`.
"""

from __future__ import annotations

import json
from typing import Any

from harness.errors import BusyError, UsageError
from harness.state.actions import VERDICTS, read_verdict, record_curation, record_verdict
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


# the curator's answer (`curation` tool, model mode), every field required as for OpenAI
CURATION = {
    "summary": {"type": "string", "description": "your rewrite of summary.md"},
    "memory": {"type": "string", "description": "your rewrite of MEMORY.md"},
    "promotions": {
        "type": "array",
        "description": "better words for the rules' promotions, all of them, by number; "
                       "[] keeps the rules' words",
        "items": {"type": "object", "additionalProperties": False,
                  "required": ["number", "text"],
                  "properties": {"number": {"type": "integer"}, "text": {"type": "string"}}},
    },
    "same": {"type": "array", "items": {"type": "integer"},
             "description": "the numbers of the 'Same lesson?' pairs that say one lesson"},
}


def wants_answer(options: dict[str, Any], tools: list[str]) -> bool:
    """Whether this run asks its CLI for a structured final answer."""
    asked, preset = options.get("structured_answer"), options.get("preset")
    if asked is None:
        return (preset in ANSWERING_PRESETS and ("verdict" in tools or "curation" in tools)
                and not options.get("command"))
    if not isinstance(asked, bool):
        raise UsageError(f"options.structured_answer must be true or false, not {asked!r}")
    if asked and preset not in ANSWERING_PRESETS:
        raise UsageError("options.structured_answer needs `preset: claude` or `preset: codex`")
    return asked


def answer_schema(tools: list[str]) -> dict[str, Any]:
    """The JSON schema of the final answer: the curation for the curator, else a verdict and
    its reason for a role that gives verdicts, else a summary; and the notes. Every field is
    required and no other is allowed, as OpenAI's strict structured outputs demand."""
    if "curation" in tools:
        return {"type": "object", "additionalProperties": False, "required": list(CURATION),
                "properties": CURATION}
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
    """Record the answer's curation, or its verdict and notes, as the `curation` tool,
    `run.sh verdict` and `run.sh note` would; the transcript event saying what was recorded
    and what was refused."""
    if answer is None:
        return {"type": "structured_answer", "error": "the CLI gave no structured answer"}
    event: dict[str, Any] = {"type": "structured_answer", "answer": answer, "refused": []}
    if "curation" in session.tools:
        try:
            record_curation(session.state, session.run_id, str(answer.get("summary", "")),
                            str(answer.get("memory", "")), answer.get("promotions") or None,
                            answer.get("same"))
        except UsageError as e:
            event["refused"].append(f"curation: {e}")
        return event
    if "verdict" in session.tools:
        _record_verdict(session, answer, event)
    notes = answer.get("notes")
    for note in notes if isinstance(notes, list) else []:
        try:
            if not isinstance(note, dict):
                raise ValueError(f"a note must be an object with kind and text, not {note!r}")
            append_entry(session.state, make_entry(
                session.role, session.feature_id, str(note.get("kind", "")),
                str(note.get("text", "")), run=session.run_id))
        except (ValueError, BusyError) as e:  # busy: raw.md's lock held past its wait
            event["refused"].append(f"note: {e}")
    return event


def _record_verdict(session: Session, answer: dict[str, Any], event: dict[str, Any]) -> None:
    earlier = read_verdict(session.state, session.run_id)
    try:
        record_verdict(session.state, session.run_id, str(answer.get("verdict", "")),
                       str(answer.get("reason", "")))
    except UsageError as e:
        event["refused"].append(f"verdict: {e}")
    else:
        if earlier is not None:
            event["replaced"] = earlier


def answer_summary(answer: dict[str, Any] | None) -> str | None:
    """The run's summary from its answer: the verdict's reason, or the summary."""
    if answer is None:
        return None
    if "memory" in answer:
        return "curation answered"
    if "verdict" in answer:
        return f"{answer.get('verdict')}: {answer.get('reason', '')}"
    summary = answer.get("summary")
    return summary if isinstance(summary, str) else None
