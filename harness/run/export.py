"""Identity where interactive sessions see it: `identity_export: [AGENTS.md, CLAUDE.md]` in
the mission's config keeps a managed block, between two marker comments, in those files of
the project, holding every role's promoted lessons; the curator rewrites it after each pass.

Everything outside the block stays byte for byte as the person wrote it. The file is
replaced atomically, and only where it really is inside the project: a name that is a
symlink to another file of the project writes that file (once, when two names lead to it);
one that leads out of the project is refused and left alone. The harness's own prompts
leave the block out of the docs they show (the identity shows it already), and a CLI that
reads such a file itself gets a prompt without the identity lines the block holds
(`shown_identity`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from harness.agent.beneath import relative_inside
from harness.agent.treefile import Refused, TreeFile, tree_check
from harness.config import ROLES
from harness.curator.identity import identity_lessons, provenance

START = "<!-- autonomous-harness:identity start -->"
END = "<!-- autonomous-harness:identity end -->"
MAX_BYTES = 4_000_000  # a project doc bigger than this is no doc: left alone, unread
HEADING = ("## Lessons from autonomous-harness\n\n"
           "Promoted by its curator from what its runs learned; this block is rewritten "
           "after each curator pass (edit outside it).\n")


# ---- the block: pure ----


def lesson_line(line: str) -> str | None:
    """An identity file's line as the block shows it (`- KIND: text`, no provenance), or
    None for a heading or a blank line."""
    m = provenance(line)
    if m is not None:
        return f"- {m['kind']}: {m['text']}"
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    return text if text.startswith(("- ", "* ")) else f"- {text}"


def block_text(identities: dict[str, str]) -> str:
    """The managed block (markers included, newline-ended) for each role's identity file
    text; "" when no role has a lesson."""
    parts = []
    for role, text in identities.items():
        # a lesson (from an agent's note) holding a marker must not end the block early
        lines = [shown.replace("<!--", "<! --") for line in text.splitlines()
                 if (shown := lesson_line(line))]
        if lines:
            parts.append(f"\n### {role}\n\n" + "\n".join(lines) + "\n")
    if not parts:
        return ""
    return f"{START}\n{HEADING}{''.join(parts)}{END}\n"


class BrokenBlock(ValueError):
    """A start marker with no end marker after it: where the block ends is not known, and
    what follows may be the person's."""


def find_blocks(text: str) -> list[tuple[int, int]]:
    """Where the blocks are in `text` (start, end past its end marker's line): one, or more
    where it was copied; BrokenBlock for a start marker with no end marker after it."""
    spans: list[tuple[int, int]] = []
    start, at = None, 0
    for line in text.splitlines(keepends=True):  # a marker is one alone on its line: one
        marker = line.strip()                     # in a sentence is the person's words
        if marker == START and start is None:
            start = at
        elif marker == END and start is not None:
            spans.append((start, at + len(line)))
            start = None
        at += len(line)
    if start is not None:
        raise BrokenBlock("its start marker has no end marker after it (put the end "
                          "marker back where the block ends, or remove the start marker)")
    return spans


def find_block(text: str) -> tuple[int, int] | None:
    """Where the (first) block is in `text`, or None: none, or one whose end is not known."""
    try:
        return next(iter(find_blocks(text)), None)
    except BrokenBlock:
        return None


def without_block(text: str) -> str:
    """`text` with the managed blocks cut out (as it is when a block's end is not known)."""
    try:
        spans = find_blocks(text)
    except BrokenBlock:
        return text
    for start, end in reversed(spans):
        text = text[:start] + text[end:]
    return text


def with_block(text: str, block: str) -> str:
    """`text` with its block replaced by `block` (appended after a blank line when it has
    none, the line ends it lacks added; removed when `block` is ""; copies of it removed),
    in the text's line ends; the rest is untouched. BrokenBlock when a block's end is not
    known."""
    spans = find_blocks(text)
    first = text.find("\n")
    eol = "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"  # as its first line ends
    block = block.replace("\n", eol)
    if spans:
        rest = text[spans[0][1]:]
        for start, end in reversed(spans[1:]):
            rest = rest[:start - spans[0][1]] + rest[end - spans[0][1]:]
        return text[:spans[0][0]] + block + rest
    if not block:
        return text
    ended = text.endswith(("\n\n", "\r\n\r\n"))
    gap = "" if not text or ended else eol if text.endswith("\n") else eol * 2
    return text + gap + block


def shown_identity(identity: str, docs: list[str]) -> str:
    """The identity lines a prompt shows when the agent CLI reads `docs` itself: those whose
    lesson no managed block in them holds already."""
    held = set()
    for doc in docs:
        where = find_block(doc)
        if where is not None:
            held.update(identity_lessons(doc[where[0]:where[1]]))
    if not held:
        return identity
    return "".join(line for line in identity.splitlines(keepends=True)
                   if not any(lesson in held for lesson in identity_lessons(line)))


# ---- the files: I/O ----


def read_project_file(root: Path, name: str, hidden: tuple[Path, ...] = ()) -> str | None:
    """The whole text of `name` beneath `root` (never through a symlink out of it or into
    `hidden`; a regular file only), or None if absent; OSError or Refused when it cannot be
    read."""
    try:
        fd = TreeFile(root, name, tree_check(root, name, hidden)).open(
            name, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Refused(f"{name} is not a regular file")
        if info.st_size > MAX_BYTES:
            raise Refused(f"{name} is over {MAX_BYTES // 1_000_000} MB")
        return f.read().decode("utf-8")


def export_identity(workdir: Path, identity_dir: Path, names: list[str],
                    hidden: tuple[Path, ...] = ()) -> list[str]:
    """Write the block into each of `names` in the project, never through a symlink out of
    it or into `hidden` (the state, the identity folder and the harness's home, which an
    agent's link may name); one line for each file changed or refused."""
    if not names:
        return []
    identities = {}
    for role in ROLES:
        path = identity_dir / f"{role}.md"
        if path.is_file():
            identities[role] = path.read_text(encoding="utf-8", errors="replace")
    block, root = block_text(identities), workdir.resolve()
    said, done = [], set()
    for name in names:
        real = relative_inside(root, os.path.realpath(root / name))
        if real is None:
            said.append(f"identity export: {name} leads out of {root}; left alone")
            continue
        if real in done:
            continue
        done.add(real)
        said += export_one(root, name, real, block, hidden)
    return said


def export_one(root: Path, name: str, real: str, block: str, hidden: tuple[Path, ...]
               ) -> list[str]:
    """Write the block into one file of the project; the line saying so, if any."""
    try:
        old = read_project_file(root, real, hidden)
        new = with_block(old or "", block)
    except (OSError, Refused, UnicodeDecodeError) as e:
        return [f"identity export: {root / name}: cannot read it ({e}); left alone"]
    except BrokenBlock as e:
        return [f"identity export: {root / name}: {e}; left alone"]
    if new == (old or ""):
        return []
    try:  # written beneath the project, checked as it was read
        TreeFile(root, real, tree_check(root, real, hidden)).write_text(new)
    except Refused as e:
        return [f"identity export: {root / name}: {e}; left alone"]
    return [f"identity export: lessons written to {root / name}"]


def identity_beside(identity: str, workdir: Path, docs: tuple[str, ...]) -> str:
    """`shown_identity` for the project docs an agent CLI reads itself (those it cannot
    read, or that lead out of the project, hold nothing it sees through the harness)."""
    texts = []
    for name in docs:
        try:
            texts.append(read_project_file(workdir.resolve(), name) or "")
        except (OSError, Refused, UnicodeDecodeError):
            continue
    return shown_identity(identity, texts)
