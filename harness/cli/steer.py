"""A person steers a feature: `answer` a blocked one, `guide` any (harness/state/steering.py)."""

from __future__ import annotations

import click

from harness.cli.options import paths_of
from harness.paths import check_state


@click.command()
@click.argument("feature_id")
@click.argument("text", nargs=-1, required=True)
@click.pass_context
def answer(ctx: click.Context, feature_id: str, text: tuple[str, ...]) -> None:
    """Answer a blocked feature's question: it is pending again, the answer in its next prompt."""
    from harness.state.steering import answer_feature

    answer_feature(check_state(paths_of(ctx).state), feature_id, " ".join(text))
    click.echo(f"{feature_id} is pending again; its next prompt shows your answer")


@click.command()
@click.argument("feature_id")
@click.argument("text", nargs=-1)
@click.option("--remove", metavar="N|all", help="Remove guidance N (as listed) or all of it.")
@click.pass_context
def guide(ctx: click.Context, feature_id: str, text: tuple[str, ...],
          remove: str | None) -> None:
    """Add guidance to a feature's next prompts (until --remove); no TEXT lists it."""
    from harness.errors import UsageError
    from harness.state import steering

    state = check_state(paths_of(ctx).state)
    if remove is not None and text:
        raise UsageError("guide takes TEXT to add or --remove N|all, not both")
    if remove is not None:
        gone = steering.remove_guidance(state, feature_id, remove)
        click.echo(f"removed from {feature_id}: {gone}")
        return
    if text:
        guidance = steering.add_guidance(state, feature_id, " ".join(text))
    else:
        guidance = steering.current(state, steering.check_known(state, feature_id))["guidance"]
    click.echo(f"{feature_id} guidance ({len(guidance)}):" if guidance
               else f"{feature_id} has no guidance")
    for n, line in enumerate(guidance, 1):
        click.echo(f"  {n}. {line}")
