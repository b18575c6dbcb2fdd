"""`run.sh curator`: the curator's rules from the mission config, optionally a model's
rewrite of the prose (`curator.mode: model`), and a progress.log line.

With a model, the curator role's prompt is rendered and recorded like any run; the model
answers with the `curation` tool; `curate` checks the answer and writes the rules' texts
instead when it fails, and the run record says which stood and why.
"""

from __future__ import annotations

from harness.backends import load_backend
from harness.config import MissionConfig, load_mission_config, mission_name
from harness.curator.book import ModelResult, ProposedPromotion
from harness.curator.curate import CuratorReport, CuratorSettings, curate
from harness.curator.promotion import Promotion
from harness.errors import HarnessError
from harness.paths import Paths, check_state
from harness.run.runner import Prepared, prepare
from harness.state import actions, ledger
from harness.state.plan import load_plan
from harness.types import Outcome


def settings_for(config: MissionConfig) -> CuratorSettings:
    """The curator settings from the mission config (unset keys keep the curator's defaults)."""
    settings = CuratorSettings()
    if config.curator.similarity is not None:
        settings.similarity = config.curator.similarity
    return settings


class ModelRewrite:
    """The `refine` step of a curator run: ask the curator role's model for better prose."""

    def __init__(self, paths: Paths, config: MissionConfig) -> None:
        self.paths, self.config = paths, config
        self.prepared: Prepared | None = None
        self.outcome: Outcome | None = None
        self.error = ""

    def __call__(self, summary: str, memory: str,
                 promotions: list[Promotion]) -> ModelResult | None:
        from harness.run.cycle import make_session

        rules = "\n".join([
            "### summary.md (rules)", "```", summary.rstrip(), "```", "",
            "### MEMORY.md (rules)", "```", memory.rstrip(), "```", "",
            "### Promotions the rules make (you may reword them, all or none, by number)",
            *[f"{n}. identity/{p.role}.md: {p.line}" for n, p in enumerate(promotions, 1)],
            ""])
        self.prepared = prepare(self.paths, "curator", None, load_plan(self.paths.state),
                                self.config, extra={"curation": rules})
        try:
            self.outcome = load_backend(self.prepared.role_config.backend).run(
                self.prepared.rendered.text, make_session(self.paths, self.prepared))
        except HarnessError as e:
            self.error = f"{type(e).__name__}: {e}"
            self.outcome = getattr(e, "outcome", None)
            return None
        answer = actions.read_curation(self.paths.state, self.prepared.record.run_id)
        if answer is None:
            return None
        words = answer.get("promotions")
        return ModelResult(answer["summary"], answer["memory"], None if words is None else [
            ProposedPromotion(p["number"], p["text"]) for p in words])

    def finish(self, report: CuratorReport) -> None:
        """Close the curator run's record with what became of its answer."""
        if self.prepared is None:
            return
        cost = self.outcome.cost_usd if self.outcome else 0.0
        fields = {"cost_usd": round(cost, 6), "curation": report.model, "result": "done"}
        if self.outcome:
            fields.update(usage=vars(self.outcome.usage), turns=self.outcome.turns,
                          outcome=self.outcome.status, detail=self.outcome.detail)
        if self.error:
            fields["error"] = self.error
        ledger.add_spend(self.paths.state, cost)
        self.prepared.record.finish("finished", 0, **fields)


def run_curator(paths: Paths, *, dry_run: bool = False) -> CuratorReport:
    """One curator pass over the mission's memory; with `curator.mode: model`, a model too."""
    state = check_state(paths.state)
    config = load_mission_config(state)
    rewrite = ModelRewrite(paths, config) if config.curator.mode == "model" else None
    report = curate(state, paths.identity, mission_name(config, state), settings_for(config),
                    dry_run=dry_run, refine=rewrite)
    run_id = "-"
    if rewrite is not None and rewrite.prepared is not None:
        rewrite.finish(report)
        run_id = rewrite.prepared.record.run_id
    if not dry_run:
        cost = rewrite.outcome.cost_usd if rewrite and rewrite.outcome else 0.0
        ledger.append_progress(state, "curator", None, run_id, "done", 0, cost)
    return report
