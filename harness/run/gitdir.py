"""Which git repository the harness commits into: the one the mission was set up on.

An agent can write its tree, and in the shared workspace that includes `.git`: it could
swap in a repository of its own (a `.git` folder, or a worktree's `gitdir:` file naming
one), point `commondir` elsewhere, or make a folder git writes to (refs, logs, objects) a
symlink out of the repository. The harness records the repository's git folder at the
first run, before any agent acted, in `<state>/repository.json`, and checks the tree
against it before every git command it runs there; what does not match is refused
(UsageError, exit 2, naming the path).
"""

from __future__ import annotations

import json
import os
import stat
import uuid
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

from harness.errors import UsageError
from harness.state.store import atomic_write

RECORD = "repository.json"
MARK = "autonomous-harness.id"  # in the git folder: a fresh `git init` in its place lacks it
WRITTEN_DIRS = ("refs", "logs", "objects", "info", "worktrees", "modules")  # git writes there


def toplevel(tree: Path) -> Path | None:
    """The folder holding the `.git` that git would find from `tree` (no git is run)."""
    for folder in (tree, *tree.parents):
        if os.path.lexists(folder / ".git"):
            return folder
    return None


Repository = tuple[Path, str]  # the git folder where it was recorded, and its mark


def recorded(state: Path) -> Repository | None:
    """The git folder the mission was set up on and its mark, if recorded."""
    try:
        data = json.loads((state / RECORD).read_text(encoding="utf-8"))
        return Path(data["git_dir"]), str(data["id"])
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None


def record(state: Path, repo: Path) -> Repository | None:
    """Record `repo`'s git folder (a checkout the agent has not touched yet; a linked
    worktree's repository); what `recorded` gives, or None where `repo` is in none."""
    top = toplevel(repo)
    if top is None or (top / ".git").is_symlink():
        return None
    git_dir = (top / ".git").resolve()
    if not git_dir.is_dir():  # a linked worktree: its repository's (common) git folder
        try:
            git_dir = _linked(top / ".git", git_dir).parent.parent
        except (UsageError, OSError):
            return None  # a submodule, or no git folder git could use
    mark = _mark(git_dir) or _make_mark(git_dir)
    atomic_write(state / RECORD, json.dumps({"git_dir": str(git_dir), "id": mark}) + "\n")
    return git_dir, mark


def git_folder(tree: Path) -> Path | None:
    """The git folder git would use from `tree` now (a worktree's, through its `gitdir:`
    file), resolved; None where there is none to trust."""
    top = toplevel(tree)
    dot_git = top / ".git" if top is not None else None
    try:
        if dot_git is None or dot_git.is_symlink():
            return None
        return dot_git.resolve() if dot_git.is_dir() else _linked(dot_git, dot_git)
    except (UsageError, OSError):
        return None


def check(tree: Path, repository: Repository, top: Path | None,
          before: Path | None = None) -> None:
    """UsageError unless git, run in `tree`, would find its `.git` in `top` (where it found
    it before the agent acted) and use the recorded repository (by its mark: a project
    moved or copied with its `.git` stays the same repository), through the git folder it
    used then (`before`: a copy of the repository, mark and all, is not it)."""
    was, mark = repository
    found = toplevel(tree)
    if found is None or found != top:
        raise UsageError(f"{top or tree}/.git is gone or moved (git would now use "
                         f"{found or 'no repository'}/.git); the harness runs no git there "
                         "until it is restored")
    dot_git = found / ".git"
    mode = os.lstat(dot_git).st_mode
    if stat.S_ISDIR(mode) and not os.path.lexists(dot_git / "commondir"):
        used, common = dot_git, dot_git
    elif stat.S_ISREG(mode):
        used = _linked(dot_git, was)
        common = used.parent.parent
    else:
        raise _replaced(dot_git, was)
    if _mark(common) != mark or (before is not None and used.resolve() != before):
        raise _replaced(dot_git, was)
    _no_symlinks_out(used)


