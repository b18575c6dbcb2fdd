"""The `command` backend: any agent CLI (Claude Code, Codex, a script) as a subprocess.

The prompt goes in on stdin; the run is named in the environment so the agent can call
`run.sh note` and `run.sh verdict`; the CLI runs in its own process group under a hard
wall-clock cap. Its stdout is read as a stream: each JSON event goes to the transcript as it
arrives (claude's stream-json, codex's --json) with the turns and cost so far, so a run killed
by its cap or by SIGKILL keeps what the agent did, and `status` shows a running one's
progress. Where the CLI prints a JSON result, success is decided from it, never from the
exit code or free text (harness/backends/cli_results.py reads it). A usage or rate limit
is an infrastructure error, not the agent's failure: it raises `UsageLimitReached` carrying
the reset time when one is given. A validator's verdict and notes can also come back as the
CLI's structured final answer (harness/backends/cli_answer.py), for a CLI that cannot write
the state directory.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.agent import sandbox
from harness.agent.env import agent_env
from harness.agent.procs import die_with_parent
from harness.backends.cli_answer import (
    answer_flags,
    answer_schema,
    answer_summary,
    parse_answer,
    record_answer,
    wants_answer,
)
from harness.backends.cli_errors import CliRefused, Setup, fix_for, not_started
from harness.backends.cli_presets import Preset, build_argv, cli_model, passed_env, sandbox_for
from harness.backends.cli_process import Output, wait_and_stop
from harness.backends.cli_results import (
    ClaudeEvents,
    CodexEvents,
    claude_outcome,
    codex_model,
    find_claude_result,
    raise_for_failure,
)
from harness.backends.cli_retries import retry_notice
from harness.backends.cli_streams import (
    GeminiEvents,
    OpenCodeEvents,
    foreign_events,
    own_words,
)
from harness.backends.pricing import known_cost
from harness.errors import BackendError, HarnessError, UsageError
from harness.types import CAPPED, FINISHED, GAVE_UP, Outcome, Session

Fold = ClaudeEvents | CodexEvents | GeminiEvents | OpenCodeEvents
FOLDS: dict[str, type[Fold]] = {"codex": CodexEvents, "gemini": GeminiEvents,
                                "opencode": OpenCodeEvents}  # else Claude Code's events
CLI_FIX = ("install it or put its folder on PATH, or set the role's `command` option to its full"
           " path followed by the preset's flags (docs/backends.md lists them: a `command` is run"
           " as it is)")


def build_env(session: Session, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The CLI's environment: secrets scrubbed, the run named, run.sh's folder first on PATH."""
    # A CLI hands its environment to the commands the agent runs, so no other secret is
    # passed: only the preset's own key (when exported) or what the role's `pass_env` names.
    source = dict(os.environ if environ is None else environ)
    return agent_env(session, passed_env(session.options, source), source)


class CommandBackend:
    """Runs an agent CLI with the prompt on stdin and reads its result."""

    def run(self, prompt: str, session: Session) -> Outcome:
        """Run the CLI once under the session's wall-clock cap."""
        # to the harness a CLI's run is one model call: it gets what is left of the budget
        left = [d for d in (session.caps.dollars, session.budget_left()) if d is not None]
        argv, preset = build_argv(session.options, session.model, session.caps.turns,
                                  min(left, default=None))
        # priced as the model the CLI runs, sandboxed with what its preset needs
        session = replace(session, model=cli_model(session.options, session.model),
                          sandbox=sandbox_for(preset, session.sandbox))
        if not session.workdir.is_dir():
            raise UsageError(f"working directory {session.workdir} does not exist")
        session.check_budget(0.0)
        if not wants_answer(session.options, session.tools):
            return _run_cli(argv, preset, prompt, session)[0]
        with tempfile.TemporaryDirectory(prefix="harness-answer-") as folder:
            argv, asking = _ask_for_answer(argv, preset, session, Path(folder))
            outcome, raw = _run_cli(argv, preset, prompt, asking)
        answer = parse_answer(raw)
        event = record_answer(session, answer)
        session.record(event)
        summary = answer_summary(answer)
        refused = "; ".join(event.get("refused", []))
        detail = "; ".join(d for d in (outcome.detail, refused and f"refused: {refused}") if d)
        return replace(outcome, summary=summary or outcome.summary, detail=detail)


