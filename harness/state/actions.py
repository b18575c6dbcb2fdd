"""What an agent may ask of the harness, shared by the native tools and `run.sh`
subcommands: a verdict on the feature under validation, and a plan proposal.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.errors import UsageError
from harness.state import plan as plan_mod
from harness.state.ledger import append_verdict
from harness.state.reading import read_json_object
from harness.state.redact import redact
from harness.state.runs import check_run_id, last_run_id, load_manifest
from harness.state.store import write_record

VERDICTS = ("pass", "fail")


def verdict_path(state: Path, run_id: str) -> Path:
    return state / "runs" / run_id / "verdict.json"


def record_verdict(state: Path, run_id: str, verdict: str, reason: str) -> dict:
    """Record a validator's verdict for its run; the runner applies it when the run ends."""
    if verdict not in VERDICTS:
        raise UsageError(f"verdict must be 'pass' or 'fail', not {verdict!r}")
    if not reason.strip():
        raise UsageError("a verdict needs a reason")
    manifest = load_manifest(state, run_id)
    if manifest.get("role") != "validator":
        raise UsageError(f"run {run_id} is a {manifest.get('role')} run; only validators "
                         "give verdicts")
    record = {"verdict": verdict, "reason": reason.strip()}
    write_record(verdict_path(state, run_id), json.dumps(record, ensure_ascii=False))
    return record


def read_verdict(state: Path, run_id: str) -> dict | None:
    """The verdict recorded for a run, if any; a damaged verdict.json reads as the verdict
    `damaged`, its reason saying what is wrong (a validator's damaged verdict fails)."""
    path = verdict_path(state, run_id)
    try:
        record = read_json_object(path)
    except UsageError as e:
        return {"verdict": "damaged", "reason": str(e)}
    if record is None:
        return None
    if record.get("verdict") not in VERDICTS or not isinstance(record.get("reason"), str):
        return {"verdict": "damaged", "reason": f"{path}: expected a verdict (pass or fail) "
                                                "and a reason"}
    return record


def _run_dir(state: Path, run_id: str) -> Path:
    run_dir = state / "runs" / check_run_id(run_id)
    if not (run_dir / "manifest.json").is_file():
        raise UsageError(f"no run {run_id} under {state / 'runs'}")
    return run_dir


def request_block(state: Path, run_id: str, reason: str) -> dict:
    """An agent says it waits on a person; the runner blocks the feature when the run ends."""
    if not reason.strip():
        raise UsageError("blocking needs a reason: the action a person must take")
    record = {"reason": " ".join(reason.split())}
    write_record(_run_dir(state, run_id) / "blocked.json", json.dumps(record, ensure_ascii=False))
    return record


def read_block(state: Path, run_id: str) -> str | None:
    """The reason a run asked to block its feature, if it did."""
    path = state / "runs" / run_id / "blocked.json"
    try:
        record = read_json_object(path)
    except UsageError as e:
        return f"(the reason is unreadable: {e})"
    if record is None:
        return None
    return str(record.get("reason") or f"(no reason in {path})")


def block_feature(state: Path, feature_id: str, reason: str) -> plan_mod.Feature:
    """Block a feature now (a person's command), with the reason shown by `status`."""
    if not reason.strip():
        raise UsageError("blocking needs a reason: the action a person must take")
    plan_mod.check_feature_id(feature_id)
    return plan_mod.update_feature(state, feature_id, lambda f: f.model_copy(
        # the plan is state, not a record, so the reason is redacted before it is saved
        update={"status": "blocked", "blocked_reason": redact(" ".join(reason.split()))}))


def unblock_feature(state: Path, feature_id: str) -> plan_mod.Feature:
    """Return a blocked feature to pending; anything else is left alone with an error."""
    plan_mod.check_feature_id(feature_id)

    def change(f: plan_mod.Feature) -> plan_mod.Feature:
        if f.status != "blocked":
            raise UsageError(f"{feature_id} is {f.status}, not blocked")
        return f.model_copy(update={"status": "pending", "blocked_reason": None})

    return plan_mod.update_feature(state, feature_id, change)


RETRYABLE = ("failed", "blocked")


def retry_feature(state: Path, feature_id: str, reason: str | None = None) -> plan_mod.Feature:
    """Return a failed or blocked feature to pending with its attempts reset; the reason (a
    person's) goes to its ledger, where the next worker's prompt shows it."""
    plan_mod.check_feature_id(feature_id)
    before: list[plan_mod.Feature] = []

    def change(f: plan_mod.Feature) -> plan_mod.Feature:
        if f.status not in RETRYABLE:
            raise UsageError(f"{feature_id} is {f.status}; retry takes a failed or blocked "
                             "feature (a pending one is already waiting for a worker)")
        before.append(f)
        return f.model_copy(update={"status": "pending", "attempts": 0, "blocked_reason": None})

    updated = plan_mod.update_feature(state, feature_id, change)
    text = " ".join((reason or "").split()) or "a person returned it to pending"
    append_verdict(state, feature_id, {
        "run_id": "retry", "verdict": "retry", "reason": redact(text),
        "status_before": before[0].status, "attempts_before": before[0].attempts,
        "after_run": last_run_id(state, "worker", feature_id)})  # runs up to it: `stuck`
    return updated


def record_curation(state: Path, run_id: str, summary: str, memory: str,
                    promotions: object = None, same: object = None) -> None:
    """A curator model's rewrite of summary.md and MEMORY.md, its words for the
    promotions ([{number, text}], or None to keep the rules') and the numbers of the pairs
    it was asked about that say one lesson (`same`), checked when its run ends."""
    if not summary.strip() or not memory.strip():
        raise UsageError("a curation needs both summary and memory texts")
    if promotions is not None and not (isinstance(promotions, list) and all(
            isinstance(p, dict) and isinstance(p.get("number"), int)
            and isinstance(p.get("text"), str) for p in promotions)):
        raise UsageError("curation promotions must be a list of {number: int, text: str}")
    if same is not None and not (isinstance(same, list) and all(
            isinstance(n, int) and not isinstance(n, bool) for n in same)):
        raise UsageError("curation same must be a list of pair numbers")
    record = {"summary": summary, "memory": memory, "promotions": promotions, "same": same}
    write_record(_run_dir(state, run_id) / "curation.json", json.dumps(record, ensure_ascii=False))


def read_curation(state: Path, run_id: str) -> dict | None:
    """The rewrite a curator run answered with, if any: summary, memory, promotions and
    same."""
    try:
        return read_json_object(state / "runs" / run_id / "curation.json")
    except UsageError:
        return None  # damaged: the run gave no answer the curator can check


def submit_plan(state: Path, proposal: object, source: str = "proposal") -> list[plan_mod.Feature]:
    """Validate a proposed plan and merge it into features.json under the plan lock.

    An invalid proposal raises UsageError and changes nothing.
    """
    if isinstance(proposal, str):
        proposed = plan_mod.parse_plan(proposal, source)
    else:
        proposed = plan_mod.validate_plan(proposal, source)
    if not proposed:
        raise UsageError(f"{source}: a plan proposal needs at least one feature")
    with plan_mod.locked_plan(state) as plan:
        plan[:] = plan_mod.merge_plan(plan, proposed)
        return list(plan)
