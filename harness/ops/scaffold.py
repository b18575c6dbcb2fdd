"""`run.sh init`: a new mission's state directory with defaults that validate."""

from __future__ import annotations

import subprocess
from pathlib import Path

from harness.errors import UsageError
from harness.run import gitdir
from harness.state.memory import MEMORY_SECTIONS, SUMMARY_SECTIONS, render_sections
from harness.state.store import atomic_write

CONFIG = """\
# Mission config for autonomous-harness. Every key is optional; commented-out values are
# the defaults.
# mission: my-project        # name used for cross-mission promotion (default: project folder)
budget_usd: 20               # dollars for the whole mission, checked before each model call:
                             # once spent, runs exit 4 and `run.sh loop` stops. Raise it here
                             # to spend more; deleting the line removes the bound (not on cron).
run_budget_usd: 3            # dollars per run, any role (a role's own `caps.dollars` in
                             # roles/<role>.yaml still holds when lower); change it here.
max_attempts: 3              # validator fails before a feature becomes `failed`
# stuck_after: 3
# prompt:                    # hard caps per prompt block (characters, lines or entries)
#   summary_chars: 4000
#   raw_entries: 20
#   progress_lines: 30
# prices:                    # $ per million tokens, by model
#   claude-sonnet-4-5: {input_tokens: 3, output_tokens: 15,
#                       cache_creation_input_tokens: 3.75, cache_read_input_tokens: 0.3}
#   "qwen2.5-coder:14b": {input_tokens: 0, output_tokens: 0}   # zeros: a free (local) model
# curator: {mode: rules, judge: auto, similarity: 75, questions: 20}
# workspace: shared          # shared: one worker or validator per working tree at a time;
#                            # worktrees: a git worktree per feature, merged on a pass
"""

SANDBOXED = """\
sandbox: bwrap               # every role's commands run confined to the project (docs/SANDBOX.md)
sandbox_network: false       # true lets them reach the network (e.g. package registries)
"""
UNSANDBOXED = """\
# RISK: bwrap cannot make a sandbox on this machine ({problem}),
# so an agent's commands can read and write all that this user can (~/.ssh, other projects,
# the harness itself). Install bubblewrap, check with `run.sh doctor`, then set bwrap.
sandbox: none
"""


def sandbox_config() -> tuple[str, str]:
    """The config's sandbox lines and what `init` says of them: bwrap wherever it works."""
    from harness.agent.sandbox import bwrap_problem

    problem = bwrap_problem()
    if problem is None:
        return SANDBOXED, "sandbox: bwrap (every role's commands run confined to the project)"
    return (UNSANDBOXED.format(problem=problem),
            f"sandbox: none, because {problem}: agents' commands are NOT confined "
            "(config.yaml says what that risks; docs/SANDBOX.md)")


SPEC = "# Specification\n\nDescribe what to build here; the planner turns it into features.json.\n"


def _in_git_repo(folder: Path) -> bool:
    try:
        result = subprocess.run(["git", "-C", str(folder), "rev-parse", "--is-inside-work-tree"],
                                capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0 and result.stdout.strip() == "true"


def _current_branch(project: Path) -> str | None:
    result = subprocess.run(["git", "-C", str(project), "symbolic-ref", "-q", "--short", "HEAD"],
                            capture_output=True, text=True, timeout=10)
    return result.stdout.strip() or None


def _git_ignore(project: Path) -> bool:
    """Add `.harness/` to the project's .gitignore; True if it is (now) ignored."""
    ignore = project / ".gitignore"
    # bytes: a .gitignore in another encoding is kept exactly as it is
    lines = ignore.read_bytes().splitlines() if ignore.exists() else []
    if not any(line.strip() in (b".harness", b".harness/", b"/.harness", b"/.harness/")
               for line in lines):
        atomic_write(ignore, b"\n".join([*lines, b".harness/"]) + b"\n")
    return True


def init_state(project: Path) -> tuple[Path, bool]:
    """Create `project/.harness`; returns it and whether it was git-ignored."""
    project = project.resolve()
    if not project.is_dir():
        raise UsageError(f"project directory {project} does not exist")
    state = project / ".harness"
    if state.exists():
        raise UsageError(f"{state} already exists; nothing changed")
    in_repo = _in_git_repo(project)
    branch = _current_branch(project) if in_repo else None
    base = (f"base_branch: {branch}         # where passed features merge (worktrees mode)\n"
            if branch else "# base_branch: main         # default: the branch checked out\n")
    files = {
        "config.yaml": CONFIG + sandbox_config()[0] + base,
        "features.json": "[]\n",
        "spec.md": SPEC,
        "raw.md": "",
        "summary.md": render_sections("Summary", {}, SUMMARY_SECTIONS),
        "MEMORY.md": render_sections("Memory", {}, MEMORY_SECTIONS),
        # ignored from inside, where no agent writes: the project's .gitignore is the agent's
        ".gitignore": "# the mission's state (keys in env, runs, memory): never committed\n*\n",
    }
    for name, text in files.items():
        atomic_write(state / name, text)
    for folder in ("memory", "ledger", "runs", "archive"):
        (state / folder).mkdir()
    ignored = _git_ignore(project) if in_repo else False
    if in_repo:
        gitdir.record(state, project)  # the repository the harness will commit into
    return state, ignored
