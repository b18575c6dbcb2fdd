"""Reading files a person, a crash or an agent may have damaged.

One helper per kind of content (text, JSON, one JSON line); each turns whatever is wrong
(bytes that are not UTF-8, a folder where a file should be, JSON nested past what the parser
can take, the wrong type at the top) into a UsageError naming the file and the fix, exit 2.
A missing file is left to the caller (FileNotFoundError): for most files it means "empty".
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, BinaryIO

from harness.errors import UsageError
from harness.state.store import get_object, sha256

TYPE_NAMES = {dict: "an object", list: "a list", str: "a string", int: "a number",
              float: "a number", bool: "true or false", type(None): "null"}


def type_name(value: object) -> str:
    """How JSON or YAML would call the type of `value`: 'a list', 'a string', ..."""
    return TYPE_NAMES.get(type(value), type(value).__name__)


def decode(data: bytes, source: str | Path) -> str:
    """`data` as UTF-8 text; UsageError naming `source` and the first bad byte's offset."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise UsageError(f"{source} line {line}: not UTF-8 text (byte "
                         f"0x{data[e.start]:02x}); save it as UTF-8") from None


INPUT_MAX = 64 << 20  # bytes of a plan given to `plan` or `import`


def read_input(file: BinaryIO, source: str) -> str:
    """The text of a plan given on the command line (a file, or - for stdin), at most
    INPUT_MAX bytes: /dev/zero or an endless pipe is refused, not read until memory runs out."""
    data = file.read(INPUT_MAX + 1)
    if len(data) > INPUT_MAX:
        raise UsageError(f"{source}: over {INPUT_MAX >> 20} MiB; no plan is that big")
    return decode(data, source)


def read_bytes(path: Path) -> bytes:
    """The bytes of `path`; FileNotFoundError if it is missing, UsageError if it is no file."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise
    except OSError as e:
        raise unreadable(path, e) from None


def check_opens(path: Path) -> None:
    """UsageError if `path` is there but cannot be opened for reading (a folder, no
    permission); a missing file is no error. It reads nothing: for a file too big to read
    ahead of the pass that streams it."""
    try:
        with open(path, "rb"):
            return
    except FileNotFoundError:
        return
    except OSError as e:
        raise unreadable(path, e) from None


def unreadable(path: Path, error: OSError) -> UsageError:
    """What a file that is there but cannot be read is to a person: which one, and why."""
    if isinstance(error, IsADirectoryError):
        return UsageError(f"{path} is a folder, not a file; move it away")
    return UsageError(f"{path}: cannot read it: {error.strerror or error}")


def read_text(path: Path) -> str:
    """The UTF-8 text of `path`; FileNotFoundError if it is missing, else UsageError."""
    return decode(read_bytes(path), path)


def parse_json(text: str | bytes, source: str | Path) -> Any:
    """Parsed JSON; a syntax error names the line and column, deep nesting says so."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"{source} line {e.lineno} column {e.colno}: {e.msg}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{source}: not UTF-8 text; save it as UTF-8") from None
    except ValueError as e:  # a number past Python's 4,300 digits
        raise UsageError(f"{source}: {e}") from None
    except RecursionError:
        raise UsageError(f"{source}: JSON nested too deeply to read") from None


def read_json(path: Path) -> Any:
    """The JSON in `path`; FileNotFoundError if it is missing, else UsageError when damaged."""
    return parse_json(read_text(path), path)


def parse_json_line(line: str | bytes) -> dict[str, Any] | None:
    """One JSON-lines record as a dict; None when the line is not a JSON object (damaged)."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError included
        return None
    return value if isinstance(value, dict) else None


def check_types(data: dict[str, Any], types: dict[str, tuple[type, ...]],
                source: str | Path) -> None:
    """UsageError naming `source` and the first key of `data` whose value has a wrong type."""
    for key, allowed in types.items():
        if key not in data:
            continue
        value = data[key]
        if isinstance(value, bool) and bool not in allowed:
            ok = False  # JSON's true is no count
        else:
            ok = isinstance(value, allowed)
        if not ok:
            wanted = " or ".join(dict.fromkeys(TYPE_NAMES.get(t, t.__name__) for t in allowed))
            raise UsageError(f"{source}: key '{key}': expected {wanted}, "
                             f"found {type_name(value)}")


def read_json_object(path: Path) -> dict[str, Any] | None:
    """The JSON object in `path`; None if it is missing; UsageError if it is anything else."""
    try:
        data = read_json(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: expected a JSON object, found {type_name(data)}")
    return data


def read_object(state: Path, digest: str) -> str:
    """The text stored under `digest` in `<state>/objects/`, checked against its hash;
    FileNotFoundError if it is missing, UsageError if it is damaged."""
    if not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise UsageError(f"{digest!r} is not a sha256 of a stored object")
    data = get_object(state, digest)
    path = state / "objects" / digest[:2] / digest
    if sha256(data) != digest:
        raise UsageError(f"{path}: damaged (its content no longer has that hash); the run "
                         "cannot be rebuilt")
    return decode(data, path)
