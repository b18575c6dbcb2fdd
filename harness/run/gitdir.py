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


Repository = tuple[Path, tuple[int, int, str]]  # git folder; device, inode and its mark


def recorded(state: Path) -> Repository | None:
    """The git folder the mission was set up on and what identifies it, if recorded."""
    try:
        data = json.loads((state / RECORD).read_text(encoding="utf-8"))
        return Path(data["git_dir"]), (int(data["device"]), int(data["inode"]), str(data["id"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def record(state: Path, repo: Path) -> Repository | None:
    """Record `repo`'s git folder (a checkout the agent has not touched yet); what
    `recorded` gives, or None where `repo` is in no repository of its own."""
    top = toplevel(repo)
    if top is None or not (top / ".git").is_dir() or (top / ".git").is_symlink():
        return None  # a linked worktree or a submodule: git finds its repository elsewhere
    git_dir, st = (top / ".git").resolve(), os.stat(top / ".git")
    mark = _mark(git_dir) or _make_mark(git_dir)
    atomic_write(state / RECORD, json.dumps({"git_dir": str(git_dir), "device": st.st_dev,
                                             "inode": st.st_ino, "id": mark}) + "\n")
    return git_dir, (st.st_dev, st.st_ino, mark)


def check(tree: Path, repository: Repository, top: Path | None) -> None:
    """UsageError unless git, run in `tree`, would find its `.git` in `top` (where it found
    it before the agent acted) and use the recorded repository."""
    git_dir, identity = repository
    if _identity(git_dir) != identity[:2] or _mark(git_dir) != identity[2]:
        raise UsageError(f"the mission's repository {git_dir} was removed or replaced since "
                         f"it was recorded; restore it, or delete {RECORD} in the state "
                         "directory if the move was yours")
    found = toplevel(tree)
    if found is None or found != top:
        raise UsageError(f"{top or tree}/.git is gone or moved (git would now use "
                         f"{found or 'no repository'}/.git); the mission's repository is "
                         f"{git_dir}: the harness runs no git there until it is restored")
    dot_git = found / ".git"
    mode = os.lstat(dot_git).st_mode
    if stat.S_ISDIR(mode):
        used = dot_git
        if _identity(dot_git) != identity[:2] or os.path.lexists(dot_git / "commondir"):
            raise _replaced(dot_git, git_dir)
    elif stat.S_ISREG(mode):
        used = _linked(dot_git, git_dir)
    else:
        raise _replaced(dot_git, git_dir)
    _no_symlinks_out(used)


def _linked(dot_git: Path, git_dir: Path) -> Path:
    """A worktree's `.git` file must name a folder of the mission's repository's worktrees."""
    text = dot_git.read_text(encoding="utf-8", errors="replace")
    if not text.startswith("gitdir: "):
        raise _replaced(dot_git, git_dir)
    target = Path(text[len("gitdir: "):].strip())
    target = (dot_git.parent / target).resolve() if not target.is_absolute() else target
    if target.resolve().parent != git_dir / "worktrees":
        raise _replaced(dot_git, git_dir)
    return target


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
        return (git_dir / MARK).read_text(encoding="utf-8").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def links_into(tree: Path, repo: Path) -> bool:
    """Whether `tree`/.git is a worktree's file naming a worktree of `repo`'s repository
    (checked before the harness runs git there: the agent may have rewritten it)."""
    top = toplevel(repo)
    if top is None or not (tree / ".git").is_file() or (tree / ".git").is_symlink():
        return False
    try:
        _linked(tree / ".git", (top / ".git").resolve())
    except (UsageError, OSError):
        return False
    return True


def _no_symlinks_out(used: Path) -> None:
    """No folder git writes to, in the git folder the tree uses, may be a symlink."""
    for name in WRITTEN_DIRS:
        top = used / name
        if top.is_symlink():
            raise _symlinked(top)
        if name in ("refs", "logs") and top.is_dir():
            for folder, dirs, _ in os.walk(top):
                for d in dirs:
                    if os.path.islink(os.path.join(folder, d)):
                        raise _symlinked(Path(folder, d))


def _replaced(path: Path, git_dir: Path) -> UsageError:
    return UsageError(f"{path} is not the mission's repository ({git_dir}): it was replaced "
                      "or redirected, so the harness runs no git there; restore it (or, if "
                      f"the move was yours, delete the record {RECORD} in the state directory)")


def _symlinked(path: Path) -> UsageError:
    return UsageError(f"{path} is a symlink: git would write through it, out of the "
                      "repository; the harness runs no git there until it is a folder again")
