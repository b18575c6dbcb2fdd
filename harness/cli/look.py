"""The commands that look at the mission and its records: status, runs, show, report, summary,
watch, reconstruct."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from harness.cli.options import ROLE_CHOICE, feature_id, paths_of
from harness.errors import TASK_FAILED, UsageError
from harness.paths import check_state


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """The plan by status, runs in flight or interrupted, and memory sizes."""
    from harness.ops.status import collect_status, format_status

    paths = paths_of(ctx)
    report = collect_status(check_state(paths.state), paths.workdir, paths.identity)
    click.echo(json.dumps(report, indent=2) if as_json else format_status(report))


@click.command()
@click.option("-n", "--limit", default=20, show_default=True, type=click.IntRange(min=0),
              help="How many of the latest runs.")
@click.option("--feature", metavar="FEATURE_ID", callback=feature_id,
              help="Only runs on this feature.")
@click.option("--role", type=ROLE_CHOICE, help="Only runs of this role.")
@click.option("--failed", is_flag=True, help="Only runs that failed or never ended.")
@click.pass_context
def runs(ctx: click.Context, limit: int, feature: str | None, role: str | None,
         failed: bool) -> None:
    """List the latest runs: start, id, duration, turns, tokens, cost, exit code, result."""
    from harness.state.run_summary import format_duration, format_tokens, summarize
    from harness.state.runs import list_runs

    rows = [summarize(m) for m in list_runs(check_state(paths_of(ctx).state))]
    rows = [r for r in rows if (feature is None or r.feature == feature)
            and (role is None or r.role == role) and (not failed or r.failed)]
    shown = rows[-limit:] if limit > 0 else []
    if shown:
        click.echo(f"{'started':<20} {'run':<36} {'time':>7} {'turns':>5} {'tokens':>7} "
                   f"{'cost':>8} {'exit':>4}  result")
    for r in shown:
        code = "-" if r.exit_code is None else r.exit_code
        click.echo(f"{r.started_at or '?':<20} {r.run_id:<36} {format_duration(r.seconds):>7} "
                   f"{r.turns:>5} {format_tokens(r.tokens):>7} {r.cost_text:>8} "
                   f"{code:>4}  {r.result}" + (f": {r.reason}" if failed and r.reason else ""))
    if len(rows) > len(shown):
        click.echo(f"({len(rows) - len(shown)} earlier runs not shown; -n to show more)")


@click.command()
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="Print the manifest as JSON.")
@click.option("--prompt", "as_prompt", is_flag=True, help="Print the run's prompt.md.")
@click.pass_context
def show(ctx: click.Context, run_id: str, as_json: bool, as_prompt: bool) -> None:
    """Show a run: its prompt's sections, each turn's tool calls, the verdict, the cost."""
    from harness.ops.show import format_run
    from harness.state.runs import load_manifest, runs_dir

    paths = paths_of(ctx)
    state = check_state(paths.state)
    if as_json and as_prompt:
        raise UsageError("show takes --json or --prompt, not both")
    manifest = load_manifest(state, run_id)
    if as_json:
        click.echo(json.dumps(manifest, indent=2, ensure_ascii=False))
    elif as_prompt:
        from harness.state.reading import read_text

        try:
            sys.stdout.write(read_text(runs_dir(state) / run_id / "prompt.md"))
        except FileNotFoundError:
            raise UsageError(f"run {run_id} has no prompt.md") from None
    else:
        click.echo(format_run(state, run_id, paths.workdir))


@click.command()
@click.option("--out", metavar="DIR", type=click.Path(file_okay=False),
              help="Where to write the report [default: <state>/report].")
@click.pass_context
def report(ctx: click.Context, out: str | None) -> None:
    """Write a static HTML report of the mission (plan, runs, cost, memory; works offline)."""
    from harness.ops.report.site import write_report

    paths = paths_of(ctx)
    state = check_state(paths.state)
    folder = Path(out).resolve() if out else state / "report"
    written = write_report(state, paths.identity, folder, paths.workdir)
    click.echo(f"report of {written.runs} runs: {written.run_pages} run pages rendered, "
               f"{written.pages} files written ({written.bytes:,} bytes)")
    click.echo(f"open file://{folder / 'index.html'}")


@click.command()
@click.argument("run_id")
@click.option("--check", is_flag=True, help="Exit 0 only if the rebuilt prompt matches its hash.")
@click.option("--templates", "templates_dir", type=click.Path(exists=True, file_okay=False),
              help="Render the recorded context with these templates and diff.")
@click.pass_context
def reconstruct(ctx: click.Context, run_id: str, check: bool, templates_dir: str | None) -> None:
    """Rebuild a run's prompt byte for byte from the stored objects."""
    from harness.run.prompt import reconstruct as rebuild
    from harness.run.prompt import unified_diff
    from harness.state.runs import load_manifest
    from harness.state.store import sha256

    state = check_state(paths_of(ctx).state)
    manifest = load_manifest(state, run_id)
    if templates_dir:
        recorded = rebuild(state, manifest)
        new = rebuild(state, manifest, Path(templates_dir).resolve())
        click.echo(unified_diff(recorded, new, f"{run_id}/prompt.md", f"with {templates_dir}"),
                   nl=False)
        return
    text = rebuild(state, manifest)
    if check:
        digest = sha256(text)
        if digest != manifest.get("prompt_sha256"):
            click.echo(f"run.sh: {run_id}: rebuilt prompt sha256 {digest} does not match "
                       f"recorded {manifest.get('prompt_sha256')}", err=True)
            ctx.exit(TASK_FAILED)
        click.echo(f"{run_id}: prompt rebuilt, sha256 {digest} matches")
        return
    # byte for byte into a file or a pipe; a terminal still sees escapes made visible
    out = sys.stdout if sys.stdout.isatty() else getattr(sys.stdout, "unescaped", sys.stdout)
    out.write(text)


@click.command()
@click.option("--since", "span", default="12h", show_default=True, metavar="SPAN",
              help="How far back: 30m, 12h, 2d.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def summary(ctx: click.Context, span: str, as_json: bool) -> None:
    """What happened: features done, failed, blocked; spend; commits; runs that erred."""
    from harness.ops.summary import collect, format_summary, parse_since

    paths = paths_of(ctx)
    seconds = parse_since(span)
    data = collect(check_state(paths.state), paths.workdir, seconds)
    click.echo(json.dumps(data, indent=2) if as_json else format_summary(data, span))


@click.command()
@click.option("--once", is_flag=True,
              help="Print one frame and exit (so does a stdout that is no terminal).")
@click.option("--interval", default=2.0, show_default=True, metavar="SECONDS",
              type=click.FloatRange(min=0.2, max=86400), help="Seconds between refreshes.")
@click.option("--json", "as_json", is_flag=True, help="The runs in progress as JSON, once.")
@click.pass_context
def watch(ctx: click.Context, once: bool, interval: float, as_json: bool) -> None:
    """Live runs: feature, time, turns, cost so far, last tool call; refreshing until Ctrl-C."""
    from harness.config import load_mission_config, mission_name
    from harness.ops import watch as live

    if interval != interval:  # NaN, which FloatRange lets through; time.sleep does not
        raise click.BadParameter("not a number", param_hint="'--interval'")
    state = check_state(paths_of(ctx).state)
    if as_json:
        click.echo(json.dumps(live.as_json(live.Watcher(state).live()), indent=2))
        return
    live.watch(state, mission_name(load_mission_config(state), state), interval, once)
