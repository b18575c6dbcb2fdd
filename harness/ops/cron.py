"""`run.sh cron [ROLE ...]`: crontab lines ready to paste, with absolute paths, a `cd` into the
working directory and each role's output appended to a log in the state directory."""

from __future__ import annotations

import shlex

from harness.paths import Paths
from harness.state.envfile import user_env_file

SCHEDULES = {  # staggered so a validator finds the worker's run finished
    "worker": "*/30 * * * *",
    "validator": "15,45 * * * *",
    "curator": "50 * * * *",
    "planner": "0 6 * * *",
}
TARGETS = {"worker": "next", "validator": "next"}
DEFAULT_ROLES = ("worker", "validator", "curator")


def crontab(paths: Paths, roles: tuple[str, ...] = ()) -> str:
    """The lines for `roles` (worker, validator and curator when none are named)."""
    run_sh, state = shlex.quote(str(paths.home / "run.sh")), paths.state
    lines = [f"# autonomous-harness: mission in {paths.workdir} (state {state})",
             f"# cron reads no shell profile: keep keys in {state / 'env'} or "
             f"{user_env_file()} (KEY=value, chmod 600)",
             f"# check first with: {run_sh} --state {shlex.quote(str(state))} doctor"]
    for role in roles or DEFAULT_ROLES:
        command = [role, TARGETS[role]] if role in TARGETS else [role]
        log = shlex.quote(str(state / f"cron-{role}.log"))
        line = (f"cd {shlex.quote(str(paths.workdir))} && {run_sh} --state "
                f"{shlex.quote(str(state))} {shlex.join(command)} >> {log} 2>&1")
        lines.append(f"{SCHEDULES[role]} {cron_escape(line)}")
    return "\n".join(lines)


def cron_escape(command: str) -> str:
    """`command` as a crontab line's command: cron ends the command at an unescaped `%` (the
    rest becomes its standard input) and turns `\\%` back into `%` before the shell sees it."""
    return command.replace("%", "\\%")
