"""Secrets a cron job can find: `KEY=value` lines in `<state>/env` and in
`~/.config/autonomous-harness/env`.

Cron reads no shell profile, so a key exported there never reaches a cron job. The runner
fills in from these files what the environment lacks: the environment wins over both, the
state's file over the user's. A file readable by group or others is refused (exit 2): it
holds secrets. Values loaded here are in os.environ, and their names are secret names
(redact.FROM_ENV_FILES): scrubbed from every tool's environment, redacted in records.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import MutableMapping
from pathlib import Path

from harness.errors import UsageError
from harness.state import reading, redact

LINE = re.compile(r"^(?:export\s+)?(?P<key>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)$")


USER_FOLDER = (".config", "autonomous-harness")  # under $HOME: the user's env file's folder


def user_env_file() -> Path:
    from harness.paths import home_dir

    return home_dir().joinpath(*USER_FOLDER, "env")


def env_files(state: Path) -> list[Path]:
    """The files read, weakest first: the user's, then the state's."""
    return [user_env_file(), state / "env"]


def parse_env(text: str, source: Path) -> dict[str, str]:
    """`KEY=value` lines (`export ` allowed, one pair of quotes stripped); `#` lines and blank
    lines skipped; anything else is a UsageError naming the file and line."""
    out = {}
    for n, raw in enumerate(text.removeprefix("\ufeff").splitlines(), 1):  # Notepad's BOM
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = LINE.match(line)
        if m is None:
            raise UsageError(f"{source} line {n}: expected KEY=value")
        value = m["value"].strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        if "\0" in value:  # no environment can hold it
            raise UsageError(f"{source} line {n}: a NUL character in the value of {m['key']}")
        out[m["key"]] = value
    return out


def read_env_file(path: Path) -> dict[str, str]:
    """The pairs in `path` ({} when it does not exist); refused when group or others can read."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return {}
    if mode & (stat.S_IRGRP | stat.S_IROTH):
        raise UsageError(f"{path} is readable by group or others and holds secrets: "
                         f"chmod 600 {path}")
    try:
        text = reading.read_text(path)  # not UTF-8: a UsageError naming the line
    except OSError as e:
        raise UsageError(f"{path}: cannot read: {e}") from None
    return parse_env(text, path)


def load_env_files(state: Path, environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Fill `environ` (os.environ) from the env files where it lacks a name; returns, for
    each name the files hold, where its value now comes from (a file or `environment`)."""
    environ = os.environ if environ is None else environ
    found: dict[str, tuple[str, Path]] = {}
    for path in env_files(state):
        found.update({k: (v, path) for k, v in read_env_file(path).items()})
    sources = {}
    for key, (value, path) in found.items():
        if environ.get(key):
            sources[key] = "environment"
        else:
            environ[key] = value
            sources[key] = str(path)
            if environ is os.environ:  # this process's: its tools' secrets from now on
                redact.FROM_ENV_FILES.add(key)
    return sources
