"""The model backends behind one small Protocol.

The role runner builds a `Session` (who is running, where, with which caps and
tools), hands the rendered prompt to `Backend.run`, and gets an `Outcome` back.
A backend never touches feature status: verdicts and plans reach the harness
through the tools (or `run.sh verdict` / `run.sh plan`), which write to disk.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from harness.redact import scrubbed_environ

# Outcome.status values
FINISHED = "finished"  # the agent ended its turn or called `finish`
CAPPED = "capped"  # a turn, token, time or dollar cap stopped the run
GAVE_UP = "gave_up"  # the agent (or CLI) reported failure


@dataclass
class Usage:
    """Token counts summed over a run's model calls."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_creation_input_tokens += other.cache_creation_input_tokens
        self.cache_read_input_tokens += other.cache_read_input_tokens


@dataclass
class Caps:
    """Limits for one run; None means no limit."""

    turns: int | None = 50
    max_tokens: int = 8192  # output tokens per model call
    wall_seconds: float | None = 1800
    dollars: float | None = None  # per run
    bash_timeout: float = 120  # per bash command
    output_chars: int = 20000  # per tool result, then a visible truncation marker


@dataclass
class Session:
    """Everything a backend needs for one run."""

    run_id: str
    role: str
    feature_id: str | None
    workdir: Path
    state: Path
    home: Path
    model: str
    caps: Caps
    tools: list[str]  # tool names this role may use
    prices: dict[str, dict[str, float]]  # model -> $ per million tokens by usage field
    record: Callable[[dict[str, Any]], None]  # append one event to transcript.jsonl
    check_budget: Callable[[float], None]  # raises BudgetError when the mission budget is spent
    options: dict[str, Any] = field(default_factory=dict)  # backend-specific, from the role YAML


@dataclass
class Outcome:
    """What a backend reports when a run ends."""

    status: str
    summary: str = ""
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    turns: int = 0
    detail: str = ""  # why it stopped, for the record
    reset_at: str | None = None  # when a usage limit lifts, if the backend was told


class Backend(Protocol):
    """Runs one prompt to completion under the session's caps."""

    def run(self, prompt: str, session: Session) -> Outcome: ...


def agent_env(session: Session, keep: Iterable[str] = (),
              environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment an agent's commands run in: secrets scrubbed (but the names in `keep`),
    the run named so `run.sh note` and `run.sh verdict` know it, run.sh first on PATH.
    """
    source = dict(os.environ if environ is None else environ)
    env = scrubbed_environ(source)
    env.update({name: source[name] for name in keep if name in source})
    env.update(
        HARNESS_RUN_ID=session.run_id,
        HARNESS_ROLE=session.role,
        FEATURE_ID=session.feature_id or "",
        HARNESS_STATE=str(session.state),
        HARNESS_HOME=str(session.home),
        PATH=os.pathsep.join(p for p in (str(session.home), env.get("PATH", os.defpath)) if p),
    )
    return env


def load_backend(name: str) -> Backend:
    """The backend called `name`; each is imported only when used."""
    if name == "anthropic":
        from harness.backends.anthropic import AnthropicBackend

        return AnthropicBackend()
    if name == "command":
        from harness.backends.command import CommandBackend

        return CommandBackend()
    if name == "scripted":
        from harness.backends.scripted import ScriptedBackend

        return ScriptedBackend()
    raise ValueError(f"unknown backend {name!r}")


def cost_of(usage: Usage, model: str, prices: dict[str, dict[str, float]]) -> float:
    """Dollar cost of `usage` from a price table in $ per million tokens."""
    table = prices.get(model) or prices.get("default") or {}
    return sum(
        getattr(usage, name) * table.get(name, 0.0) / 1_000_000
        for name in (
            "input_tokens",
            "output_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
        )
    )
