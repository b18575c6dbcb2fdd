"""Identity files bounded to what a prompt shows: past the bound the weakest promoted lines
move word for word to the role's archive, where a judge looks a due lesson up again."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from harness.curator.judge import Judgments
from harness.curator.matching import LessonIndex
from harness.curator.text import normalize
from harness.state import reading
from harness.state.store import append_lines, atomic_write, read_head, read_tail

ARCHIVE = "archive"
_PROVENANCE = re.compile(r" \[promoted \d{4}-\d\d-\d\d;[^\[\]]*\]$")
_KIND_PREFIX = re.compile(r"^(?:TRICK|GOTCHA|DECISION|FAIL|FORGOT): ")
_PROMOTED = re.compile(
    r"^- (?P<kind>[A-Z]+): (?P<text>.*) \[promoted \d{4}-\d\d-\d\d; seen (?P<count>\d+)x "
    r"(?:(?P<first>\d{4}-\d\d-\d\d)\.\.)?(?P<last>\d{4}-\d\d-\d\d); "
    r"missions: (?P<missions>[^;\]]*); features: (?P<features>[^;\]]*)"
    r"(?:; runs: (?P<runs>[^\]]*))?\]$")


def provenance(line: str) -> re.Match[str] | None:
    """A promoted line's parts (`_PROMOTED`'s groups), or None for a line a person wrote."""
    return _PROMOTED.match(line.rstrip("\n"))


def listed_values(field: str | None) -> tuple[list[str], bool]:
    """A provenance list's values, and whether it was cut short (`, ...`)."""
    values = (field or "").split(", ")
    return [v for v in values if v and v != "..."], "..." in values


def strength(line: str) -> tuple[int, int, int, str] | None:
    """A promoted line's missions, features (`...` counts one), notes, last day; else None."""
    if (m := provenance(line)) is None:
        return None
    missions, features = (len(values) + cut for values, cut in
                          map(listed_values, m.group("missions", "features")))
    return missions, features, int(m["count"]), m["last"]


def archive_path(identity: Path, role: str) -> Path:
    return identity / ARCHIVE / f"{role}.md"


def bound_role_file(identity: Path, role: str, bound: int) -> int:
    """Keep `identity/<role>.md` within `bound`, moving the weakest promoted lines; how many."""
    path = identity / f"{role}.md"
    try:
        if path.stat().st_size <= bound:  # characters never outnumber bytes
            return 0
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    except FileNotFoundError:
        return 0
    strengths = [strength(line) for line in lines]
    keep = {i for i, s in enumerate(strengths) if s is None}  # a person's lines never move
    room = bound - sum(len(lines[i]) for i in keep)
    # the strongest promoted lines stay while they fit; of equals, the newer
    for _, i in sorted(((s, i) for i, s in enumerate(strengths) if s is not None), reverse=True):
        if len(lines[i]) <= room:
            room -= len(lines[i])
            keep.add(i)
    moving = [line.rstrip("\n") for i, line in enumerate(lines) if i not in keep]
    if not moving:
        return 0
    archive = archive_path(identity, role)
    archive.parent.mkdir(parents=True, exist_ok=True)
    # safe to redo: a crashed move's lines are at the end, and the rest is not read
    there = set(read_tail(archive, len(moving)))
    heading = "" if there else f"# {role}: lessons moved out of identity/{role}.md for room\n\n"
    added = "".join(f"{line}\n" for line in moving if line not in there)
    append_lines(archive, [(heading + added).encode()], sync=True)
    # a line leaves the role file only once it is in the archive
    atomic_write(path, "".join(line for i, line in enumerate(lines) if i in keep))
    return len(moving)


def bound_identity(identity: Path, bound: int) -> int:
    """`bound_role_file` for every role file; how many lines moved in all."""
    return sum(bound_role_file(identity, p.stem, bound) for p in sorted(identity.glob("*.md")))


def check_role_files(identity: Path) -> None:
    """UsageError naming the first role file not UTF-8 text: before a pass changes anything."""
    for path in sorted(identity.glob("*.md")) if identity.is_dir() else []:
        reading.read_text(path)


def identity_lessons(text: str) -> Iterable[str]:
    """The lesson text of each line of an identity file, provenance and kind stripped."""
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            line = _PROVENANCE.sub("", line.removeprefix("- ").removeprefix("* "))
            yield _KIND_PREFIX.sub("", line)


def archive_bucket(role: str, kind: str) -> str:
    """The bucket of `role`'s archived `kind` lines (about identity: `judge.about_identity`)."""
    return f"{ARCHIVE}/{role}/{kind}"


def role_of(bucket: str) -> str:
    """The role of an identity question's bucket: `<role>` or `archive_bucket`'s."""
    return bucket.split("/")[1] if "/" in bucket else bucket


def identity_file(bucket: str) -> str:
    """The file an identity question's line is in: `identity/<role>.md`, or the archive's."""
    return f"identity/{ARCHIVE}/{role_of(bucket)}.md" if "/" in bucket else f"identity/{bucket}.md"


class IdentityIndex:
    """What each role's identity file says, in any words; with a judge, its archive's too."""

    def __init__(self, similarity: float, *, judge: Judgments | None = None,
                 folder: Path | None = None) -> None:
        # a lesson in identity in other words is the costlier mistake: a swap is no refusal,
        # and without a judge to tell, a lesson that may be a line in other words waits
        self._index = LessonIndex(similarity, judge=judge, sure=False, near=judge is None)
        self._lines: list[str] = []  # indexed lesson -> the line that says it
        self._folder = None if judge is None else folder  # whose archive lookups read
        self._archives_read: set[str] = set()

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
        """The line an indexed lesson came from (a `judge.Question`'s other_cluster)."""
        return self._lines[number]

    def line_of(self, bucket: str, lesson: str) -> str | None:
        """The line of `bucket` (a role's identity) that says this lesson, in any words."""
        if not self._index.has(bucket):
            return None  # an empty identity file: spare normalising every due lesson
        hit = self._index.find(bucket, normalize(lesson), ask=True)  # if there is a judge
        return None if hit is None else self._lines[hit]

    def archived_line_of(self, role: str, kind: str, lesson: str) -> str | None:
        """The `kind` line of `role`'s archive that says this lesson, or None. Only with a judge:
        the rules kept the lesson apart from the one promoted then, so from its line too."""
        if self._folder is None:
            return None
        bucket, prefix = archive_bucket(role, kind), f"- {kind}: "
        if bucket not in self._archives_read:  # read once a pass
            self._archives_read.add(bucket)
            text = read_head(archive_path(self._folder, role), -1, encoding="utf-8") or ""
            self.add_text(bucket, "\n".join(ln for ln in text.split("\n") if ln.startswith(prefix)))
        return self.line_of(bucket, lesson)
