"""`run.sh cron [ROLE ...]`: crontab lines ready to paste, with absolute paths, a `cd` into the
working directory and each line's output appended to a log in the state directory.

The lines name the backend and preset each role will run with (from the mission's role
files, or the flags given to `cron`), so what cron runs is what `run.sh doctor` checked and
what you tested; `doctor` shows the same summary (`roles_check`) and warns when no budget
bounds what cron may spend.
"""

from __future__ import annotations

import os
import pwd
import re
import shlex
from pathlib import Path
from typing import Any

from harness.config import ROLES, MissionConfig, RoleConfig, load_role_config
from harness.errors import UsageError
from harness.ops.checks import Check
from harness.paths import Paths
from harness.run.prepare import check_flags
from harness.state.envfile import user_env_file

SCHEDULES = {  # staggered so a validator finds the worker's run finished
    "loop": "*/30 * * * *",  # a second loop on the mission exits 3 at once
    "worker": "*/30 * * * *",
    "validator": "15,45 * * * *",
    "curator": "50 * * * *",
    "planner": "0 6 * * *",
}
TARGETS = {"worker": "next", "validator": "next"}
DEFAULT_ROLES = ("loop",)
FLAG_ROLES = ("worker", "validator", "planner")  # the roles whose commands take backend flags


def role_flags(config: RoleConfig) -> list[str]:
    """`--backend B [--preset P]`: what a role runs with, as command-line flags."""
    flags = ["--backend", config.backend]
    preset = config.options.get("preset")
    if config.backend == "command" and preset and not config.options.get("command"):
        flags += ["--preset", str(preset)]
    return flags


def role_summary(config: RoleConfig) -> str:
    """`command --preset claude, model claude-sonnet-4-5`, or with the role's own command."""
    text = " ".join(role_flags(config)[1:])
    if config.backend == "command" and config.options.get("command"):
        text += f" (command {config.options['command']!s})"
    return f"{text}, model {config.model or 'the CLI default'}"


def effective_configs(paths: Paths, overrides: dict[str, Any]) -> dict[str, RoleConfig]:
    """Each role's config as a run would load it, with `cron`'s own flags over it."""
    configs = {}
    for role in ROLES:
        config, path, _ = load_role_config(role, paths.state, paths.home)
        if role in FLAG_ROLES and overrides:
            options = {k: v for k, v in overrides.items() if k in ("preset", "command")}
            config = config.model_copy(update={
                "backend": overrides.get("backend") or config.backend,
                "model": overrides.get("model") or config.model,
                "options": {**config.options, **options}})
            check_flags(overrides, config.backend, f"the {role}'s", path)
        configs[role] = config
    return configs


def _command(role: str, configs: dict[str, RoleConfig], overrides: dict[str, Any]) -> list[str]:
    """The run.sh arguments of one crontab line."""
    # the flags given to cron that role_flags (from the role's file) does not name
    model = [a for k in ("command", "script", "model") if overrides.get(k)
             for a in (f"--{k}", str(overrides[k]))]
    if role == "loop":
        worker, validator = (role_flags(configs[r]) for r in ("worker", "validator"))
        # roles of different backends each run with their own file's; the flags cron was
        # given still go to both, as the header lines say
        given = ["--preset", str(overrides["preset"])] if overrides.get("preset") else []
        return ["loop", *(worker if worker == validator else given), *model]
    target = [TARGETS[role]] if role in TARGETS else []
    return [role, *target, *(role_flags(configs[role]) + model if role in FLAG_ROLES else [])]


