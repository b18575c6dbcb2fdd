"""Ids and names as they enter the harness (a plan, an import, a note, the environment, the
command line): checked once there, so no later path, lock or raw.md line can hold a newline,
a control byte or a digit that only Python's `\\d` calls one.

Pure and imported by `note`, which must start fast: `re` only. Errors are ValueError; each
caller says where the value came from and turns it into exit 2.
"""

from __future__ import annotations

import re

# config.ROLES, repeated for `note`, which cannot wait for config's imports (a test keeps
# the two the same)
ROLES = ("planner", "worker", "validator", "curator")
NOTE_ROLES = (*ROLES, "user")  # `user`: a person noting by hand

# fullmatch only: `$` would let a trailing newline through. ASCII digits, at most 9: an id
# names files, and Arabic-Indic digits (which `\d` takes) could never be typed back.
FEATURE_ID = re.compile(r"F-[0-9]{3,9}")
ROLE_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")
RUN_ID_MAX = 128
RUN_ID = re.compile(rf"[A-Za-z0-9_.-]{{1,{RUN_ID_MAX}}}")
# C0 and C1 control characters and DEL, whitespace ones included (callers fold those first)
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def shown(value: str, limit: int = 40) -> str:
    """`value` as a message shows it: quoted, escaped, cut."""
    text = repr(value[:limit])
    return text + (f" (and {len(value) - limit} more characters)" if len(value) > limit else "")


def check_feature_id(fid: str, *, dash: bool = False) -> str:
    """`fid` if it is F- and 3 to 9 ASCII digits (or `-` when `dash`), else ValueError."""
    if (dash and fid == "-") or FEATURE_ID.fullmatch(fid):
        return fid
    raise ValueError(f"bad feature id {shown(fid)} does not match F- and 3 to 9 digits "
                     f"0-9 (e.g. F-001{', or -' if dash else ''})")


def check_role(role: str, known: tuple[str, ...] = NOTE_ROLES) -> str:
    """`role` if it is one of `known`, else ValueError."""
    if role in known:
        return role
    raise ValueError(f"unknown role {shown(role)}; roles are {', '.join(known)}")


def check_run_id(run: str) -> str:
    """`run` if it is a run id (letters, digits, `_.-`, at most 128), else ValueError."""
    if RUN_ID.fullmatch(run):
        return run
    raise ValueError(f"bad run id {shown(run)}; expected letters, digits, '_', '.', '-'")


def escape_controls(text: str) -> str:
    """`text` with each control character written as a visible `\\xNN`."""
    if CONTROL.search(text) is None:
        return text
    return CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


# C0 controls but tab and newline, DEL and C1: what could drive the person's terminal
TERMINAL_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """`text` with each control character but newline and tab as a visible `\\u00XX` (valid
    in a JSON string too): text an agent wrote must not drive the person's terminal."""
    return TERMINAL_CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
