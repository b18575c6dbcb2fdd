"""The click CLI: parses arguments, calls the package, prints, and exits with the contract's code.

Typed errors from inside become one line on stderr and their exit code here.
(`note` is parsed in harness/cli/note.py so that it starts fast; see harness/cli/entry.py;
the commands that look at records are in harness/cli/look.py.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from harness.cli.demo import demo
from harness.cli.look import reconstruct, report, runs, show, status, summary, watch
from harness.cli.options import (
    GLOBAL_OPTIONS,
    NOTE_ROLE_CHOICE,
    PRESETS,
    accept_global_options,
    not_empty,
    paths_of,
)
from harness.cli.plans import export, import_, import_notes
from harness.cli.steer import answer, guide
from harness.cli.unattended import cron, loop
from harness.errors import USAGE, GitFailed, HarnessError, UsageError, file_error
from harness.paths import check_state


class HarnessGroup(click.Group):
    """Turns HarnessError into `run.sh: message` on stderr and the error's exit code, and an
    OSError on a named file into exit 2 naming it."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except HarnessError as e:
            click.echo(f"run.sh: {e}", err=True)
            ctx.exit(e.exit_code)
        except GitFailed as e:  # a repository git cannot work in (an agent may break .git)
            click.echo(f"run.sh: {e}", err=True)
            ctx.exit(USAGE)
        except OSError as e:  # a file the harness cannot read or write: say which
            message = file_error(e)
            if message is None:
                raise
            click.echo(f"run.sh: {message}", err=True)
            ctx.exit(USAGE)


@click.group(cls=HarnessGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--state", metavar="DIR", help=GLOBAL_OPTIONS["state"])
@click.option("--workdir", metavar="DIR", help=GLOBAL_OPTIONS["workdir"])
@click.pass_context
def cli(ctx: click.Context, state: str | None, workdir: str | None) -> None:
    """autonomous-harness: run one role once, record everything, exit.

    \b
    Exit codes: 0 done, 1 task failed, 2 usage or state error, 3 busy,
    4 budget exhausted, 5 nothing to do, 6 backend error, 7 blocked.
    """
    ctx.obj = {"state": state, "workdir": workdir}


# ---- init ----


@cli.command()
@click.argument("project_dir", default=".", type=click.Path(file_okay=False))
@click.pass_context
def init(ctx: click.Context, project_dir: str) -> None:
    """Create PROJECT_DIR/.harness with a config, an empty plan and empty memory."""
    from harness.ops.scaffold import init_state, sandbox_config

    given = [f"--{k}" for k in ("state", "workdir") if ctx.find_root().obj[k] is not None]
    if given:  # it would make ./.harness and leave the folder named unmade
        raise UsageError(f"init makes PROJECT_DIR/.harness and takes no {given[0]}: give "
                         "the project's folder as PROJECT_DIR")

    state, ignored = init_state(Path(project_dir))
    click.echo(f"initialised {state}" + (" (git-ignored)" if ignored else ""))
    click.echo(sandbox_config()[1])


# ---- role runs ----


class _Unshown(click.Argument):
    """An argument kept out of the usage line: the planner's, only there to say that it
    takes no feature id."""

    def get_usage_pieces(self, ctx: click.Context) -> list[str]:
        return []


def _role_command(role: str, doc: str) -> click.Command:
    @click.command(name=role, help=doc)
    @click.argument("target", metavar="FEATURE_ID|next", required=role != "planner",
                    cls=_Unshown if role == "planner" else click.Argument)
    @click.option("--dry-run", is_flag=True, help="Render and record the prompt; call no model.")
    @click.option("--backend", type=click.Choice(["anthropic", "openai", "command", "scripted"]),
                  help="Override the role's backend.")
    @click.option("--preset", type=PRESETS,
                  help="With --backend command: which agent CLI.")
    @click.option("--command", "command_line", metavar="CMD", callback=not_empty,
                  help="With --backend command: the command line to run.")
    @click.option("--script", type=click.Path(exists=True, dir_okay=False),
                  help="With --backend scripted: the YAML file of turns to replay.")
    @click.option("--model", callback=not_empty, help="Override the role's model.")
    @click.option("--sandbox", type=click.Choice(["bwrap", "none"]),
                  help="Override the role's sandbox for the shell, verify and an agent CLI.")
    @click.pass_context
    def command(ctx: click.Context, target: str | None, dry_run: bool, backend: str | None,
                preset: str | None, command_line: str | None, script: str | None,
                model: str | None, sandbox: str | None) -> None:
        from harness.ops.status import state_warnings
        from harness.run.runner import run_role

        options = {k: v for k, v in (("preset", preset), ("command", command_line),
                                     ("script", script and str(Path(script).resolve())),
                                     ("model", model)) if v}
        paths = paths_of(ctx)
        if paths.state.is_dir():
            for warning in state_warnings(check_state(paths.state)):
                click.echo(f"run.sh: warning: {warning}", err=True)
        result = run_role(paths, role, target, dry_run=dry_run, backend=backend,
                          backend_options=options, sandbox=sandbox)
        from harness.state.redact import redact  # as every record is (a cron log keeps it)

        click.echo(redact(result.message), err=result.exit_code != 0)
        ctx.exit(result.exit_code)

    return command


cli.add_command(_role_command("worker", "Run the worker on one feature (or the next pending)."))
cli.add_command(_role_command("validator", "Validate one feature (or the next in progress)."))
cli.add_command(_role_command("planner", "Run the planner on spec.md and the current plan."))


@cli.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
             add_help_option=False)
