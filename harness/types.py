"""The types every layer speaks, and nothing else: one run's Session and Caps, what a
backend reports (Outcome, Usage), what a tool gives back (ToolResult), and the Backend
Protocol the runner depends on. No other harness module is imported here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, get_args

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

# The longest any timeout or wall-clock cap may be (30 days): past it, a number is a typo,
# and an infinite one would overflow the clocks it is added to.
MAX_SECONDS = 30 * 24 * 3600

# Outcome.status values
FINISHED = "finished"  # the agent ended its turn or called `finish`
CAPPED = "capped"  # a turn, token, time or dollar cap stopped the run
GAVE_UP = "gave_up"  # the agent (or CLI) reported failure


def a_number(value: Any) -> Any:
    """A config value where a number goes: YAML's `true` or a quoted '3' is refused, where
    pydantic's lax mode would take them as 1 and 3 (docs/configuration.md)."""
    if isinstance(value, bool | str):
        raise ValueError(f"expected a number, found {value!r}")
    return value


NUMBER = BeforeValidator(a_number)  # for a number inside a container (Annotated[float, ...])


class ConfigModel(BaseModel):
    """A config file's mapping: unknown keys refused, and a number only as a number."""

    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="before")
    @classmethod
    def _numbers_are_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        annotation = cls.model_fields[info.field_name].annotation
        if {int, float} & set(get_args(annotation) or (annotation,)):
            return a_number(value)
        return value


class Caps(ConfigModel):
    """Limits for one run, from the role's `caps:`; None means no limit."""

    turns: int | None = Field(default=50, ge=1, le=100_000)  # model calls per run
    max_tokens: int = Field(default=8192, ge=1, le=1_000_000)  # output tokens per model call
    wall_seconds: float | None = Field(default=1800, gt=0, le=MAX_SECONDS)  # per run, wall clock
    dollars: float | None = Field(default=None, ge=0, le=1_000_000)  # per run
    bash_timeout: float = Field(default=120, gt=0, le=MAX_SECONDS)  # per bash command
    # per tool result, then a visible truncation marker
    output_chars: int = Field(default=20000, ge=100, le=100_000_000)
    # The conversation's size before a call, in tokens; past it, old tool results are
    # cleared. Well under the models' 200k-token window: the estimate of new results is rough.
    context_tokens: int | None = Field(default=120_000, ge=1000, le=100_000_000)
    # extended thinking per call
    thinking_tokens: int | None = Field(default=None, ge=1024, le=1_000_000)

    @model_validator(mode="after")
    def _thinking_within_max_tokens(self) -> Caps:
        if self.thinking_tokens is not None and self.thinking_tokens >= self.max_tokens:
            raise ValueError(f"thinking_tokens ({self.thinking_tokens}) must be less than "
                             f"max_tokens ({self.max_tokens}): thinking counts against it")
        return self


@dataclass(frozen=True)
class SandboxPolicy:
    """Where a run's agent commands may reach: the role's `sandbox` settings."""

    kind: str = "none"  # "none" or "bwrap"
    paths: dict[str, str] = field(default_factory=dict)  # path -> "ro" or "rw", shown inside
    network: bool = False
    # hidden inside the sandbox; the agent reaches them only through the harness's tools
    state: Path | None = None
    identity: Path | None = None
    harness_home: Path | None = None  # where run.sh lives: inside, a run.sh that says so


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
    budget_left: Callable[[], float | None] = lambda: None  # the mission's dollars left
    options: dict[str, Any] = field(default_factory=dict)  # backend-specific, from the role YAML
    sandbox: SandboxPolicy = field(default_factory=SandboxPolicy)
    mission: str = ""  # its name, as hooks are told it
    tool_hooks: list[str] = field(default_factory=list)  # `tool.before` hooks: may refuse a call
    hook_timeout: float = 30.0


@dataclass
class Outcome:
    """What a backend reports when a run ends."""

    status: str
    summary: str = ""
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = 0.0  # None: unknown (the model has no price)
    turns: int = 0
    detail: str = ""  # why it stopped, for the record
    reset_at: str | None = None  # when a usage limit lifts, if the backend was told
    model: str | None = None  # the model that served the run, as the API or CLI reported it


@dataclass
class RunResult:
    """How a role run ended, for the CLI to print and exit with."""

    exit_code: int
    run_id: str | None
    message: str


@dataclass
class ToolResult:
    """What a tool call gives back to the model."""

    text: str
    is_error: bool = False


class Backend(Protocol):
    """Runs one prompt to completion under the session's caps."""

    def run(self, prompt: str, session: Session) -> Outcome: ...
