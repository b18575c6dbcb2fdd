"""Identity files bounded to what a prompt shows: `identity/<role>.md` holds at most
`bound` characters, and every prompt of the role shows all of it.

When promotions would pass the bound, the promoted lines rank by their evidence (the
missions, then the distinct workers (features) and the notes behind them, then how
recently the lesson was seen, from the provenance each line carries); the weakest move,
verbatim, to `identity/archive/<role>.md`, and come back if the lesson recurs (a due
lesson that identity does not hold is promoted again, its evidence merged). Lines a
person wrote (no `[promoted ...]` provenance) never move. Nothing is lost: a line leaves
the role file only once it is in the archive.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from harness.curator.judge import Judgments
from harness.curator.matching import LessonIndex
from harness.curator.text import normalize
from harness.state import reading
from harness.state.store import atomic_write

ARCHIVE = "archive"
_PROVENANCE = re.compile(r" \[promoted \d{4}-\d\d-\d\d;[^\[\]]*\]$")
_KIND_PREFIX = re.compile(r"^(?:TRICK|GOTCHA|DECISION|FAIL|FORGOT): ")
_PROMOTED = re.compile(
    r"^- (?P<kind>[A-Z]+): (?P<text>.*) \[promoted \d{4}-\d\d-\d\d; seen (?P<count>\d+)x "
    r"(?:(?P<first>\d{4}-\d\d-\d\d)\.\.)?(?P<last>\d{4}-\d\d-\d\d); "
    r"missions: (?P<missions>[^;\]]*); features: (?P<features>[^;\]]*)"
    r"(?:; runs: (?P<runs>[^\]]*))?\]$")


Strength = tuple[int, int, int, str]  # missions, features, notes, last seen


def provenance(line: str) -> re.Match[str] | None:
    """A promoted line's parts: kind, text, count, first (None when seen on one day), last,
    missions, features and runs (None when not listed), each list as the line shows it;
    None for a line a person wrote."""
    return _PROMOTED.match(line.rstrip("\n"))


def strength(line: str) -> Strength | None:
    """How much evidence a promoted line carries (missions, features, notes, last seen), or
    None for a line a person wrote. A list cut short (`, ...`) counts one more."""
    m = provenance(line)
    if m is None:
        return None

    def listed(field: str) -> int:
        values, cut = listed_values(m[field])
        return len(values) + cut

    return listed("missions"), listed("features"), int(m["count"]), m["last"]


def listed_values(field: str | None) -> tuple[list[str], bool]:
    """A provenance list's values (`provenance`), and whether it was cut short (`, ...`)."""
    values = (field or "").split(", ")
    return [v for v in values if v and v != "..."], "..." in values


def kept_lines(rows: list[tuple[int, Strength | None]], bound: int) -> set[int]:
    """Which promoted lines stay, given each line's (length, strength) in file order: the
    strongest that fit in what hand-written lines leave of `bound` (ties: the newer)."""
    room = bound - sum(length for length, s in rows if s is None)
    keep: set[int] = set()
    for _, i in sorted(((s, i) for i, (_, s) in enumerate(rows) if s is not None),
                       reverse=True):
        if rows[i][0] <= room:
            room -= rows[i][0]
            keep.add(i)
    return keep


def split_to_bound(text: str, bound: int) -> tuple[str, list[str]]:
    """The file's text within `bound` characters, and the promoted lines that must leave it.
    Hand-written lines all stay."""
    if len(text) <= bound:
        return text, []
    lines = text.splitlines(keepends=True)
    strengths = [strength(line) for line in lines]
    keep = kept_lines([(len(line), s) for line, s in zip(lines, strengths, strict=True)], bound)
    stays = [s is None or i in keep for i, s in enumerate(strengths)]
    return ("".join(line for line, ok in zip(lines, stays, strict=True) if ok),
            [line.rstrip("\n") for line, ok in zip(lines, stays, strict=True) if not ok])


def archive_path(identity: Path, role: str) -> Path:
    return identity / ARCHIVE / f"{role}.md"


def bound_role_file(identity: Path, role: str, bound: int) -> int:
    """Keep `identity/<role>.md` within `bound`, the weakest lines moved to the archive;
    how many moved. Read twice as a stream: after a first big run the file may hold tens
    of thousands of promotions, nearly all of them about to move. Safe to redo: a line
    already in the archive is not written twice."""
    path = identity / f"{role}.md"
    try:
        if path.stat().st_size <= bound:  # characters never outnumber bytes
            return 0
        with open(path, encoding="utf-8") as f:
            rows = [(len(line), strength(line), hash(line.rstrip("\n"))) for line in f]
    except FileNotFoundError:
        return 0
    keep = kept_lines([(length, s) for length, s, _ in rows], bound)
    moving = [i for i, (_, s, _) in enumerate(rows) if s is not None and i not in keep]
    if not moving:
        return 0
    archive = archive_path(identity, role)
    there = _archived(archive, {rows[i][2] for i in moving}, sum(rows[i][0] for i in moving))
    moving_set = set(moving)
    kept: list[str] = []
    archive.parent.mkdir(parents=True, exist_ok=True)
    with open(path, encoding="utf-8") as f, open(archive, "a", encoding="utf-8") as out:
        if out.tell() == 0:
            out.write(f"# {role}: lessons moved out of identity/{role}.md for room\n\n")
        for i, line in enumerate(f):
            if i not in moving_set:
                kept.append(line)
            elif rows[i][2] not in there:
                out.write(line if line.endswith("\n") else line + "\n")
        out.flush()
        os.fsync(out.fileno())
    atomic_write(path, "".join(kept))
    return len(moving)