@click.pass_context
def note(ctx: click.Context) -> None:
    """Append a note to raw.md: note KIND TEXT (or note --file SLUG). See note --help."""
    from harness.cli.note import note_main  # reached only when entry.py's fast path was bypassed

    global_options = [a for k in ("state", "workdir") if ctx.obj[k] for a in (f"--{k}", ctx.obj[k])]
    ctx.exit(note_main(global_options + ctx.args))


@cli.command()
@click.option("--dry-run", is_flag=True,
              help="Print what would change: diffs of summary.md, MEMORY.md and identity, "
                   "line counts of the archive's and the candidate record's appends.")
@click.option("--explain", "text", metavar="TEXT",
              help="Say why the lesson TEXT was promoted to identity, or why not; change nothing.")
@click.option("--role", type=NOTE_ROLE_CHOICE, help="With --explain: only this role's lessons.")
@click.option("--kind", type=click.Choice(["TRICK", "FAIL", "FORGOT", "GOTCHA", "DECISION", "-"],
                                          case_sensitive=False),
              help="With --explain: only lessons of this kind.")
@click.pass_context
def curator(ctx: click.Context, dry_run: bool, text: str | None, role: str | None,
            kind: str | None) -> None:
    """Compact memory: archive old raw.md entries, rebuild summary.md and MEMORY.md, promote."""
    from harness.run.curation import run_curator

    if text is not None:
        if dry_run:
            raise UsageError("--explain changes nothing; it takes no --dry-run")
        click.echo(_explain(ctx, text, role, kind))
        return
    if role or kind:
        raise UsageError("--role and --kind go with --explain")
    report = run_curator(paths_of(ctx), dry_run=dry_run)
    if dry_run:
        for diff in report.diffs.values():
            click.echo(diff, nl=False)
    click.echo(report.describe(), err=dry_run)


def _explain(ctx: click.Context, text: str, role: str | None, kind: str | None) -> str:
    """`curator --explain`: the mission's similarity threshold, then the curator's account."""
    from harness.config import load_mission_config
    from harness.curator.explain import explain
    from harness.run.curation import settings_for

    paths = paths_of(ctx)
    state = check_state(paths.state)
    settings = settings_for(load_mission_config(state))
    return explain(state, paths.identity, text, settings.similarity, role=role, kind=kind)


@cli.command()
@click.argument("verdict", type=click.Choice(["pass", "fail"]))
@click.argument("reason", nargs=-1, required=True)
@click.option("--run", "run_id", envvar="HARNESS_RUN_ID", required=True,
              help="The validator run [default: $HARNESS_RUN_ID].")