def _ask_for_answer(argv: list[str], preset: Preset, session: Session,
                    folder: Path) -> tuple[list[str], Session]:
    """The argv with the flags asking for a structured answer; Codex reads the schema from a
    file, which bwrap is told to show (its /tmp is private)."""
    schema = answer_schema(session.tools)
    schema_file = folder / "answer-schema.json"
    schema_file.write_text(json.dumps(schema, indent=1))
    flags = answer_flags(preset.parser, schema, str(schema_file))
    # codex exec takes the prompt's `-` last
    argv = argv[:-1] + flags + ["-"] if argv[-1:] == ["-"] else argv + flags
    if session.sandbox.kind == "bwrap" and preset.parser == "codex":
        paths = {**session.sandbox.paths, str(schema_file): "ro"}
        session = replace(session, sandbox=replace(session.sandbox, paths=paths))
    return argv, session


def _run_cli(argv: list[str], preset: Preset, prompt: str,
             session: Session) -> tuple[Outcome, object]:
    """Run the CLI and read its outcome; also what it gave as its final answer (Codex's last
    message, Claude Code's `structured_output`), for the structured-answer channel."""
    session.record({"type": "command", "argv": argv, "cwd": str(session.workdir),
                    "pass_env": passed_env(session.options, dict(os.environ))})
    proc = _start(argv, session, preset)
    fold = FOLDS.get(preset.parser, ClaudeEvents)()
    out = Output(proc, prompt.encode("utf-8"), session.record, _progress(fold, session))
    try:
        timed_out = wait_and_stop(proc, session.caps.wall_seconds,
                                  session.options.get("kill_grace", 5))
    except BaseException as e:  # a SIGTERM: what its events reported so far is the run's
        e.outcome = _served(_wall_capped(fold, session), fold, session)  # type: ignore[attr-defined]
        raise
    out.join()
    if out.error:
        raise out.error
    code, stdout, stderr = proc.returncode, out.stdout(), out.stderr()
    session.record({"type": "command_exit", "returncode": code, "stderr_tail": stderr})
    if timed_out:
        return _served(_wall_capped(fold, session), fold, session), None
    try:
        return _read_outcome(argv, preset, session, fold, (code, stdout, stderr))
    except HarnessError as failure:
        error = failure
        if isinstance(failure, CliRefused):  # the fix, naming the variable and the file
            error = CliRefused(failure.said, failure.kind, failure.variable,
                               fix_for(failure, cli_setup(preset, session)))
        # what the CLI did before it failed: its turns say whether its agent acted
        partial = replace(_wall_capped(fold, session), status=GAVE_UP, detail=str(error)[:500])
        error.outcome = _served(partial, fold, session)  # type: ignore[attr-defined]
        raise error from failure if error is not failure else None


def cli_setup(preset: Preset, session: Session) -> Setup:
    """What a fix for a CLI's refusal names, from the preset, the role and the environment."""
    return Setup(preset.login, preset.key_vars,
                 tuple(passed_env(session.options, dict(os.environ))),
                 os.environ, session.state, session.role)


def _read_outcome(argv: list[str], preset: Preset, session: Session,
                  fold: Fold,
                  ended: tuple[int | None, str, str]) -> tuple[Outcome, object]:
    """The outcome of a CLI that exited: from its events or its JSON result; an error for
    what its failure means."""
    code, stdout, stderr = ended
    if said := not_started(code, stdout, stderr):
        seen = ("; under `sandbox: bwrap` it must be in a folder the sandbox shows (/usr, /opt,"
                " or one in the role's `sandbox_paths`)" if said.startswith("bwrap") else "")
        raise UsageError(f"cannot run agent CLI {argv[0]!r}: {said}; {CLI_FIX} (the program"
                         f" its #! line names must be on PATH too, cron's included){seen}")
    stream = None if isinstance(fold, ClaudeEvents) else fold
    result = None if stream else find_claude_result(stdout)
    if stream and (outcome := stream.outcome(session.model, session.prices)) is not None:
        return _served(outcome, fold, session), stream.summary
    if result:
        outcome = claude_outcome(result, session.model, session.prices)
        return _served(outcome, fold, session), result.get("structured_output")
    if preset.parser == "generic":
        detail = f"exit code {code}" if code else ""
        return Outcome(GAVE_UP if code else FINISHED, summary=stdout[-2000:], detail=detail), None
    raise_for_failure(f"{own_words(stdout)}\n{stderr}")
    if foreign_events(preset.parser, stdout):
        raise UsageError(f"{argv[0]} printed JSON events the harness does not read (output"
                         f" starts: {stdout[:300]!r}): update it to the version the preset"
                         " reads (docs/backends.md), or run it with `preset: generic`")
    raise BackendError(
        f"{argv[0]} printed no {preset.parser} JSON result (exit code {code});"
        f" output starts: {stdout[:500]!r}; stderr ends: {stderr[-500:]!r}"
    )


