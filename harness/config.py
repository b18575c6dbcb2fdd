"""Checked configuration: the mission's `<state>/config.yaml` and `roles/<role>.yaml`.

Both load into typed objects that reject unknown keys; errors name the file
and the key (or line, for YAML syntax errors).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import yaml
from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    ValidationError,
    field_validator,
)

from harness.errors import UsageError
from harness.types import MAX_SECONDS, NUMBER, Caps, ConfigModel
from harness.yamlfile import load_yaml

ROLES = ("planner", "worker", "validator", "curator")


Strict = ConfigModel  # unknown keys and a bool or text for a number refused (harness/types.py)


IDENTITY_CHARS = 4000  # identity/<role>.md: the curator keeps it within what prompts show


def _chars(default: int) -> Any:
    """A prompt block's cap in characters: at least 1, so a block is never silently dropped."""
    return Field(default=default, ge=1, le=10_000_000)


def _count(default: int) -> Any:
    """A prompt block's cap in lines or entries: 0 shows none of them."""
    return Field(default=default, ge=0, le=100_000)


class PromptCaps(Strict):
    """Hard caps per prompt block: characters, lines or entries as named."""

    identity_chars: int = _chars(IDENTITY_CHARS)  # the whole file shows; the curator keeps it
    project_docs_chars: int = _chars(6000)  # AGENTS.md and CLAUDE.md, each
    plan_chars: int = _chars(6000)  # features.json, the current feature marked
    summary_chars: int = _chars(4000)  # summary.md (L2)
    note_titles: int = _count(10)  # the newest; the list fills up early and then stays this long
    feature_chars: int = _chars(4000)  # the feature and its acceptance criteria
    ledger_entries: int = _count(5)  # the feature's last verdicts
    ledger_chars: int = _chars(3000)  # those verdicts, and a person's answers and guidance
    progress_lines: int = _count(30)  # the last lines of progress.log
    raw_entries: int = _count(20)  # the last raw.md entries (L1)
    raw_chars: int = _chars(6000)  # those entries
    spec_chars: int = _chars(12000)  # spec.md, in the planner's prompt
    verify_chars: int = _chars(4000)  # the tail of `verify`'s output, for the validator
    diff_chars: int = _chars(12000)  # the worker's diff, for the validator


def _switch(value: Any) -> Any:
    # YAML reads a bare `off` (and `no`) as false, `on` (and `yes`) as true
    return {False: "off", True: "auto"}.get(value, value) if isinstance(value, bool) else value


class CuratorConfig(Strict):
    mode: Literal["rules", "model"] = "rules"  # model: the model rewrites the prose too (checked)
    similarity: float | None = Field(default=None, ge=0, le=100)  # None: the curator's default
    # auto: the curator role's model judges "same lesson?" when it can (harness/run/judging.py)
    judge: Annotated[Literal["auto", "off"], BeforeValidator(_switch)] = "auto"
    # the most new notes a pass asks the judge about, and as many due lessons beside identity
    questions: int = Field(default=20, ge=0, le=200)
    second_opinion: bool | None = None  # the pair model's switch: it is gone; accepted, unused


def _no_nul(command: str) -> str:
    if "\x00" in command:  # no program can be given one: every hook run would fail
        raise ValueError("a command must not hold a NUL byte")
    return command


Command = Annotated[str, AfterValidator(_no_nul)]  # a hook's shell command

# what a hook or a notification may be for (docs/hooks.md); tool.before is a hook's alone
Event = Literal["run.finished", "feature.done", "feature.failed", "feature.blocked",
                "merge.waiting", "budget.exhausted", "mission.done", "lesson.promoted"]
EVENTS = get_args(Event)
HookEvent = Literal[Event, "tool.before"]


class NotifyConfig(Strict):
    """`notify:` apprise URLs (more in HARNESS_NOTIFY_URLS) and the events they are told."""

    urls: list[str] = Field(default_factory=list)  # ntfy://, slack://, mailto://, json://...
    events: list[Event] = Field(default_factory=lambda: [
        "feature.done", "feature.failed", "feature.blocked", "merge.waiting",
        "budget.exhausted", "mission.done"])
    # one message per feature and event within this long; what else happened, in a digest
    quiet_minutes: float = Field(default=360, ge=0)
    digest_minutes: float = Field(default=60, gt=0)  # a digest at most this often


