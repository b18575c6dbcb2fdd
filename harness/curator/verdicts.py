"""The judge's answers on disk: `<identity>/.judgments.log` (see `judge`).

One line per answer, appended by the pass that got it and never rewritten:
`ts TAB mission TAB role TAB kind TAB same|apart TAB key TAB other`, the keys being
`text.normalize` keys (words and spaces only); kind `-` is a question about what a role's
identity file already says (its bucket is the role alone). The file is shared by the missions of one
identity folder, like the candidate record, and read whole by every pass: it grows by a
few lines per model-mode pass.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from harness.state.store import hold_lock

LOG = ".judgments.log"
LOCK = ".judgments.lock"
Answers = dict[tuple[Any, str, str], bool]


def read(identity: Path) -> Answers:
    """Every recorded answer, (bucket, key, other) -> same; the first one stands."""
    try:
        text = (identity / LOG).read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    answers: Answers = {}
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) == 7 and fields[4] in ("same", "apart"):
            _, _, role, kind, verdict, key, other = fields
            bucket = role if kind == "-" else (role, kind)
            answers.setdefault((bucket, key, other), verdict == "same")
    return answers


def lines(answers: Answers, ts: str, mission: str) -> list[str]:
    """The log lines for `answers`."""
    return ["\t".join((ts, mission, *_columns(bucket), "same" if same else "apart", key, other))
            for (bucket, key, other), same in answers.items()]


def _columns(bucket: Any) -> tuple[str, str]:
    return (bucket, "-") if isinstance(bucket, str) else bucket


def append(identity: Path, new_lines: list[str]) -> None:
    """Append the lines not in the log yet (so a redone step adds nothing twice)."""
    with hold_lock(identity / LOCK):
        try:
            text = (identity / LOG).read_text(encoding="utf-8")
        except FileNotFoundError:
            text = ""
        known = set(text.splitlines())
        missing = [line for line in new_lines if line not in known]
        if missing:
            # a half line left by a crash must not swallow the first new one
            head = "\n" if text and not text.endswith("\n") else ""
            with open(identity / LOG, "a", encoding="utf-8") as out:
                out.write(head + "".join(line + "\n" for line in missing))
                out.flush()
                os.fsync(out.fileno())

