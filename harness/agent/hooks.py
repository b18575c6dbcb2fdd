"""Hooks: the person's own commands, run when something happens in a mission (docs/hooks.md).

Each command gets the event as one JSON object on stdin and runs through `sh -c`, under the
keeper (so it does not outlive the harness), outside the agent's sandbox (it is the person's
program, not the agent's), with secret-named variables removed from its environment, and
with a timeout. Its exit code and output are appended to `<state>/hooks.log`. A failing,
hanging or missing hook is logged and never fails the run.
"""

from __future__ import annotations

import json
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from harness.agent import procs, sandbox
from harness.names import visible
from harness.state.memory import utc_now
from harness.state.redact import scrubbed_environ
from harness.state.store import append_record, lock_path
from harness.types import SandboxPolicy

VETO = 2  # a `tool.before` hook's exit code that refuses the tool call
LOG_CHARS = 4000  # of each stream, per hook run, in hooks.log
KEEP_BYTES = 64 * 1024  # of each stream, per hook run, kept in memory (its tail)


@dataclass
class HookRun:
    """One command's run: its exit code (None: it timed out or could not start) and output."""

    command: str
    exit_code: int | None
    stdout: str
    stderr: str


def log_path(state: Path) -> Path:
    return state / "hooks.log"


def run_hooks(state: Path, workdir: Path, commands: list[str], event: dict[str, Any],
              timeout: float) -> list[HookRun]:
    """Run each command with `event` on stdin, one after another; each logged, none raises."""
    runs = []
    for command in commands:
        try:
            run = _run_one(workdir, state, command, event, timeout)
        except OSError as e:
            run = HookRun(command, None, "", f"cannot start: {e}")
        runs.append(run)
        _log(state, event, run)
    return runs


def vetoed(runs: list[HookRun]) -> str | None:
    """Why a `tool.before` hook refused the call (its stderr), or None if none did."""
    for run in runs:
        if run.exit_code == VETO:
            return run.stderr.strip() or f"refused by the tool.before hook `{run.command}`"
    return None


def _run_one(workdir: Path, state: Path, command: str, event: dict[str, Any],
             timeout: float) -> HookRun:
    env = {**scrubbed_environ(), "HARNESS_EVENT": str(event.get("event", "")),
           "HARNESS_STATE": str(state)}
    argv = sandbox.confine(["/bin/sh", "-c", command], SandboxPolicy(), workdir)
    proc = subprocess.Popen(argv, cwd=workdir, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=procs.die_with_parent)
    data = (json.dumps(event, ensure_ascii=False) + "\n").encode("utf-8", "replace")
    out, err = bytearray(), bytearray()
    readers = [threading.Thread(target=_drain, args=(proc.stdout, out), daemon=True),
               threading.Thread(target=_drain, args=(proc.stderr, err), daemon=True)]
    for thread in [threading.Thread(target=_feed, args=(proc.stdin, data), daemon=True),
                   *readers]:
        thread.start()
    try:
        code: int | None = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        procs.stop_tree(proc)
        code = None
    for reader in readers:  # the keeper has stopped all the hook started: its pipes close
        reader.join(procs.STOP_GRACE)
    stdout, stderr = (bytes(b).decode("utf-8", "replace") for b in (out, err))
    if code is None:
        return HookRun(command, None, stdout, f"{stderr}timed out after {timeout:g}s; stopped")
    return HookRun(command, code, stdout, stderr)


def _feed(stream: IO[bytes], data: bytes) -> None:
    """Write the event to a hook's stdin; one that does not read it is its business."""
    try:
        with stream:
            stream.write(data)
    except OSError:
        pass


def _drain(stream: IO[bytes], kept: bytearray) -> None:
    """Read a hook's stream to its end, keeping only its last KEEP_BYTES: a hook printing
    gigabytes costs the harness no more memory than one printing a line."""
    with stream:
        for chunk in iter(lambda: stream.read1(65536), b""):  # type: ignore[attr-defined]
            kept += chunk
            del kept[:-KEEP_BYTES]


def _log(state: Path, event: dict[str, Any], run: HookRun) -> None:
    code = f"exit={run.exit_code}" if run.exit_code is not None else (
        "not started" if run.stderr.startswith("cannot start") else "timeout")
    lines = [f"{utc_now()} {event.get('event')} {code} $ {run.command}"]
    for name, text in (("stdout", run.stdout), ("stderr", run.stderr)):
        text = text.strip()
        if text:
            # visible: a hook may echo what an agent wrote to a person tailing the log
            lines.append(f"  {name}: " + visible(text)[-LOG_CHARS:].replace("\n", "\n    "))
    try:
        append_record(log_path(state), "\n".join(lines) + "\n", lock_path(state, "hooks"))
    except OSError:
        pass  # a full disk must not fail the run over a hook's log