class MissionConfig(Strict):
    """`<state>/config.yaml`."""

    mission: str | None = None  # name for cross-mission promotion; default: project folder
    budget_usd: float | None = Field(default=None, ge=0, le=1e9)  # mission-wide dollar budget
    # dollars per run for every role; a role's own `caps.dollars`, when lower, still holds
    run_budget_usd: float | None = Field(default=None, gt=0, le=1e9)
    max_attempts: int = Field(default=3, ge=1, le=1_000_000)  # fails before `failed`
    stuck_after: int = Field(default=3, ge=1, le=1_000_000)  # runs with no progress: blocked
    prompt: PromptCaps = Field(default_factory=PromptCaps)
    # model -> $ per million tokens by usage field
    prices: dict[str, dict[str, Annotated[float, NUMBER, Field(ge=0, le=1e6)]]] = Field(
        default_factory=dict)
    curator: CuratorConfig = Field(default_factory=CuratorConfig)
    # shared: one worker or validating run per working tree; worktrees: one git worktree
    # per feature, merged into base_branch on a pass (docs/workspaces.md)
    workspace: Literal["shared", "worktrees"] = "shared"
    base_branch: str | None = None  # None: the branch checked out in the working directory
    # where every role's commands run (docs/SANDBOX.md); a role's own `sandbox` overrides it.
    # `run.sh init` writes bwrap wherever bwrap works on the machine.
    sandbox: Literal["none", "bwrap"] = "none"
    sandbox_network: bool = False  # bwrap: whether the agent's commands reach the network
    # Whether worker runs commit their changes (harness/run/commits.py); false: no commits,
    # and no git needed (a detached HEAD, no repository or no git is then no error)
    commit: bool = True
    # event -> shell commands given the event as JSON on stdin (harness/agent/hooks.py)
    hooks: dict[HookEvent, list[Command]] = Field(default_factory=dict)
    hook_timeout: float = Field(default=30, gt=0, le=MAX_SECONDS)  # seconds, per command
    notify: NotifyConfig = Field(default_factory=NotifyConfig)

    @field_validator("hooks", mode="before")
    @classmethod
    def _one_command(cls, hooks: Any) -> Any:
        """`event: command` is `event: [command]`."""
        if isinstance(hooks, dict):
            return {k: [v] if isinstance(v, str) else v for k, v in hooks.items()}
        return hooks
    # project files (AGENTS.md, CLAUDE.md) that keep a managed block of every role's
    # promoted lessons, rewritten after each curator pass (harness/run/export.py)
    identity_export: list[str] = Field(default_factory=list)

    @field_validator("identity_export")
    @classmethod
    def _in_project(cls, names: list[str]) -> list[str]:
        for name in names:
            parts = Path(name).parts
            if not parts or Path(name).is_absolute() or ".." in parts:
                raise ValueError(f"{name!r} must be a file name relative to the project, "
                                 "e.g. AGENTS.md")
        return names


# the tools a role may name (harness/agent/tools.py's TOOL_SPECS; a test keeps them equal)
TOOLS = ("bash", "str_replace_based_edit_tool", "note", "verdict", "plan", "curation", "finish")
# `options` the harness reads as numbers: their ranges (seconds, or a count of retries)
NUMERIC_OPTIONS = {"verify_timeout": (0.1, MAX_SECONDS), "timeout": (0.1, MAX_SECONDS),
                   "kill_grace": (0, 3600), "max_retries": (0, 100)}
WHOLE_OPTIONS = ("max_retries",)