def _linked(dot_git: Path, was: Path) -> Path:
    """A worktree's `.git` file must name a folder under a repository's `worktrees/`."""
    text = _head(dot_git).decode("utf-8", errors="replace")
    if not text.startswith("gitdir: "):
        raise _replaced(dot_git, was)
    target = Path(text[len("gitdir: "):].strip())
    target = (dot_git.parent / target) if not target.is_absolute() else target
    if target.is_symlink() or target.resolve().parent.name != "worktrees":
        raise _replaced(dot_git, was)
    return target.resolve()


def _make_mark(git_dir: Path) -> str:
    """A new mark, or the one another run made first: runs starting together agree."""
    tmp = git_dir / f".{MARK}.{uuid.uuid4().hex}"
    tmp.write_text(uuid.uuid4().hex + "\n", encoding="utf-8")
    try:
        os.link(tmp, git_dir / MARK)  # all at once and only where none is yet
    except FileExistsError:
        pass
    finally:
        tmp.unlink()
    return _mark(git_dir) or ""


def _mark(git_dir: Path) -> str | None:
    try:
        return _head(git_dir / MARK).decode("utf-8").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def _head(path: Path, most: int = 8192) -> bytes:
    """The start of a file in a git folder the agent may have written, read in the harness's
    process: never a fifo (open() would wait for ever) or a device, never more than `most`
    bytes (a sparse 3 GB `.git` file is free to make)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a file")
        return os.read(fd, most)
    finally:
        os.close(fd)


def links_into(tree: Path, repo: Path) -> bool:
    """Whether `tree`/.git is a worktree's file naming a worktree of `repo`'s repository
    (checked before the harness runs git there: the agent may have rewritten it)."""
    top = toplevel(repo)
    if top is None or not (tree / ".git").is_file() or (tree / ".git").is_symlink():
        return False
    try:
        used = _linked(tree / ".git", (top / ".git").resolve())
    except (UsageError, OSError):
        return False
    return used.parent.parent == (top / ".git").resolve()


def _no_symlinks_out(used: Path) -> None:
    """No folder git writes to, in the git folder the tree uses, may be a symlink."""
    for name in WRITTEN_DIRS:
        top = used / name
        if top.is_symlink():
            raise _symlinked(top)
        if name in ("refs", "logs") and top.is_dir():
            for entry in entries_under(top):
                if entry.is_symlink() and entry.is_dir():
                    raise _symlinked(Path(entry.path))


def _replaced(path: Path, was: Path) -> UsageError:
    return UsageError(f"{path} is not the mission's repository (recorded at {was}, marked by "
                      f"its {MARK}): it was replaced or redirected, or --state (or "
                      "$HARNESS_STATE) names another project's mission, or --workdir another "
                      "project; the harness runs no git there. Restore it, or, if this mission "
                      f"now works in another repository on purpose, delete {RECORD} in the "
                      "state directory")


def _symlinked(path: Path) -> UsageError:
    return UsageError(f"{path} is a symlink: git would write through it, out of the "
                      "repository; the harness runs no git there until it is a folder again")


def entries_under(top: Path) -> Iterator[os.DirEntry]:
    """Every entry beneath the folder `top`, through no symlink, however deep (os.walk
    recurses: a RecursionError past ~1,000 levels an agent can make)."""
    folders = [top]
    while folders:
        try:
            with os.scandir(folders.pop()) as listing:
                entries = list(listing)
        except OSError:
            continue
        for entry in entries:
            yield entry
            with suppress(OSError):
                if entry.is_dir(follow_symlinks=False):
                    folders.append(Path(entry.path))


def waits_on(top: Path, most: int = 10, look: int = 200_000) -> list[str]:
    """What in the tree `top` (its `.git` too) git could wait on for ever when it reads it:
    a fifo or a device (an agent's `mkfifo .gitattributes`), at most `most` of them, among
    the first `look` entries; relative paths, with what each is."""
    found: list[str] = []
    for seen, entry in enumerate(entries_under(top)):
        if len(found) >= most or seen >= look:
            break
        try:
            mode = entry.stat(follow_symlinks=False).st_mode
        except OSError:
            continue
        if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
            what = "a fifo" if stat.S_ISFIFO(mode) else "a device"
            found.append(f"{Path(entry.path).relative_to(top)} ({what})")
    return found