@click.pass_context
def verdict(ctx: click.Context, verdict: str, reason: tuple[str, ...], run_id: str) -> None:
    """Give the verdict of a validator run: verdict pass|fail REASON."""
    from harness.state.actions import record_verdict

    record_verdict(check_state(paths_of(ctx).state), run_id, verdict, " ".join(reason))
    click.echo(f"verdict {verdict} recorded for {run_id}; the harness applies it when the run ends")


@cli.command()
@click.argument("reason", nargs=-1, required=True)
@click.option("--feature", envvar="FEATURE_ID", help="Block this feature now [$FEATURE_ID].")
@click.option("--run", "run_id", envvar="HARNESS_RUN_ID",
              help="The run asking to block its feature [$HARNESS_RUN_ID].")
@click.pass_context
def block(ctx: click.Context, reason: tuple[str, ...], feature: str | None,
          run_id: str | None) -> None:
    """Mark a feature as waiting on a person: block REASON (the action needed)."""
    from harness.state.actions import block_feature, request_block

    state, text = check_state(paths_of(ctx).state), " ".join(reason)
    if run_id:  # an agent inside a run: the harness applies it when the run ends
        request_block(state, run_id, text)
        click.echo(f"{run_id}: the feature will be blocked when the run ends: {text}")
    elif feature:
        block_feature(state, feature, text)
        click.echo(f"{feature} is blocked: {text}")
    else:
        raise UsageError("block needs --feature (or FEATURE_ID) or a run (HARNESS_RUN_ID)")


@cli.command()
@click.argument("feature_id")
@click.pass_context
def unblock(ctx: click.Context, feature_id: str) -> None:
    """Return a blocked feature to pending."""
    from harness.state.actions import unblock_feature

    unblock_feature(check_state(paths_of(ctx).state), feature_id)
    click.echo(f"{feature_id} is pending again")


@cli.command()
@click.argument("feature_id")
@click.option("--reason", metavar="TEXT", help="Why, for the ledger and the next worker.")
@click.pass_context
def retry(ctx: click.Context, feature_id: str, reason: str | None) -> None:
    """Return a failed or blocked feature to pending, its attempts reset."""
    from harness.state.actions import retry_feature

    retry_feature(check_state(paths_of(ctx).state), feature_id, reason)
    click.echo(f"{feature_id} is pending again, attempts reset")


@cli.command()
@click.argument("file", type=click.File("rb"))
@click.pass_context
def plan(ctx: click.Context, file) -> None:
    """Propose a plan (a JSON list of features, or - for stdin); validated, then merged."""
    from harness.state.actions import submit_plan
    from harness.state.reading import read_input

    state, source = check_state(paths_of(ctx).state), getattr(file, "name", "<stdin>")
    merged = submit_plan(state, read_input(file, source), source=source)
    click.echo(f"plan saved: {len(merged)} features")


@cli.command()
@click.option("--backend", type=click.Choice(["anthropic", "openai", "command", "scripted"]),
              help="Check this backend for every role instead of the configured ones.")
@click.option("--preset", type=PRESETS)
@click.option("--command", "command_line", metavar="CMD", callback=not_empty)
@click.option("--script", type=click.Path(dir_okay=False))
@click.option("--no-cron", is_flag=True, help="Skip the check under a cron-like environment.")
@click.pass_context
def doctor(ctx: click.Context, backend: str | None, preset: str | None,
           command_line: str | None, script: str | None, no_cron: bool) -> None:
    """Check what a cron job needs: venv, state, templates, backend, cron environment."""
    from harness.ops.checks import doctor_exit_code, format_checks
    from harness.ops.doctor import diagnose

    options = {k: v for k, v in (("preset", preset), ("command", command_line),
                                 ("script", script)) if v}
    checks = diagnose(paths_of(ctx), backend, options=options, cron=not no_cron)
    click.echo(format_checks(checks))
    ctx.exit(doctor_exit_code(checks))


for _command in (status, runs, show, report, reconstruct, import_, export, import_notes, demo,
                 loop, cron, answer, guide, summary, watch):
    cli.add_command(_command)
for _command in cli.commands.values():
    accept_global_options(_command)
