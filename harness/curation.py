"""`run.sh curator`: the curator's rules from the mission config, and a progress.log line."""

from __future__ import annotations

from harness import ledger
from harness.config import load_mission_config, mission_name
from harness.curate import CuratorReport, CuratorSettings, curate
from harness.paths import Paths, check_state


def settings_for(paths: Paths) -> tuple[str, CuratorSettings]:
    """The mission's name and curator settings from `<state>/config.yaml`."""
    config = load_mission_config(paths.state)
    settings = CuratorSettings()
    if config.curator.similarity is not None:
        settings.similarity = config.curator.similarity
    return mission_name(config, paths.state), settings


def run_curator(paths: Paths, *, dry_run: bool = False) -> CuratorReport:
    """One curator pass over the mission's memory (rules only)."""
    state = check_state(paths.state)
    mission, settings = settings_for(paths)
    report = curate(state, paths.identity, mission, settings, dry_run=dry_run)
    if not dry_run:
        ledger.append_progress(state, "curator", None, "-", "done", 0, 0.0)
    return report
