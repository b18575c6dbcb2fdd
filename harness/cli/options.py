"""What every command shares: where the state and the working directory are, given before
the command (`run.sh --state DIR worker F-001`) or after it (`run.sh worker F-001 --state DIR`)."""

from __future__ import annotations

import os

import click

from harness.names import NOTE_ROLES, ROLES, check_feature_id
from harness.paths import (
    IDENTITY_FOLDERS,
    Paths,
    check_files,
    move_checkout_identity,
    resolve_paths,
)

GLOBAL_OPTIONS = {
    "state": "State directory [$HARNESS_STATE or ./.harness]",
    "workdir": "Where the agent works [default: current directory]",
}
# the agent CLIs `--preset` names (harness/backends/cli_presets.py), for every command taking it
PRESETS = click.Choice(["claude", "codex", "gemini", "opencode", "generic"])
ROLE_CHOICE = click.Choice(ROLES)  # a filter by role (`runs`)
NOTE_ROLE_CHOICE = click.Choice(NOTE_ROLES)  # `curator --explain --role`: notes are user's too


def not_empty(_ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """An option's value that may not be empty: `--model "$MODEL"` with MODEL unset would
    otherwise run as if the option were left out."""
    if value == "":
        raise click.BadParameter("is empty: give a value, or leave the option out")
    return value


def feature_id(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """A `--feature` filter: a typo (F-1) would match nothing and say so with exit 0."""
    try:
        return None if value is None else check_feature_id(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


def paths_of(ctx: click.Context) -> Paths:
    """The paths from --state and --workdir (or their defaults); lessons an earlier version
    kept in the tool's checkout move to the identity folder first, with a message."""
    paths = resolve_paths(ctx.find_root().obj["state"], ctx.find_root().obj["workdir"])
    root = ctx.find_root()
    if not root.meta.get("identity_checked") and not os.environ.get("HARNESS_IDENTITY_DIR"):
        root.meta["identity_checked"] = True
        for message in move_checkout_identity(paths.home, paths.identity):
            click.echo(f"run.sh: {message}", err=True)
    check_files(paths.identity, IDENTITY_FOLDERS)  # status, report, doctor read it too
    return paths


def _remember(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:  # given after the command: it overrides one given before
        ctx.find_root().obj[param.name] = value


def accept_global_options(command: click.Command) -> None:
    """Let `command` take --state and --workdir too, as if given before it."""
    for name, help_text in GLOBAL_OPTIONS.items():
        if not any(p.name == name for p in command.params):
            command.params.append(click.Option([f"--{name}"], metavar="DIR", help=help_text,
                                               expose_value=False, callback=_remember))
