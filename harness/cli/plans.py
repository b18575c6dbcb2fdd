"""Plans and notes from and to other tools: `import` a Ralph prd.json, `export --format
prd`, `import-notes` (Ralph's progress.txt, memory files)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from harness.cli.options import paths_of
from harness.paths import check_state


@click.command(name="import")
@click.argument("file", type=click.File("rb"))
@click.pass_context
def import_(ctx: click.Context, file) -> None:
    """Bring in a Ralph plan (prd.json, or - for stdin): its stories become features."""
    from harness.state.ralph import import_prd
    from harness.state.reading import read_input

    state, source = check_state(paths_of(ctx).state), getattr(file, "name", "<stdin>")
    plan, new = import_prd(state, read_input(file, source), source=source)
    click.echo(f"plan saved: {len(plan)} features, {new} new from {source}")


@click.command()
@click.option("--format", "form", type=click.Choice(["prd"]), required=True,
              help="prd: Ralph's prd.json.")
@click.option("-o", "--out", type=click.File("w"), default="-", help="Write here [stdout].")
@click.pass_context
def export(ctx: click.Context, form: str, out) -> None:
    """Write the plan in another tool's format: --format prd (Ralph's prd.json)."""
    from harness.config import load_mission_config, mission_name
    from harness.state.plan import load_plan
    from harness.state.ralph import export_prd

    state = check_state(paths_of(ctx).state)
    data = export_prd(load_plan(state), mission_name(load_mission_config(state), state))
    out.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


@click.command(name="import-notes")
@click.argument("file", type=click.Path(path_type=Path))
@click.pass_context
def import_notes(ctx: click.Context, file: Path) -> None:
    """Bring in notes other agents wrote: Ralph's progress.txt (its Codebase Patterns and
    learnings), a Claude Code or Codex memory file (CLAUDE.md, AGENTS.md): raw.md notes of
    the person, each naming where it came from; what was imported before is skipped."""
    from harness.state.imports import import_notes as bring_in

    new, known = bring_in(check_state(paths_of(ctx).state), file)
    said = f"imported {new} note{'' if new == 1 else 's'} from {file}"
    click.echo(said + (f" ({known} already imported)" if known else ""))
