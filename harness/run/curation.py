"""`run.sh curator`: one curator pass with the mission's settings and a progress.log line;
with `curator.mode: model`, a model's rewrite of the prose as well.

In model mode the model is called like any role, through the runner's lifecycle, and
outside the curator's lock: the rules' pass is planned first without changing anything
(a dry run), the curator role's prompt shows its result, and the model answers with the
`curation` tool. A real pass then takes the answer and checks it against its own rules'
result (`curator.settings`); the answer stands only if it passes and the memory did not change
while the model worked. The run record says which stood and why.

The dry run also collects the pairs of notes the rules are unsure are one lesson (up to
`curator.questions`, and as many due lessons beside identity lines; `harness.curator.judge`),
with those the real pass will meet once the model has said "same" (`curate.preview_for_model`),
and the prompt shows them. The model's `same` answers them; the real pass clusters with
those answers and records them for every later pass. When they change the rules' result,
the prose the model rewrote from the old one does not stand: the rules' texts are written,
with the answers.
"""

from __future__ import annotations

import sqlite3

from harness.config import MissionConfig, load_mission_config, mission_name
from harness.curator.book import clip
from harness.curator.commit import CuratorPaths
from harness.curator.curate import CuratorReport, CuratorSettings, curate, preview_for_model
from harness.curator.identity import identity_file, role_of
from harness.curator.judge import Judgments, about_identity
from harness.curator.promotion import Promotion
from harness.curator.settings import ModelResult, ProposedPromotion
from harness.errors import DONE, UsageError
from harness.paths import Paths, check_state
from harness.run.events import emit
from harness.run.export import export_identity
from harness.run.judging import SHOWN_CHARS, Verdict, judged
from harness.run.lifecycle import call_and_close
from harness.run.outcome import Interrupted, Judged, judge_error, outcome_fields
from harness.run.prepare import Prepared, prepare
from harness.state import actions, ledger
from harness.state.envfile import load_env_files
from harness.state.plan import load_plan
from harness.state.store import DISK_ERRNOS, hold_lock, lock_path
from harness.types import Outcome

NO_ANSWER = "the model gave no answer"
CHANGED = "the memory changed while the model worked"
JUDGED = ("the rules' result changed since the model saw it (its same-lesson answers, or "
          "the memory meanwhile)")


def settings_for(config: MissionConfig) -> CuratorSettings:
    """The curator settings from the mission config (unset keys keep the curator's defaults)."""
    settings = CuratorSettings(identity_chars=config.prompt.identity_chars)
    if config.curator.similarity is not None:
        settings.similarity = config.curator.similarity
    return settings


def run_curator(paths: Paths, *, dry_run: bool = False) -> CuratorReport:
    """One curator pass over the mission's memory; with `curator.mode: model`, a model too.
    A full disk or a read-only folder is exit 2 naming the file: what the pass had done is
    whole (its journal), and the next pass carries it on once there is room."""
    try:
        return _run_curator(paths, dry_run)
    except (OSError, sqlite3.OperationalError) as e:
        where = getattr(e, "filename", None) or f"a database in {paths.identity}"
        if isinstance(e, OSError) and e.errno not in DISK_ERRNOS:
            raise
        if isinstance(e, sqlite3.OperationalError) and not any(
                words in str(e) for words in ("full", "readonly", "unable to open")):
            raise
        raise UsageError(f"cannot write {where}: {getattr(e, 'strerror', None) or e}; "
                         "nothing is lost: free some space or make the folder writable, "
                         "and the next curator run carries this one on") from None


def _run_curator(paths: Paths, dry_run: bool) -> CuratorReport:
    state = check_state(paths.state)
    config = load_mission_config(state)
    if dry_run:
        return curate(state, paths.identity, mission_name(config, state), settings_for(config),
                      dry_run=True)
    # the model's call is made outside the curator's own lock (`curate`'s): an overlapping
    # cron pass is turned away here, before it pays for a call of its own
    with hold_lock(lock_path(state, "curation"), wait=False, what="the curator"):
        if config.curator.mode == "model":
            load_env_files(state)  # cron reads no profile: keys may live in env files
        report = (ModelCuration(paths, config).run() if config.curator.mode == "model"
                  else _judged_pass(paths, config))
    report.changes += export_identity(paths.workdir, paths.identity, config.identity_export,
                                      (paths.state, paths.identity, paths.home))
    if config.curator.mode != "model":
        ledger.append_progress(state, "curator", None, "-", "done", 0, 0.0)
    for promotion in report.promoted:
        emit(paths, config, "lesson.promoted", role=promotion.role, kind=promotion.kind,
             lesson=promotion.text, reason=promotion.line,
             identity=str(paths.identity / f"{promotion.role}.md"))
    return report


