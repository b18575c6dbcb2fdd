"""Plans from and to other tools: `import` a Ralph prd.json, `export --format prd`."""

from __future__ import annotations

import json

import click

from harness.cli.options import paths_of
from harness.paths import check_state


@click.command(name="import")
@click.argument("file", type=click.File("rb"))
@click.pass_context
def import_(ctx: click.Context, file) -> None:
    """Bring in a Ralph plan (prd.json, or - for stdin): its stories become features."""
    from harness.state.ralph import import_prd
    from harness.state.reading import decode

    state, source = check_state(paths_of(ctx).state), getattr(file, "name", "<stdin>")
    plan, new = import_prd(state, decode(file.read(), source), source=source)
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
