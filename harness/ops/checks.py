"""A doctor's findings: one Check each, printed one line apiece, and the exit code they make."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from harness import platform
from harness.errors import DONE, USAGE

PROBLEM = re.compile(r"^FAIL  (?P<name>.+?): (?P<detail>.*)$")  # a failed check, as printed
FIX_PREFIX = "      fix: "


@dataclass
class Check:
    """One finding; `warn` marks an ok check that still deserves attention."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    warn: bool = False


def attempt(name: str, fix: str, describe: Callable[[], str]) -> Check:
    """A passing check with `describe()` as its detail, or a failing one with the error."""
    try:
        return Check(name, True, describe())
    except Exception as e:  # a doctor reports whatever breaks; it must not crash on it
        return Check(name, False, str(e) or type(e).__name__, fix)


def platform_check() -> Check:
    """What this system gives: on Linux, everything; elsewhere the sandbox is off."""
    note = platform.sandbox_note()
    if note is None:
        return Check("platform", True, "Linux: processes stop with their run; bwrap can "
                                       "sandbox a role where installed")
    return Check("platform", True, note, "run unattended roles in a Linux VM or container "
                 "if they must be sandboxed", warn=True)


def format_checks(checks: list[Check]) -> str:
    """One line per check (`ok`, `warn` or `FAIL`), a fix under each that needs one, a total."""
    lines = []
    for c in checks:
        mark = "FAIL" if not c.ok else "warn" if c.warn else "ok  "
        lines.append(f"{mark}  {c.name}: {' '.join(c.detail.split())}")
        if c.fix and (c.warn or not c.ok):
            lines.append(FIX_PREFIX + " ".join(c.fix.split()))
    failed = sum(not c.ok for c in checks)
    lines.append(f"{failed} problem(s) to fix" if failed else "all checks passed")
    return "\n".join(lines)


def doctor_exit_code(checks: list[Check]) -> int:
    """0 when every check passed (warnings allowed), else 2: a usage or state error."""
    return DONE if all(c.ok for c in checks) else USAGE
