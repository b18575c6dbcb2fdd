"""`run.sh note`: the click-free fast path.

Agents call `note` inside their tool loops, so it must start about as fast as the bare
interpreter: it parses with the standard library's getopt (argparse and click each cost
more to import than the whole note takes) and imports only the memory module.
"""

from __future__ import annotations

import getopt
import os
import sys
from pathlib import Path

from harness import names
from harness.errors import USAGE, HarnessError
from harness.paths import check_state, resolve_paths
from harness.state.memory import KINDS, append_entry, make_entry, write_long_note

HELP = """\
usage: run.sh note [OPTIONS] KIND TEXT...     append one line to raw.md
       run.sh note [OPTIONS] --file SLUG [TEXT] write memory/YYYY-MM-DD-<role>-<slug>.md
                                              (body from TEXT, else stdin)
KIND is one of TRICK GOTCHA DECISION FAIL FORGOT -. Everything after KIND is the text.

options (before KIND):
  --role ROLE      default $HARNESS_ROLE, else user
  --feature F-001  default $FEATURE_ID, else -
  --run RUN_ID     default $HARNESS_RUN_ID: a live run of this mission, whose record then
                   gives the role and feature (a note outside any run is a person's: it
                   counts as one source, never as a worker's)
  --file SLUG      write a long-form note instead
  --state DIR      default $HARNESS_STATE, else ./.harness
  --workdir DIR    default the current directory
"""
LONG_OPTIONS = ["role=", "feature=", "run=", "file=", "state=", "workdir=", "help"]
STDIN_MAX = 10_000_000  # characters a note takes from stdin


def note_main(argv: list[str]) -> int:
    """Parse the note's arguments (global options included) and append it; the exit code."""
    try:
        # getopt stops at the first word, so a note's text may hold --anything.
        pairs, words = getopt.getopt(argv, "h", LONG_OPTIONS)
    except getopt.GetoptError as e:
        print(f"run.sh note: {e}\n\n{HELP}", file=sys.stderr)
        return USAGE
    opts = {name.lstrip("-"): value for name, value in pairs}
    if "h" in opts or "help" in opts:
        print(HELP, end="")
        return 0
    try:
        role, feature, run = note_identity(opts, os.environ)
        state = check_state(resolve_paths(opts.get("state"), opts.get("workdir")).state)
        if run is not None:
            role, feature = recorded_run(state, run)
        if "file" in opts:
            body = " ".join(words) if words else read_stdin()
            path = write_long_note(state, role, opts["file"], body)
            print(f"wrote {path}")
            return 0
        if not words:
            raise ValueError(f"give KIND and TEXT; KIND is one of {' '.join(KINDS)}")
        kind, text = words[0], " ".join(words[1:])
        if not text and not sys.stdin.isatty():
            text = read_stdin()
        entry = make_entry(role, feature, kind, text, run=run)
        append_entry(state, entry)
        print(entry.line())
        return 0
    except ValueError as e:
        print(f"run.sh note: {e}", file=sys.stderr)
        return USAGE
    except HarnessError as e:
        print(f"run.sh note: {e}", file=sys.stderr)
        return e.exit_code
    except OSError as e:  # a full disk, a read-only folder: nothing was written
        print(f"run.sh note: cannot write {e.filename or 'the note'}: {e.strerror or e}; "
              "nothing was noted (free space or make the folder writable, then note again)",
              file=sys.stderr)
        return USAGE


def read_stdin() -> str:
    """A note's text from stdin, at most STDIN_MAX characters: /dev/zero or `yes` piped in
    were read until the memory ran out (a MemoryError traceback, or the OOM killer)."""
    text = sys.stdin.read(STDIN_MAX + 1)
    if len(text) > STDIN_MAX:
        raise ValueError(f"the note on stdin is over {STDIN_MAX:,} characters; nothing was "
                         "noted (keep a long log as a file and note where it is)")
    return text


def recorded_run(state: Path, run: str) -> tuple[str, str]:
    """The role and feature the harness recorded for `run`, which must be live: a note that
    names a run takes who wrote it from the run's record, never from flags, variables or its
    text (a shell outside any run notes as a person: one source, however many features)."""
    from harness.state.runs import load_manifest

    try:
        manifest = load_manifest(state, run)
    except HarnessError as e:
        raise ValueError(f"--run/$HARNESS_RUN_ID names no run of this mission ({e}); a note "
                         "names only the live run that writes it: leave both out to note as "
                         "a person") from None
    if manifest.get("status") != "started":
        raise ValueError(f"run {run} is {manifest.get('status')}, not running: a note names "
                         "only the live run that writes it; leave --run and $HARNESS_RUN_ID "
                         "out to note as a person")
    return str(manifest.get("role")), str(manifest.get("feature") or "-")


def note_identity(opts: dict[str, str], env: os._Environ | dict[str, str]
                  ) -> tuple[str, str, str | None]:
    """(role, feature, run) from the options, else the environment, each checked where it
    came from (`names`): ValueError says which option or variable is wrong."""
    values = []
    for option, variable, default, check in (
            ("role", "HARNESS_ROLE", "user", names.check_role),
            ("feature", "FEATURE_ID", "-", lambda v: names.check_feature_id(v, dash=True)),
            ("run", "HARNESS_RUN_ID", None, names.check_run_id)):
        value, where = opts.get(option), f"--{option}"
        if value == "":  # `--feature "$F"` with F unset: not the option left out
            raise ValueError(f"{where} is empty: give a value, or leave the option out")
        if not value:
            value, where = env.get(variable), f"${variable}"
        if not value:
            values.append(default)
            continue
        try:
            values.append(check(value))
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
    return values[0], values[1], values[2]