class RoleConfig(Strict):
    """`roles/<role>.yaml`: which template, backend, model, tools and caps a role runs with."""

    template: str  # in templates/, or <state>/templates/ (which wins)
    backend: Literal["anthropic", "openai", "command", "scripted"] = "anthropic"  # what runs it
    model: str = "claude-sonnet-4-5"  # a preset passes it only if its provider serves it
    tools: list[str] = Field(default_factory=list)  # what the agent may call (config.TOOLS)
    caps: Caps = Field(default_factory=Caps)  # `caps:` below; merged key by key
    options: dict[str, Any] = Field(default_factory=dict)  # the backend's (configuration.md)
    # What the agent's shell, the feature's `verify`, an agent CLI and the harness's git on
    # the agent's tree may reach (docs/SANDBOX.md): bwrap confines them to the working
    # directory. Unset: the mission's setting; `--sandbox` on the command line overrides.
    sandbox: Literal["none", "bwrap"] | None = None
    sandbox_paths: dict[str, Literal["ro", "rw"]] = Field(default_factory=dict)  # seen in bwrap
    sandbox_network: bool | None = None  # unset: the mission's

    @field_validator("tools")
    @classmethod
    def _known_tools(cls, tools: list[str]) -> list[str]:
        unknown = [t for t in tools if t not in TOOLS]
        if unknown:
            raise ValueError(f"unknown tool(s) {', '.join(map(repr, unknown))}; known: "
                             f"{', '.join(TOOLS)}")
        return tools

    @field_validator("options")
    @classmethod
    def _numbers_in_range(cls, options: dict[str, Any]) -> dict[str, Any]:
        for key, (low, high) in NUMERIC_OPTIONS.items():
            value = options.get(key)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{key}: expected a number, found {value!r}")
            if not low <= value <= high:
                raise ValueError(f"{key}: {value!r} is out of range; give {low} to {high}")
            if key in WHOLE_OPTIONS and value != int(value):
                raise ValueError(f"{key}: expected a whole number, found {value!r}")
        return options

    @field_validator("sandbox_paths")
    @classmethod
    def _absolute(cls, paths: dict[str, str]) -> dict[str, str]:
        for path in paths:
            if not path.startswith(("/", "~/")):
                raise ValueError(f"{path!r} must start with / or ~/")
        return paths


def run_caps(caps: Caps, mission: MissionConfig) -> Caps:
    """A run's caps: the role's, with the mission's per-run dollar cap when it is lower."""
    if mission.run_budget_usd is None:
        return caps.model_copy()
    dollars = min(d for d in (caps.dollars, mission.run_budget_usd) if d is not None)
    return caps.model_copy(update={"dollars": dollars})


def _validate(model: type[Strict], data: Any, path: Path) -> Any:
    try:
        return model.model_validate(data if data is not None else {})
    except ValidationError as e:
        err = e.errors()[0]
        key = ".".join(str(p) for p in err["loc"]) or "(top level)"
        found = "" if err["type"] == "extra_forbidden" else f" (found {err['input']!r:.60})"
        msg = err["msg"].removeprefix("Value error, ")
        raise UsageError(f"{path}: key '{key}': {msg}{found}") from None


def load_mission_config(state: Path) -> MissionConfig:
    """The mission config; a missing file means all defaults."""
    path = state / "config.yaml"
    if not path.exists():
        return MissionConfig()
    return _validate(MissionConfig, load_yaml(path), path)


def role_config_path(role: str, state: Path, home: Path) -> Path:
    """`<state>/roles/<role>.yaml` if present, else `$HARNESS_HOME/roles/<role>.yaml`."""
    if role not in ROLES:
        raise UsageError(f"unknown role {role!r}; roles are {', '.join(ROLES)}")
    override = state / "roles" / f"{role}.yaml"
    return override if override.exists() else home / "roles" / f"{role}.yaml"


def merge_keys(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` on top of `base` key by key; mappings (caps, options) merge the same way."""
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            value = merge_keys(merged[key], value)
        merged[key] = value
    return merged


def load_role_config(role: str, state: Path, home: Path) -> tuple[RoleConfig, Path, str]:
    """The role's config, the file it came from and that file's text.

    A mission's `<state>/roles/<role>.yaml` overrides the shipped file key by key; the text
    recorded for it is then the effective config, as YAML, naming both files."""
    path = role_config_path(role, state, home)
    shipped = home / "roles" / f"{role}.yaml"
    if path == shipped:
        data = load_yaml(path)
        return _validate(RoleConfig, data, path), path, path.read_text(encoding="utf-8")
    over, base = load_yaml(path), load_yaml(shipped)
    if over is not None and not isinstance(over, dict):
        raise UsageError(f"{path}: expected a mapping of keys (e.g. `options: {{...}}`)")
    merged = merge_keys(base or {}, over or {})
    try:
        config = RoleConfig.model_validate(merged)
    except ValidationError as e:
        err = e.errors()[0]
        key = ".".join(str(p) for p in err["loc"]) or "(top level)"
        where = path if err["loc"] and err["loc"][0] in (over or {}) else shipped
        msg = err["msg"].removeprefix("Value error, ")
        raise UsageError(f"{where}: key '{key}': {msg}") from None
    text = (f"# {path} over {shipped}, key by key\n"
            + yaml.safe_dump(merged, sort_keys=False, allow_unicode=True))
    return config, path, text


def mission_name(config: MissionConfig, state: Path) -> str:
    """The mission's name: from config, else the project folder holding `.harness`."""
    if config.mission:
        return config.mission
    return state.parent.name if state.name == ".harness" else state.name
