"""`run.sh note`: the click-free fast path.

Agents call `note` inside their tool loops, so it must start about as fast as
the bare interpreter: it imports only argparse and the memory module.
"""

from __future__ import annotations

import argparse
import os
import sys

from harness.errors import USAGE, HarnessError
from harness.memory import KINDS, append_entry, make_entry, write_long_note
from harness.paths import check_state, resolve_paths

USAGE_TEXT = """\
run.sh note KIND TEXT...        append a line to raw.md (KIND: TRICK GOTCHA DECISION FAIL FORGOT -)
run.sh note --file SLUG [TEXT]  write memory/YYYY-MM-DD-<role>-<slug>.md (body from TEXT or stdin)

Role, feature and run come from HARNESS_ROLE, FEATURE_ID and HARNESS_RUN_ID when an
agent calls it, else from --role (default: user), --feature and --run."""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="run.sh note", usage=USAGE_TEXT, add_help=True)
    p.add_argument("--state", help="state directory (default $HARNESS_STATE or ./.harness)")
    p.add_argument("--workdir", help="working directory (default: current)")
    p.add_argument("--role", default=None)
    p.add_argument("--feature", default=None)
    p.add_argument("--run", default=None)
    p.add_argument("--file", metavar="SLUG", default=None)
    p.add_argument("words", nargs=argparse.REMAINDER)  # text may hold --words
    return p


def note_main(argv: list[str]) -> int:
    """Parse the note's arguments (global options included) and append it; returns the exit code."""
    args = parser().parse_args(argv)
    env = os.environ
    role = args.role or env.get("HARNESS_ROLE") or "user"
    feature = args.feature or env.get("FEATURE_ID") or "-"
    run = args.run or env.get("HARNESS_RUN_ID") or None
    try:
        state = check_state(resolve_paths(args.state, args.workdir).state)
        if args.file is not None:
            body = " ".join(args.words) if args.words else sys.stdin.read()
            path = write_long_note(state, role, args.file, body)
            print(f"wrote {path}")
            return 0
        if not args.words:
            raise ValueError(f"give KIND and TEXT; KIND is one of {' '.join(KINDS)}")
        kind, text = args.words[0], " ".join(args.words[1:])
        if not text and not sys.stdin.isatty():
            text = sys.stdin.read()
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
