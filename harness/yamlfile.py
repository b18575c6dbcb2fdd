"""Reading a YAML file a person wrote: any damage is a UsageError naming the file and line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from harness.errors import UsageError

MAX_VALUES = 100_000  # values a file a person wrote may hold, its aliases expanded


def _dotted(where: tuple) -> str:
    """`a.b.0` from the linked key path `((((), "a"), "b"), 0)`."""
    keys = []
    while where:
        where, key = where
        keys.append(str(key))
    return ".".join(reversed(keys))


def check_size(data: Any, path: Path) -> Any:
    """`data` if it holds at most MAX_VALUES values once aliases are followed and no NUL
    (a "\\0" escape: no file name, command or name can hold one); an alias bomb (a billion
    copies in a few lines) or an alias inside itself is a UsageError, as is a NUL."""
    stack, count = [(data, ())], 0
    while stack:
        value, where = stack.pop()
        count += 1
        if count > MAX_VALUES:
            raise UsageError(f"{path}: more than {MAX_VALUES:,} values once its aliases "
                             "(*name) are expanded, or an alias inside its own anchor; "
                             "write the values out")
        if isinstance(value, str) and "\0" in value:
            raise UsageError(f"{path}: key '{_dotted(where) or value}': a NUL character "
                             f"(\\0) in {value[:60]!r}; remove it")
        if isinstance(value, dict):
            stack += [(k, (where, k)) for k in value]
            stack += [(v, (where, k)) for k, v in value.items()]
        elif isinstance(value, list):
            stack += [(v, (where, i)) for i, v in enumerate(value)]
    return data


def load_yaml(path: Path) -> Any:
    """The YAML in `path`; any damage (not UTF-8, a folder, too deep) is a UsageError."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{path}: file not found") from None
    except OSError as e:
        raise UsageError(f"{path}: cannot read it: {e.strerror or e}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise UsageError(f"{path} line {line}: not UTF-8 text (byte "
                         f"0x{data[e.start]:02x}); save it as UTF-8") from None
    try:
        return check_size(yaml.safe_load(text), path)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e)
        if isinstance(e, yaml.reader.ReaderError):  # a control character: its line, not offset
            where = f" line {text.count(chr(10), 0, e.position) + 1}"
            problem = problem.splitlines()[0]
        raise UsageError(f"{path}{where}: invalid YAML: {problem}") from None
    except RecursionError:
        raise UsageError(f"{path}: YAML nested too deeply to read") from None
    except ValueError as e:  # a number past Python's 4,300 digits
        raise UsageError(f"{path}: {e}") from None
