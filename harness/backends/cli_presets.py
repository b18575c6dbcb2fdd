"""The agent CLIs the `command` backend knows by name, and what each owns: its argv for an
unattended run, which models its provider serves (a role's model for another provider is
not passed; the preset's own default, or the CLI's choice, is used), the project docs it
reads by itself (so the harness's prompt leaves them out) and which caps it can enforce.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, replace
from typing import Any

from harness.backends.pricing import priced
from harness.errors import UsageError
from harness.types import SandboxPolicy


@dataclass(frozen=True)
class Preset:
    """How to invoke one agent CLI and read its output."""

    argv: tuple[str, ...]
    parser: str  # "claude", "codex", "gemini", "opencode" or "generic"
    key_vars: tuple[str, ...] = ()  # credentials the CLI itself needs
    endpoint_vars: tuple[str, ...] = ()  # where its provider's API is, passed with a key
    models: tuple[str, ...] = ()  # name prefixes of the models its provider serves
    default_model: str = ""  # for a role whose model is another provider's; "": CLI chooses
    reads_docs: tuple[str, ...] = ()  # project docs the CLI puts in its own context
    login: str = "its login command"  # how a person logs the CLI in
    status: tuple[str, ...] = ()  # the argv (after the CLI's name) that says if it is logged in
    # under `sandbox: bwrap`: where it keeps its login and state, shown writable, and the
    # network it needs for its API (docs/SANDBOX.md says what that opens)
    home_paths: tuple[str, ...] = ()


PRESETS = {
    "claude": Preset(
        ("claude", "-p", "--output-format", "stream-json", "--verbose"),
        "claude",
        ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"),
        endpoint_vars=("ANTHROPIC_BASE_URL",),
        models=("claude", "sonnet", "opus", "haiku"),
        reads_docs=("CLAUDE.md",),
        login="`claude login`; for cron `claude setup-token` gives CLAUDE_CODE_OAUTH_TOKEN",
        status=("auth", "status"),
        home_paths=("~/.claude", "~/.claude.json"),
    ),
    "codex": Preset(
        # --skip-git-repo-check: the harness, not Codex, decides where the agent works; without
        # it Codex refuses to start outside a git repository and prints no JSON.
        ("codex", "exec", "--json", "--skip-git-repo-check"),
        "codex",
        ("OPENAI_API_KEY", "CODEX_API_KEY"),
        endpoint_vars=("OPENAI_BASE_URL",),
        models=("gpt", "o1", "o3", "o4", "codex"),
        reads_docs=("AGENTS.md",),
        login="`codex login`",
        status=("login", "status"),
        home_paths=("~/.codex",),
    ),
    "gemini": Preset(
        # stream-json: the events as they come, and a last `result` with the usage. The
        # prompt comes on stdin, which (no TTY) is headless mode.
        ("gemini", "--output-format", "stream-json"),
        "gemini",
        ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS"),
        models=("gemini",),
        reads_docs=("GEMINI.md",),
        login="`gemini` once, choosing Login with Google; for cron a GEMINI_API_KEY",
    ),
    "opencode": Preset(
        # `run` is OpenCode's one-shot mode; the prompt comes on stdin
        ("opencode", "run", "--format", "json"),
        "opencode",
        ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY"),
        models=("*/",),  # any provider's, named `provider/model`
        reads_docs=("AGENTS.md",),  # (CLAUDE.md only where there is no AGENTS.md)
        login="`opencode auth login`",
        status=("auth", "list"),
    ),
    "generic": Preset((), "generic"),
}
PROVIDERS = {"claude": "anthropic", "gpt": "openai", "o3": "openai", "o4": "openai",
             "gemini": "google"}  # OpenCode's provider of a bare model name


def sandbox_for(preset: Preset, policy: SandboxPolicy) -> SandboxPolicy:
    """The role's sandbox with what the preset's CLI needs to run in it: its folders in
    $HOME, writable (the role's own `sandbox_paths` win), and the network for its API."""
    if policy.kind != "bwrap" or not preset.home_paths:
        return policy
    paths = {**{path: "rw" for path in preset.home_paths}, **policy.paths}
    return replace(policy, paths=paths, network=True)


def preset_for(options: dict[str, Any]) -> tuple[str, Preset]:
    """The preset the options `preset` names (generic by default)."""
    name = options.get("preset", "generic")
    if name not in PRESETS:
        raise UsageError(f"unknown command preset {name!r}; use one of: {', '.join(PRESETS)}")
    return name, PRESETS[name]


def passed_env(options: dict[str, Any], environ: dict[str, str]) -> list[str]:
    """The secret-named variables an agent CLI gets: the role's `pass_env` when it names one
    (`pass_env: []` passes none); else, for a preset run as shipped, its provider's key and
    endpoint variables that are set (the person exported them and chose this CLI)."""
    if "pass_env" in options:
        return [str(name) for name in options["pass_env"] or []]
    if options.get("command"):
        return []
    _, preset = preset_for(options)
    return [n for n in (*preset.key_vars, *preset.endpoint_vars) if environ.get(n)]


def cli_model(options: dict[str, Any], model: str) -> str:
    """The model the CLI runs: the role's, if its provider serves it (or the role names its
    own command); else the preset's default ("" lets the CLI choose). The role's default
    model is Anthropic's, which Codex refuses."""
    _, preset = preset_for(options)
    if preset.models == ("*/",) and not options.get("command"):
        if "/" in model or not model:
            return model
        provider = next((p for prefix, p in PROVIDERS.items()
                         if model.lower().startswith(prefix)), None)
        return f"{provider}/{model}" if provider else preset.default_model
    if options.get("command") or not preset.models or model.lower().startswith(preset.models):
        return model
    return preset.default_model


def requested_model(backend: str, options: dict[str, Any], model: str) -> str | None:
    """The model a role's run asks for, as recorded when it starts: the role's for the API;
    for a preset the one its argv names; None when no model is asked for by name (a script,
    a role's own `command`, a CLI left to choose)."""
    if backend == "scripted":
        return None
    if backend == "command":
        if options.get("command"):
            return None
        try:
            return cli_model(options, model) or None
        except UsageError:
            return None  # the run itself reports the unknown preset
    return model


def docs_read_by(backend: str, options: dict[str, Any]) -> tuple[str, ...]:
    """The project docs a role's agent CLI reads by itself (none for other backends)."""
    if backend != "command" or options.get("command"):
        return ()
    return preset_for(options)[1].reads_docs


def build_argv(options: dict[str, Any], model: str, turns: int | None,
               dollars: float | None = None) -> tuple[list[str], Preset]:
    """The argv to run and its preset, from the options `preset`, `command` and `args`, and
    for the claude preset `permission_mode` and `allowed_tools`, for codex `sandbox`, for
    gemini `approval_mode`."""
    name, preset = preset_for(options)
    extra = [str(a) for a in options.get("args", [])]
    command = options.get("command")
    if command:
        argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
        return argv + extra, preset
    if name == "generic":
        raise UsageError("the generic command backend needs a `command` option")
    argv, model = list(preset.argv), cli_model(options, model)
    if name == "claude":
        argv += ["--model", model] if model else []
        argv += ["--max-turns", str(turns)] if turns else []
        argv += ["--max-budget-usd", f"{dollars:g}"] if dollars else []
        # In -p mode nobody can answer a permission prompt, so what is not allowed up front
        # is refused: by default edits and shell commands go ahead, like the anthropic
        # backend's own tools; web fetches and MCP tools do not.
        argv += ["--permission-mode", str(options.get("permission_mode", "acceptEdits"))]
        tools = [str(t) for t in options.get("allowed_tools", ["Bash"])]
        argv += ["--allowedTools", ",".join(tools)] if tools else []
        return argv + extra, preset
    if name == "gemini":
        argv += ["-m", model] if model else []
        # headless, nobody approves a tool call: yolo lets edits and shell commands go ahead;
        # in a folder the person never trusted it would be turned back to asking, so the
        # run trusts the working directory the harness chose (--skip-trust)
        argv += ["--approval-mode", str(options.get("approval_mode", "yolo")), "--skip-trust"]
        return argv + extra, preset
    if name == "opencode":
        return argv + (["-m", model] if model else []) + extra, preset
    argv += ["-m", model] if model else []
    # codex exec's default sandbox is read-only: a worker could change nothing
    argv += ["--sandbox", str(options.get("sandbox", "workspace-write"))]
    return argv + extra + ["-"], preset  # `-`: codex exec reads the prompt from stdin


def unpriced_model(backend: str, options: dict[str, Any], model: str,
                   prices: dict[str, dict[str, float]]) -> str | None:
    """The model a role's runs would be priced by, when no price table knows it (its cost
    would be unknown); None when it is priced, or when the CLI reports its own cost."""
    if backend == "scripted":
        return None
    if backend == "command":
        try:
            name, _ = preset_for(options)
        except UsageError:
            return None  # the backend check reports it
        if name in ("claude", "opencode") and not options.get("command"):
            return None  # Claude Code and OpenCode report each run's cost themselves
        model = cli_model(options, model)
    return None if priced(model, prices) else model
