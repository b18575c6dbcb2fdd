"""The tools an agent may call, executed by the harness: bash, the text editor, and our own
`note`, `verdict`, `plan` and `finish`.

`ToolBox.execute` never raises for an agent's mistake: a bad path, a failed match or an
invalid plan comes back as an error result the agent can read and fix. The shell and the
editor themselves live in harness/agent/shell.py and harness/agent/editor.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.agent import hooks, sandbox
from harness.agent.editor import Editor
from harness.agent.env import agent_env
from harness.agent.shell import Shell
from harness.errors import BusyError, UsageError
from harness.state import actions, envfile, memory
from harness.state.memory import utc_now
from harness.state.redact import redact_data
from harness.types import Session, ToolResult

FEATURE_SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "description": "F-001 style, unique"},
        "title": {"type": "string"},
        "description": {"type": "string"},
        "acceptance_criteria": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "verify": {"type": "string", "description": "optional shell command that checks it"},
    },
    "required": ["id", "title", "description", "acceptance_criteria"],
}

GUARDED = ("bash", "str_replace_based_edit_tool")  # the calls a `tool.before` hook may refuse

TOOL_SPECS: dict[str, dict[str, Any]] = {
    "bash": {"type": "bash_20250124", "name": "bash"},
    "str_replace_based_edit_tool": {
        "type": "text_editor_20250728",
        "name": "str_replace_based_edit_tool",
    },
    "note": {
        "name": "note",
        "description": "Append a one-line note to the shared raw log (memory) for later runs.",
        "input_schema": {
            "type": "object",
            "properties": {
                "kind": {"type": "string", "enum": list(memory.KINDS)},
                "text": {"type": "string"},
            },
            "required": ["kind", "text"],
        },
    },
    "verdict": {
        "name": "verdict",
        "description": "Give the verdict on the feature under validation, with the reason.",
        "input_schema": {
            "type": "object",
            "properties": {
                "verdict": {"type": "string", "enum": list(actions.VERDICTS)},
                "reason": {"type": "string"},
            },
            "required": ["verdict", "reason"],
        },
    },
    "plan": {
        "name": "plan",
        "description": "Propose the plan: the full list of features. It is validated and merged.",
        "input_schema": {
            "type": "object",
            "properties": {"features": {"type": "array", "items": FEATURE_SCHEMA}},
            "required": ["features"],
        },
    },
    "curation": {
        "name": "curation",
        "description": "Answer with your rewrite of summary.md and MEMORY.md (curator only). "
                       "Keep every MEMORY.md item id and count, the sections and the bounds; "
                       "every summary line must point into MEMORY.md as the rules' lines do. "
                       "Optionally give better words for the rules' promotions: all of them, "
                       "by number, each still the same lesson. If pairs of notes are shown "
                       "under 'Same lesson?', answer `same` with the numbers of the pairs "
                       "that say one lesson; every other pair shown is recorded as two.",
        "input_schema": {
            "type": "object",
            "properties": {
                "summary": {"type": "string"},
                "memory": {"type": "string"},
                "promotions": {
                    "type": "array",
                    "items": {"type": "object",
                              "properties": {"number": {"type": "integer"},
                                             "text": {"type": "string"}},
                              "required": ["number", "text"]},
                },
                "same": {"type": "array", "items": {"type": "integer"}},
            },
            "required": ["summary", "memory"],
        },
    },
    "finish": {
        "name": "finish",
        "description": "End the run with a summary of what was done (or why you gave up).",
        "input_schema": {
            "type": "object",
            "properties": {
                "summary": {"type": "string"},
                "status": {"type": "string", "enum": ["done", "gave_up", "blocked"],
                           "description": "blocked: you need a person to act first"},
                "needs": {"type": "string",
                          "description": "with status blocked: the action you need from a person"},
            },
            "required": ["summary"],
        },
    },
}


class ToolBox:
    """The tools one run may use, executed for the model; close() when the run ends."""

    def __init__(self, session: Session):
        unknown = [name for name in session.tools if name not in TOOL_SPECS]
        if unknown:
            raise UsageError(f"unknown tool(s) {', '.join(unknown)} for role {session.role}; "
                             f"known: {', '.join(TOOL_SPECS)}")
        self.session = session
        self.finished: str | None = None  # the summary given to `finish`
        self.finish_status: str | None = None  # "done", "gave_up" or "blocked", when finish said
        self.shell = Shell(session.workdir, session.caps.bash_timeout, session.caps.output_chars,
                           lambda: agent_env(session),
                           lambda argv, **popen: sandbox.start(argv, session.sandbox,
                                                               session.workdir, **popen))
        self.editor = Editor(session.workdir, session.caps.output_chars,
                             hidden=(session.state, session.sandbox.identity, session.home,
                                     envfile.user_env_file().parent),
                             read_only=tuple(Path(p).expanduser() for p, mode
                                             in session.sandbox.paths.items() if mode == "ro"))

    def specs(self) -> list[dict[str, Any]]:
        """Anthropic tool definitions for the session's tools."""
        return [dict(TOOL_SPECS[name]) for name in self.session.tools]

    def execute(self, name: str, args: Any) -> ToolResult:
        """Run one tool call; mistakes come back as error results, never as exceptions."""
        if name not in self.session.tools:
            return ToolResult(f"no tool {name!r} for the {self.session.role} role; available: "
                              f"{', '.join(self.session.tools)}", True)
        if not isinstance(args, dict):
            return ToolResult(f"{name} takes a JSON object of arguments", True)
        refused = self._refused(name, args)
        if refused:
            return ToolResult(refused, True)
        try:
            return getattr(self, f"_{name}")(args)
        except UsageError as e:
            return ToolResult(str(e), True)

    def _refused(self, name: str, args: dict[str, Any]) -> str | None:
        """Why a `tool.before` hook refused this call of the shell or the editor, if one did."""
        s = self.session
        if not s.tool_hooks or name not in GUARDED:
            return None
        event = redact_data({"event": "tool.before", "mission": s.mission, "time": utc_now(),
                 "run_id": s.run_id, "role": s.role, "feature": s.feature_id, "tool": name,
                 "input": args})
        return hooks.vetoed(hooks.run_hooks(s.state, s.workdir, s.tool_hooks, event,
                                            s.hook_timeout))

    def _bash(self, args: dict[str, Any]) -> ToolResult:
        if args.get("restart"):
            self.shell.stop()
            return ToolResult("the shell was restarted (back in the working directory)")
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            return ToolResult("bash needs a 'command' (or 'restart': true)", True)
        return self.shell.run(command)

    def _str_replace_based_edit_tool(self, args: dict[str, Any]) -> ToolResult:
        return self.editor.run(args)

    def _note(self, args: dict[str, Any]) -> ToolResult:
        s = self.session
        try:
            entry = memory.make_entry(s.role, s.feature_id, str(args.get("kind", "")),
                                      str(args.get("text", "")), run=s.run_id)
        except ValueError as e:
            return ToolResult(str(e), True)
        try:
            memory.append_entry(s.state, entry)
        except BusyError as e:  # a stuck lock holder: the agent is told and goes on
            return ToolResult(f"not noted: {e}", True)
        return ToolResult(f"noted: {entry.line()}")

    def _verdict(self, args: dict[str, Any]) -> ToolResult:
        verdict, reason = str(args.get("verdict", "")), str(args.get("reason", ""))
        actions.record_verdict(self.session.state, self.session.run_id, verdict, reason)
        return ToolResult(f"verdict recorded: {verdict}; the harness applies it when the run ends")

    def _plan(self, args: dict[str, Any]) -> ToolResult:
        plan = actions.submit_plan(self.session.state, args.get("features"), "plan tool")
        lines = [f"{f.id} [{f.status}] {f.title}" for f in plan]
        return ToolResult(f"plan saved, {len(plan)} features:\n" + "\n".join(lines))

    def _curation(self, args: dict[str, Any]) -> ToolResult:
        actions.record_curation(self.session.state, self.session.run_id,
                                str(args.get("summary", "")), str(args.get("memory", "")),
                                args.get("promotions"), args.get("same"))
        return ToolResult("curation recorded; the harness checks it when the run ends")

    def _finish(self, args: dict[str, Any]) -> ToolResult:
        status = args.get("status", "done")
        if status not in ("done", "gave_up", "blocked"):
            return ToolResult("status must be 'done', 'gave_up' or 'blocked'", True)
        self.finished = str(args.get("summary", "")).strip() or "(no summary)"
        self.finish_status = status
        if status == "blocked":
            needs = str(args.get("needs", "")).strip() or self.finished
            actions.request_block(self.session.state, self.session.run_id, needs)
        return ToolResult("finished; the run ends after this turn")

    def close(self) -> None:
        """Stop the shell and clean up."""
        self.shell.close()

    def __enter__(self) -> ToolBox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