def crontab(paths: Paths, roles: tuple[str, ...] = (),
            overrides: dict[str, Any] | None = None) -> str:
    """The lines for `roles` (one `run.sh loop` when none are named)."""
    overrides = {k: v for k, v in (overrides or {}).items() if v}
    one_line(paths, overrides)
    run_sh, state = shlex.quote(str(paths.home / "run.sh")), paths.state
    configs = effective_configs(paths, overrides)
    lines = [f"# autonomous-harness: mission in {paths.workdir} (state {state})",
             f"# cron reads no shell profile: keep keys in {state / 'env'} or "
             f"{user_env_file()} (KEY=value, chmod 600)",
             f"# check first with: {run_sh} --state {shlex.quote(str(state))} doctor"]
    shown = [r for r in ROLES if r in ("worker", "validator", "curator")
             or r in (roles or DEFAULT_ROLES)]
    lines += [f"# {r}: {role_summary(configs[r])}" for r in shown]
    lines.append("# (from the role files; after changing one, print these lines again)")
    identity = ""
    if paths.identity != cron_identity():  # cron has no HARNESS_IDENTITY_DIR, XDG_DATA_HOME
        identity = f"HARNESS_IDENTITY_DIR={shlex.quote(str(paths.identity))} "
        lines.append(f"# cross-mission memory: {paths.identity}, as in this shell")
    start = f"cd {shlex.quote(str(paths.workdir))} && {identity}{run_sh}"
    for role in roles or DEFAULT_ROLES:
        log = shlex.quote(str(state / f"cron-{role}.log"))
        line = (f"{start} --state {shlex.quote(str(state))} "
                f"{shlex.join(_command(role, configs, overrides))} >> {log} 2>&1")
        lines.append(f"{SCHEDULES[role]} {cron_escape(line)}")
    return "\n".join(lines)


def cron_escape(command: str) -> str:
    """`command` as a crontab line's command: cron ends the command at an unescaped `%` (the
    rest becomes its standard input) and turns `\\%` back into `%` before the shell sees it.
    A `%` after a backslash (which shlex always quotes) is escaped outside the quotes: cron
    reads `\\\\%` as a backslash and the `%` that ends the command."""
    return re.sub(r"(\\?)%", lambda m: "\\'\\%'" if m[1] else "\\%", command)


def one_line(paths: Paths, overrides: dict[str, Any]) -> None:
    """A crontab entry is one line: a path or flag holding a newline cannot be in one."""
    given = [paths.workdir, paths.state, paths.home, paths.identity, *overrides.values()]
    for value in given:
        if "\n" in str(value) or "\r" in str(value):
            raise UsageError(f"cron: {str(value)!r} holds a newline, which no crontab line "
                             "can hold: move it to a folder (or pass a value) without one")


def cron_identity() -> Path:
    """The identity folder a cron job finds: the default under the user's home."""
    home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    return (home / ".local" / "share" / "autonomous-harness" / "identity").resolve()


def roles_check(paths: Paths, configs: dict[str, RoleConfig],
                mission: MissionConfig | None = None) -> Check:
    """doctor: which backend, preset and model each role will use, and from which file."""
    parts = []
    for role, config in configs.items():
        own = (paths.state / "roles" / f"{role}.yaml").is_file()
        if role == "curator" and (mission is None or mission.curator.mode == "rules"):
            judged = mission is None or mission.curator.judge == "auto"
            parts.append(f"curator: its rules, judged by {role_summary(config)} (curator.judge: "
                         "auto)" if judged else "curator: its rules, no model (curator.mode: "
                         "rules, judge: off)")
            continue
        parts.append(f"{role}: {role_summary(config)}"
                     + (f" ({paths.state / 'roles' / role}.yaml over the shipped file)"
                        if own else ""))
    return Check("roles", True, "; ".join(parts))


def budget_check(mission: MissionConfig, paths: Paths) -> Check:
    """doctor: a warning when nothing bounds what unattended runs may spend."""
    if mission.budget_usd is not None:
        return Check("budget", True, f"budget_usd: {mission.budget_usd:g} (runs stop with "
                                     "exit 4 once it is spent)")
    return Check("budget", True, "no budget_usd: a loop or cron job may spend without a bound",
                 f"set `budget_usd: 20` (dollars for the whole mission) in "
                 f"{paths.state / 'config.yaml'} before leaving it on cron", warn=True)