def _judged_pass(paths: Paths, config: MissionConfig) -> CuratorReport:
    """A rules pass, with the judge's answers when `curator.judge: auto` can get them."""
    name, settings = mission_name(config, paths.state), settings_for(config)
    verdict = Verdict(None)
    if config.curator.judge == "auto":
        try:  # cron reads no profile: keys may live in env files, needed by the judge alone
            load_env_files(paths.state)
        except UsageError as e:
            verdict = Verdict(None, f"judge: none ({e}); the rules decided alone")
        else:
            verdict = judged(paths, config, name, settings)
    report = curate(paths.state, paths.identity, name, settings, judge=verdict.answers)
    if verdict.note:
        report.changes.append(verdict.note)
    return report


class ModelCuration:
    """A curator run in model mode (see the module docstring)."""

    def __init__(self, paths: Paths, config: MissionConfig) -> None:
        self.paths, self.config = paths, config
        self.mission = mission_name(config, paths.state)
        self.settings = settings_for(config)
        self.report = CuratorReport()
        self.expected: tuple = ()  # the rules' result the model was shown
        self.questions: list[tuple[tuple, str, str]] = []  # the pairs it was asked about

    def run(self) -> CuratorReport:
        """Plan, ask the model, then curate with its answer; the report of the real pass."""
        paths = self.paths
        if CuratorPaths(paths.state, paths.identity).journal.exists():
            # an interrupted run is finished first, by the rules alone: a dry run cannot plan
            self._curate()
        preview = preview_for_model(paths.state, paths.identity, self.mission,
                                    self.settings, self.config.curator.questions)
        self.questions = preview.questions
        prepared = prepare(paths, "curator", None, load_plan(paths.state), self.config,
                           extra={"curation": rules_shown(preview)})
        self.expected = _result_of(preview.planned, preview.promoted)
        call_and_close(paths, prepared, self._judge)
        return self.report

    def _judge(self, paths: Paths, prepared: Prepared, outcome: Outcome | None,
               error: BaseException | None) -> Judged:
        if isinstance(error, Interrupted | KeyboardInterrupt):
            code, result, message = judge_error(error)
            fields, message = outcome_fields(outcome, error, message)
            return Judged(code, result, message, {**fields, "result": result})
        answer, same = self._answer(prepared, error)
        judge = Judgments({pair: n in same for n, (pair, _, _) in enumerate(self.questions, 1)}
                          if same is not None else None)
        changed = JUDGED if same else CHANGED
        self.report = self._curate(lambda s, m, p: answer if _result_of(
            {"summary.md": s, "MEMORY.md": m}, p) == self.expected else changed, judge)
        fields, message = outcome_fields(outcome, error, self.report.model)
        return Judged(DONE, "done", message,
                      {**fields, "curation": self.report.model, "result": "done"})

    def _answer(self, prepared: Prepared, error: BaseException | None
                ) -> tuple[ModelResult | str, set[int] | None]:
        """The model's rewrite (or why there is none), and the numbers of the pairs it
        says are one lesson (None: it answered nothing)."""
        answer = None if error else actions.read_curation(self.paths.state,
                                                          prepared.record.run_id)
        if answer is None:
            return NO_ANSWER, None
        words, same = answer.get("promotions"), answer.get("same")
        return ModelResult(answer["summary"], answer["memory"], None if words is None else [
            ProposedPromotion(p["number"], p["text"]) for p in words]), (
                None if same is None else set(same))

    def _curate(self, refine=None, judge: Judgments | None = None) -> CuratorReport:
        return curate(self.paths.state, self.paths.identity, self.mission, self.settings,
                      refine=refine, judge=judge)


def rules_shown(preview: CuratorReport) -> str:
    """The rules' summary.md, MEMORY.md and promotions as the curator's prompt shows them."""
    return "\n".join([
        "### summary.md (rules)", "```", preview.planned["summary.md"].rstrip(), "```", "",
        "### MEMORY.md (rules)", "```", preview.planned["MEMORY.md"].rstrip(), "```", "",
        "### Promotions the rules make (you may reword them, all or none, by number)",
        *[f"{n}. identity/{p.role}.md: {p.line}" for n, p in enumerate(preview.promoted, 1)],
        "", *questions_shown(preview.questions)])


def questions_shown(questions: list[tuple[tuple, str, str]]) -> list[str]:
    """The pairs the rules are unsure of, numbered, as the prompt shows them."""
    if not questions:
        return []
    lines = ["### Same lesson? (answer `same` with the numbers of the pairs that say one "
             "lesson in other words; every other pair is recorded as two lessons)"]
    for n, ((bucket, _, _), text, other) in enumerate(questions, 1):
        identity = about_identity(bucket)  # a role, or a bucket of its archive's lines
        where = (f"a line of {identity_file(bucket)}" if identity
                 else f"an earlier {bucket[0]} {bucket[1]} note")
        role = role_of(bucket) if identity else bucket[0]
        lines += [f"{n}. A {role} note: {clip(text, SHOWN_CHARS)}",
                  f"   B, {where}: {clip(other, SHOWN_CHARS)}"]
    return [*lines, ""]


def _result_of(texts: dict[str, str], promotions: list[Promotion]) -> tuple:
    return texts["summary.md"], texts["MEMORY.md"], [p.line for p in promotions]
