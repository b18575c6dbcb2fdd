"""The commands for leaving a mission to run by itself: `loop` and `cron`."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import click

from harness.cli.options import PRESETS, not_empty, paths_of
from harness.paths import check_state

ROLE_FLAGS = ("backend", "preset", "command", "script", "model", "sandbox")


def role_options(command: click.Command) -> click.Command:
    """The flags a role run takes, to pass on to each worker and validator run."""
    for flag in reversed((
        click.Option(["--backend"],
                     type=click.Choice(["anthropic", "openai", "command", "scripted"]),
                     help="Run the worker and validator with this backend."),
        click.Option(["--preset"], type=PRESETS,
                     help="With --backend command: which agent CLI."),
        click.Option(["--command", "command_line"], metavar="CMD", callback=not_empty,
                     help="With --backend command: the command line to run."),
        click.Option(["--script"], type=click.Path(exists=True, dir_okay=False),
                     help="With --backend scripted: the YAML file of turns to replay."),
        click.Option(["--model"], callback=not_empty, help="Override the roles' model."),
        click.Option(["--sandbox"], type=click.Choice(["bwrap", "none"]),
                     help="Override the roles' sandbox."),
    )):
        command.params.insert(0, flag)
    return command


def _flags(given: dict) -> tuple[str, ...]:
    values = {**given, "command": given.get("command_line")}
    if values.get("script"):
        values["script"] = str(Path(values["script"]).resolve())
    return tuple(a for k in ROLE_FLAGS if values.get(k) for a in (f"--{k}", str(values[k])))


WEEK = 7 * 24 * 3600.0  # the longest wait a loop is given (as a recorded reset time's)
# the most slots a loop runs (each a thread, a worker process and a git worktree at once):
# beyond it, a typo (--parallel 100000) would start a process per feature of the plan
MAX_PARALLEL = 64


def _a_number(_ctx: click.Context, _param: click.Parameter, value: float) -> float:
    if value != value:  # NaN, which FloatRange lets through
        raise click.BadParameter("not a number")
    return value


@role_options
@click.command()
@click.option("--max-runs", type=click.IntRange(min=1), metavar="N",
              help="Stop after N worker and validator runs (busy and nothing-to-do answers "
                   "do not count).")
@click.option("--until", "until_text", metavar="TIME", callback=not_empty,
              help="Start no run after TIME: HH:MM (local, the next one) or an ISO-8601 time.")
@click.option("--parallel", type=click.IntRange(min=1, max=MAX_PARALLEL), default=1,
              show_default=True, metavar="N",
              help=f"N workers on N features at once, at most {MAX_PARALLEL} "
                   "(workspace: worktrees).")
@click.option("--curator-every", type=click.FloatRange(min=0, max=WEEK / 60), default=30,
              show_default=True, metavar="MINUTES", callback=_a_number,
              help="Run the curator this often (0: never), and once at the end.")
@click.option("--backoff", type=click.FloatRange(min=1, max=WEEK), default=30, show_default=True,
              metavar="SECONDS", callback=_a_number,
              help="First wait when busy (3) or the backend failed (6); doubled each time.")
@click.option("--max-backoff", type=click.FloatRange(min=1, max=WEEK), default=1800,
              show_default=True, callback=_a_number,
              metavar="SECONDS", help="Longest such wait (a recorded reset time is waited for "
                                      "in full).")
@click.pass_context
def loop(ctx: click.Context, max_runs: int | None, until_text: str | None, parallel: int,
         curator_every: float, backoff: float, max_backoff: float, **given: str | None) -> None:
    """Run the worker and the validator (and the curator) until nothing is left.

    \b
    Exit 5 when nothing is left (the normal end), 2 or 4 when a run says so,
    0 at --max-runs or --until, 128 + the signal when stopped by Ctrl-C or SIGTERM.
    """
    from harness.ops.loop import LoopOptions, run_loop
    from harness.ops.waits import parse_until

    paths = paths_of(ctx)
    check_state(paths.state)
    until = parse_until(until_text, datetime.now(timezone.utc)) if until_text else None
    options = LoopOptions(max_runs=max_runs, until=until, parallel=parallel,
                          curator_every=curator_every * 60, first_wait=backoff,
                          max_wait=max(max_backoff, backoff), role_args=_flags(given))
    code, why = run_loop(paths, options)
    click.echo(f"loop: {why} (exit {code})", err=code not in (0, 5))
    ctx.exit(code)


@role_options
@click.command()
@click.argument("roles", nargs=-1,
                type=click.Choice(["loop", "worker", "validator", "curator", "planner"]))
@click.pass_context
def cron(ctx: click.Context, roles: tuple[str, ...], **given: str | None) -> None:
    """Print crontab lines for ROLES [default: loop]; paste into crontab -e.

    The lines name the backend and preset the roles' files give (or the flags given here).
    """
    from harness.ops.cron import crontab

    paths = paths_of(ctx)
    check_state(paths.state)
    overrides = {**given, "command": given.get("command_line"),
                 "script": given.get("script") and str(Path(given["script"]).resolve())}
    overrides.pop("command_line", None)
    click.echo(crontab(paths, roles, overrides))
