"""`run.sh demo`: the offline mission cycle, each step printed as it ends."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from harness.errors import TASK_FAILED


@click.command()
@click.option("--dir", "base", type=click.Path(file_okay=False),
              help="Run in this (new or empty) folder instead of a fresh temporary one.")
def demo(base: str | None) -> None:
    """Run a whole mission cycle offline with the scripted backend, and show the records."""
    import tempfile
    import time

    from harness.ops.demo import curate_demo, demo_steps, feature_status, make_project
    from harness.paths import harness_home

    folder = Path(base).resolve() if base else Path(tempfile.mkdtemp(prefix="harness-demo-"))
    click.echo(f"setting up the demo mission in {folder} ...")
    paths = make_project(folder, harness_home())
    click.echo(f"demo mission in {paths.workdir} (state {paths.state})\n")
    steps, started = [], time.monotonic()
    for n, step in enumerate(demo_steps(paths), 1):  # each step printed as it ends
        steps.append(step)
        mark = "ok" if step.exit_code == step.expected else f"UNEXPECTED (wanted {step.expected})"
        click.echo(f"{n}. {step.role:<9} {step.feature or '':<6} exit {step.exit_code}  {mark}"
                   f"  ({time.monotonic() - started:.1f} s)")
        click.echo(f"   {step.message}")
    report = curate_demo(paths).replace("\n", "\n   ")
    click.echo(f"{len(steps) + 1}. curator          exit 0\n   {report}")
    status = feature_status(paths, "F-004")
    # the demo's lessons live in its own identity folder: the commands below name it
    # and run.sh by its path: a newcomer's PATH has no run.sh yet, and these are pasted
    run_sh = harness_home() / "run.sh"
    look = f"HARNESS_IDENTITY_DIR={paths.identity} {run_sh} --state {paths.state}"
    click.echo(f"\nF-004 is now {status}. Records: {paths.state / 'runs'}/<run-id>/"
               "{manifest.json,prompt.md,transcript.jsonl}")
    click.echo(f"Look around:  {look} status")
    click.echo(f"              {look} report")
    click.echo(f"              {run_sh} --state {paths.state} reconstruct {steps[3].run_id}"
               " --check")
    click.echo(f"              git -C {paths.workdir} log --oneline")
    ok = all(s.exit_code == s.expected for s in steps) and status == "done"
    sys.exit(0 if ok else TASK_FAILED)
