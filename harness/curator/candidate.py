"""Kinds of notes, and the candidate record's line: one promotable note as it is recorded
beside the identity files (`record`), written by the raw.md pass (`scan`)."""

from __future__ import annotations

import sys
from typing import NamedTuple

from harness.state.memory import TIME, real_day

LESSON_KINDS = ("TRICK", "GOTCHA", "FAIL", "FORGOT")
PROMOTABLE = ("TRICK", "FAIL", "FORGOT")


class Candidate(NamedTuple):
    """One promotable note as recorded beside the identity files."""

    ts: str
    mission: str
    role: str
    kind: str
    feature: str
    run: str | None
    text: str

    def line(self, tag: str) -> str:
        """The candidate record line, without the newline; `tag` is `batch:seq`."""
        return "\t".join((tag, self.ts, self.mission, self.role, self.kind, self.feature,
                          self.run or "-", self.text))


def mission_token(mission: str) -> str:
    """The mission's name as one token for the tab-separated record, whitespace runs made
    `_` (interned: lessons keep it)."""
    return sys.intern("_".join(mission.split()) or "-")


def parse_candidate(line: str) -> tuple[str, int, Candidate] | None:
    """(batch, seq, candidate) from a record line; None when the line is malformed."""
    parts = line.rstrip("\n").split("\t", 7)
    if len(parts) != 8 or parts[4] not in PROMOTABLE or not parts[7]:
        return None
    if not TIME.fullmatch(parts[1]) or not real_day(parts[1]):
        return None  # a hand-damaged line: no lesson may rank by a day the calendar lacks
    batch, _, seq = parts[0].rpartition(":")
    if not batch or not seq.isdigit():
        return None
    run = None if parts[6] == "-" else parts[6]
    return batch, int(seq), Candidate(parts[1], sys.intern(parts[2]), sys.intern(parts[3]),
                                      sys.intern(parts[4]), sys.intern(parts[5]), run, parts[7])
