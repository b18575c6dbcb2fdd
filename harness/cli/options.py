"""What every command shares: where the state and the working directory are."""

from __future__ import annotations

import click

from harness.paths import Paths, resolve_paths


def paths_of(ctx: click.Context) -> Paths:
    """The paths from the group's --state and --workdir (or their defaults)."""
    return resolve_paths(ctx.find_root().obj["state"], ctx.find_root().obj["workdir"])
