"""The commands that look at the mission and its records: status, runs, show, reconstruct."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from harness.cli.options import paths_of
from harness.errors import TASK_FAILED
from harness.paths import check_state


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """The plan by status, runs in flight or interrupted, and memory sizes."""
    from harness.ops.status import collect_status, format_status

    report = collect_status(check_state(paths_of(ctx).state))
    click.echo(json.dumps(report, indent=2) if as_json else format_status(report))


@click.command()
@click.option("--limit", default=20, show_default=True, help="How many of the latest runs.")
@click.pass_context
def runs(ctx: click.Context, limit: int) -> None:
    """List the latest runs: id, status, exit code."""
    from harness.state.runs import list_runs

    for m in list_runs(check_state(paths_of(ctx).state))[-limit:]:
        code, cost = m.get("exit_code"), m.get("cost_usd", 0)
        spent = "unknown" if cost is None else f"${cost:.4f}"
        click.echo(f"{m['run_id']:<40} {m.get('status', '?'):<12} "
                   f"exit={'-' if code is None else code} cost={spent}")


@click.command()
@click.argument("run_id")
@click.pass_context
def show(ctx: click.Context, run_id: str) -> None:
    """Show a run's manifest and where its files are."""
    from harness.state.runs import load_manifest, runs_dir

    state = check_state(paths_of(ctx).state)
    manifest = load_manifest(state, run_id)
    click.echo(json.dumps(manifest, indent=2))
    folder = runs_dir(state) / run_id
    for name in ("prompt.md", "transcript.jsonl", "verdict.json"):
        if (folder / name).exists():
            click.echo(f"{name}: {folder / name}")


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
    sys.stdout.write(text)
