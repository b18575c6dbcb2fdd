"""Reading a YAML file a person wrote: any damage is a UsageError naming the file and line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from harness.errors import UsageError


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
        return yaml.safe_load(text)
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