def _served(outcome: Outcome, fold: Fold, session: Session) -> Outcome:
    """The outcome with the model that served the run, as the CLI reports it: Claude Code's
    events and result name it; Codex names it in its own session record. Where the CLI does
    not say, the model its argv named (the preset's), else None: never the role's model
    when the CLI was not given it."""
    if isinstance(fold, CodexEvents):
        home = Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")
        said = codex_model(fold.thread, home)
    else:  # Claude Code's and Gemini's events name it; OpenCode's do not
        said = fold.model or outcome.model
    if not said and not outcome.turns:
        return replace(outcome, model=None)  # no model call: nothing served it
    asked = None if session.options.get("command") else session.model  # a role's own command
    return replace(outcome, model=said or asked or None)                  # is given no model


def _start(argv: list[str], session: Session, preset: Preset) -> subprocess.Popen:
    """Start the CLI in its own process group, in the working directory, confined as the
    role says (in bwrap, else under the keeper)."""
    env = build_env(session)
    try:
        return sandbox.start(
            [_executable(argv[0], session.workdir, env), *argv[1:]], session.sandbox,
            session.workdir,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=session.workdir,
            env=env,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
    except (FileNotFoundError, PermissionError) as e:
        raise UsageError(f"cannot run agent CLI {argv[0]!r}: {e.strerror}; {CLI_FIX}") from e


def _executable(name: str, workdir: Path, env: dict[str, str]) -> str:
    """The CLI's full path, found as the shell would (it starts under the keeper or bwrap,
    which could only report a missing one after the fact)."""
    if "/" in name:
        path = str(workdir / name)  # a relative path starts in the working directory
        if os.access(path, os.X_OK) and not os.path.isdir(path):
            return path
    elif path := shutil.which(name, path=env.get("PATH")):
        return path
    raise UsageError(f"cannot run agent CLI {name!r}: not found or not executable on PATH="
                     f"{env.get('PATH', '')}; {CLI_FIX}")


def _progress(fold: Fold, session: Session) -> Callable:
    """What to add to an event's record: the turns and cost so far, when the event added to
    them (the cost only where the price table knows the model)."""

    endpoint = _endpoint(session)

    def so_far(event: dict[str, Any]) -> dict[str, Any] | None:
        if notice := retry_notice(event, endpoint):  # shown as it comes, not after the run
            print(f"run.sh: {session.run_id}: {notice}", file=sys.stderr, flush=True)
        if not fold.feed(event):
            return None
        cost = known_cost(fold.usage, session.model, session.prices)
        return {"turns": fold.turns, "cost_usd": None if cost is None else round(cost, 6)}

    return so_far


def _endpoint(session: Session) -> str:
    """The API a claude-preset CLI calls, for its retry lines (Codex names its own)."""
    if session.options.get("preset") != "claude":
        return ""
    passed = passed_env(session.options, dict(os.environ))
    base = os.environ.get("ANTHROPIC_BASE_URL") if "ANTHROPIC_BASE_URL" in passed else None
    return base or "https://api.anthropic.com"


def _wall_capped(fold: Fold, session: Session) -> Outcome:
    """A run stopped at the wall-clock cap, with what its events reported using until then."""
    usage = fold.usage
    cost = known_cost(usage, session.model, session.prices)
    return Outcome(CAPPED, usage=usage, cost_usd=cost, turns=fold.turns, detail="wall-clock cap")
