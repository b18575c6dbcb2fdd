"""The console script: `note` takes a click-free fast path, everything else goes to the CLI."""

from __future__ import annotations

import sys
from typing import Any

from harness.names import visible

GLOBAL_OPTIONS = ("--state", "--workdir")


def subcommand_index(argv: list[str]) -> int | None:
    """Index of the subcommand in `argv`, skipping the global options and their values."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in GLOBAL_OPTIONS:
            i += 2
        elif arg.startswith(tuple(f"{o}=" for o in GLOBAL_OPTIONS)):
            i += 1
        elif arg.startswith("-"):
            return None
        else:
            return i
    return None


class Shown:
    """A text stream writing each control character but newline and tab as a visible
    `\\u00XX` (names.visible): what run.sh prints holds text an agent wrote (a reason, a
    note, a file name, a CLI's message), which must not drive the terminal. `unescaped` is
    the stream itself, for a view that draws with escapes of its own (`watch`)."""

    def __init__(self, stream: Any) -> None:
        self._stream = self.unescaped = stream

    def write(self, text: str) -> int:
        self._stream.write(visible(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def main() -> None:
    sys.stdout, sys.stderr = Shown(sys.stdout), Shown(sys.stderr)
    argv = sys.argv[1:]
    i = subcommand_index(argv)
    if i is not None and argv[i] == "note":
        from harness.cli.note import note_main
        from harness.errors import USAGE, file_error

        try:
            sys.exit(note_main(argv[:i] + argv[i + 1 :]))
        except OSError as e:  # a file the note cannot be written to: say which
            message = file_error(e)
            if message is None:
                raise
            print(f"run.sh note: {message}", file=sys.stderr)
            sys.exit(USAGE)
    from harness.agent.reaper import reaping
    from harness.cli.app import cli

    with reaping():  # nothing an agent detached outlives this process
        # click's own shell completion; the variable is named for run.sh, not `harness`
        cli(prog_name="run.sh", complete_var="_RUN_SH_COMPLETE")


if __name__ == "__main__":
    main()