def bound_identity(identity: Path, bound: int) -> int:
    """`bound_role_file` for every role file; how many lines moved in all."""
    return sum(bound_role_file(identity, p.stem, bound) for p in sorted(identity.glob("*.md")))


def check_role_files(identity: Path) -> None:
    """UsageError naming the first `<identity>/<role>.md` that is not UTF-8 text (or is a
    folder): checked before a pass, so a damaged one stops it with nothing changed."""
    for path in sorted(identity.glob("*.md")) if identity.is_dir() else []:
        reading.read_text(path)


def _archived(archive: Path, wanted: set[int], chars: int) -> set[int]:
    """Which of the `wanted` line hashes the archive holds already: a redo after a crash,
    whose lines (`chars` characters at most) are the archive's last. Only that tail is
    read: the archive grows with every promotion ever made."""
    try:
        with open(archive, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - 4 * chars - 1))  # UTF-8: up to 4 bytes a character
            tail = f.read().decode("utf-8", "replace").split("\n")[1:]
    except FileNotFoundError:
        return set()
    return {h for line in tail if (h := hash(line)) in wanted}


def identity_lessons(text: str) -> Iterable[str]:
    """The lesson text of each line of an identity file, provenance and kind stripped."""
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        line = _PROVENANCE.sub("", line.removeprefix("- ").removeprefix("* "))
        yield _KIND_PREFIX.sub("", line)


def archive_bucket(role: str, kind: str) -> str:
    """The index's bucket for the `kind` lines of `role`'s archive: a judge's questions about
    them are about identity (`judge.about_identity`)."""
    return f"{ARCHIVE}/{role}/{kind}"


def identity_file(bucket: str) -> str:
    """The file an identity question's line is in: `identity/<role>.md`, or the archive's."""
    parts = bucket.split("/")
    return f"identity/{ARCHIVE}/{parts[1]}.md" if len(parts) > 1 else f"identity/{bucket}.md"


def role_of(bucket: str) -> str:
    """The role of an identity question's bucket (see `identity_file`)."""
    parts = bucket.split("/")
    return parts[1] if len(parts) > 1 else bucket


class IdentityIndex:
    """What each role's identity file already says, to refuse a lesson in other words; and
    (given `archive`, (role, lesson) -> archived lines that may say it) which archived line
    says a lesson."""

    def __init__(self, similarity: float, *, judge: Judgments | None = None,
                 archive: Callable[[str, str], list[str]] | None = None) -> None:
        # a lesson in identity in other words is the costlier mistake: a swap is no refusal
        self._index = LessonIndex(similarity, judge=judge, sure=False)
        self.judged = judge is not None  # asks it when looking a lesson up
        self._lines: list[str] = []  # indexed lesson -> the line that says it
        self._archive = archive
        self._archived: set[str] = set()  # archived lines indexed

    def add_text(self, role: str, text: str) -> None:
        """Index every line of `role`'s identity file."""
        for line in text.splitlines():
            for lesson in identity_lessons(line):
                self.add(role, lesson, line.strip())

    def add(self, role: str, lesson: str, line: str = "") -> None:
        """Index `lesson` as said by `line` of `role`'s identity."""
        self._index.add(role, normalize(lesson), len(self._lines))
        self._lines.append(line)

    def knows(self, role: str, lesson: str) -> bool:
        """Whether `role`'s identity already holds this lesson, in any words."""
        return self.line_of(role, lesson) is not None

    def line(self, number: int) -> str:
        """The line an indexed lesson came from, by its number (a `judge.Question`'s
        other_cluster)."""
        return self._lines[number]

    def line_of(self, role: str, lesson: str) -> str | None:
        """The line of `role`'s identity that says this lesson, in any words, or None."""
        if not self._index.has(role):
            return None  # an empty identity file: spare normalising every due lesson
        hit = self._index.find(role, normalize(lesson), self.judged)
        return None if hit is None else self._lines[hit]

    def archived_line_of(self, role: str, kind: str, lesson: str) -> str | None:
        """The `kind` line of `role`'s archive that says this lesson, in any words, or None.
        Of the archive, only the lines `archive` finds for the lesson are looked at
        (`archived.ArchiveSearch`); of another kind, none: a lesson comes back as it was.

        Only with a judge: a due lesson is a cluster the rules did not join to the one
        promoted before, and they would not join it to that one's line either (on the
        development corpora, the rules-only figures are the same with the archive or
        without).
        """
        if not self.judged or self._archive is None:
            return None
        bucket = archive_bucket(role, kind)
        for line in self._archive(role, lesson):
            if line not in self._archived and line.startswith(f"- {kind}: "):
                self._archived.add(line)
                for text in identity_lessons(line):
                    self.add(bucket, text, line)
        if not self._index.has(bucket):
            return None
        hit = self._index.find(bucket, normalize(lesson), self.judged)
        return None if hit is None else self._lines[hit]
