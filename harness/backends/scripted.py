"""The `scripted` backend: replays model turns from a YAML file, offline and deterministic.

The file (`script` in the role's options) is a list of turns:

    - text: "Creating the file."
      tools:
        - name: str_replace_based_edit_tool
          input: {command: create, path: hello.txt, file_text: "hi\\n"}
      usage: {input_tokens: 1200, output_tokens: 80}   # optional: recorded as given
      cost_usd: 0.01                                   # optional: what this turn costs
    - tools: [{name: finish, input: {summary: "wrote hello.txt"}}]

Tool calls run through the same ToolBox as the anthropic backend and are recorded the same
way, so a scripted run exercises everything but the model. For tests and the demo only; the
format, with a runnable example, is docs/scripted.md.
No model serves it, so it costs what its turns' `cost_usd` add up to, $0 unless given: its
tokens are never priced as a model's (a report would add an offline demo to the spend).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.agent.tools import ToolBox
from harness.errors import HarnessError, UsageError
from harness.types import CAPPED, FINISHED, GAVE_UP, Outcome, Session, Usage
from harness.yamlfile import check_size


class ScriptedCall(BaseModel):
    """One tool call in a scripted turn."""

    model_config = ConfigDict(extra="forbid")
    name: str
    input: dict[str, Any] = Field(default_factory=dict)


class ScriptedUsage(BaseModel):
    """Token counts a scripted turn claims, for cost accounting."""

    model_config = ConfigDict(extra="forbid")
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0


class ScriptedTurn(BaseModel):
    """One model turn: some text and the tool calls it makes."""

    model_config = ConfigDict(extra="forbid")
    text: str = ""
    tools: list[ScriptedCall] = Field(default_factory=list)
    usage: ScriptedUsage = Field(default_factory=ScriptedUsage)
    cost_usd: float = Field(default=0.0, ge=0)  # what the turn costs; no model prices it


def script_path(session: Session) -> Path:
    """The script file: absolute, or relative to the state directory, then HARNESS_HOME."""
    name = session.options.get("script")
    if not name:
        raise UsageError(f"the scripted backend needs a `script` option (role {session.role})")
    candidates = [Path(name)] if Path(name).is_absolute() else [
        session.state / name, session.home / name]
    for path in candidates:
        if path.is_file():
            return path
    raise UsageError(f"script file {name} not found (looked for {', '.join(map(str, candidates))})")


def load_script(path: Path) -> list[ScriptedTurn]:
    """The checked turns of a script; UsageError names the file, the turn and the key."""
    try:
        data = check_size(yaml.safe_load(path.read_text(encoding="utf-8")), path)
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"{path}: cannot read: {e}") from None
    except yaml.YAMLError as e:
        raise UsageError(f"{path}: bad YAML: {e}") from None
    except RecursionError:
        raise UsageError(f"{path}: YAML nested too deeply to read") from None
    except ValueError as e:  # a number past Python's 4,300 digits
        raise UsageError(f"{path}: {e}") from None
    if not isinstance(data, list):
        raise UsageError(f"{path}: expected a list of turns")
    turns = []
    for i, item in enumerate(data):
        try:
            turns.append(ScriptedTurn.model_validate(item))
        except ValidationError as e:
            err = e.errors()[0]
            key = ".".join(str(p) for p in err["loc"]) or "(turn)"
            raise UsageError(f"{path}: turn [{i}] key '{key}': {err['msg']}") from None
    return turns


class ScriptedBackend:
    """Replays the script's turns through the ToolBox, under the turn and dollar caps."""

    def run(self, prompt: str, session: Session) -> Outcome:
        """Replay the script until it ends, `finish` is called, or a cap is reached."""
        turns = load_script(script_path(session))
        caps, usage, summary, cost = session.caps, Usage(), "", 0.0

        def outcome(status: str, turns: int, detail: str) -> Outcome:
            return Outcome(status, summary, usage, cost, turns, detail)

        with ToolBox(session) as tools:
            for number, turn in enumerate(turns, 1):
                if caps.turns is not None and number > caps.turns:
                    return outcome(CAPPED, number - 1,
                                   f"turns cap reached ({caps.turns} model calls)")
                if caps.dollars is not None and cost >= caps.dollars:
                    return outcome(CAPPED, number - 1,
                                   f"dollar cap reached (${cost:.4f} of ${caps.dollars:g})")
                try:
                    session.check_budget(cost)
                except HarnessError as e:  # the run's record keeps what it spent
                    e.outcome = outcome(CAPPED, number - 1, str(e))  # type: ignore[attr-defined]
                    raise
                usage.add(Usage(**turn.usage.model_dump()))
                cost += turn.cost_usd
                summary = turn.text or summary
                self.replay(turn, number, session, tools, {"turns": number,
                                                          "cost_usd": round(cost, 6)})
                if tools.finished is not None:
                    summary = tools.finished
                    status = GAVE_UP if tools.finish_status == "gave_up" else FINISHED
                    return outcome(status, number, "finish called")
        return outcome(FINISHED, len(turns), "script ended")

    def replay(self, turn: ScriptedTurn, number: int, session: Session, tools: ToolBox,
               so_far: dict[str, Any]) -> None:
        """Record one turn as a model turn (with the turns and cost so far, as the API
        backends record them), then run and record its tool calls."""
        calls = [{"type": "tool_use", "id": f"toolu_scripted_{number:03d}_{j}",
                  "name": call.name, "input": call.input} for j, call in enumerate(turn.tools)]
        content = ([{"type": "text", "text": turn.text}] if turn.text else []) + calls
        session.record({"event": "model_turn", "turn": number,
                        "stop_reason": "tool_use" if calls else "end_turn",
                        "usage": asdict(Usage(**turn.usage.model_dump())), "content": content,
                        "so_far": so_far})
        for call in calls:
            result = tools.execute(call["name"], call["input"])
            session.record({"event": "tool_call", "turn": number, "id": call["id"],
                            "name": call["name"], "input": call["input"],
                            "result": result.text, "is_error": result.is_error})
