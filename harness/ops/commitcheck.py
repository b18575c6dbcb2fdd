"""`doctor`'s word on the commit policy (harness/run/commits.py): whether worker runs can
commit here, found as a run would find it before it starts, reading only."""

from __future__ import annotations

from harness.config import MissionConfig
from harness.errors import UsageError
from harness.ops.checks import Check
from harness.paths import Paths
from harness.run import commits


def commit_check(paths: Paths, mission: MissionConfig) -> Check:
    """No git, no repository or a detached HEAD fails as a run would (exit 2), naming the
    way out; `commit: false` says that runs commit nothing."""
    if not mission.commit and mission.workspace == "shared":
        return Check("commits", True, "off (commit: false in config.yaml): worker runs "
                                      "commit nothing")
    try:
        commits.require_git(paths, mission)
    except UsageError as e:
        return Check("commits", False, str(e), "as the message says")
    where = "its feature's branch" if mission.workspace == "worktrees" else "the checked-out branch"
    return Check("commits", True, f"each worker run commits its own changes on {where}; a "
                                  "tree holding changes the harness did not make is refused "
                                  "(exit 3, docs/commits.md)")
