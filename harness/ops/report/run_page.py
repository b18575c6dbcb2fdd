"""The view of one run for its report page: header figures, the prompt by section, the turns
with their tool calls (long results folded), the verdict and how the run ended."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.ops.show import describe_call
from harness.ops.summary import run_commit
from harness.state.actions import read_verdict
from harness.state.run_summary import RunSummary
from harness.state.runs import DAMAGED, runs_dir
from harness.state.sections import run_headings, split_sections
from harness.state.transcript import ToolCall, Turn, fold_turns, read_events

FOLD_LINES = 20  # a tool result longer than this is folded behind its first line
FOLD_CHARS = 2000


def call_view(call: ToolCall) -> dict[str, Any]:
    result = call.result
    lines = len(result.splitlines()) if result is not None else 0
    return {"name": call.name, "described": describe_call(call), "result": result,
            "is_error": call.is_error, "result_lines": lines,
            "folded": result is not None and (lines > FOLD_LINES or len(result) > FOLD_CHARS)}


def turn_view(turn: Turn) -> dict[str, Any]:
    return {"number": turn.number, "texts": turn.texts, "usage": turn.usage,
            "calls": [call_view(c) for c in turn.calls], "events": turn.events}


def ending(manifest: dict[str, Any]) -> str:
    """How the run ended, naming the cap it hit or the error it met."""
    outcome, detail = manifest.get("outcome"), manifest.get("detail") or ""
    text = str(outcome or manifest.get("status") or "?")
    if outcome == "capped":
        text = f"stopped by a cap: {detail or 'unnamed'}"
    elif detail:
        text += f" ({detail})"
    if manifest.get("error"):
        text += f"; error: {manifest['error']}"
    if manifest.get("reset_at"):
        text += f"; usage limit resets at {manifest['reset_at']}"
    return text


def run_context(state: Path, manifest: dict[str, Any], summary: RunSummary,
                workdir: Path) -> dict[str, Any]:
    """Everything run.html.j2 needs for one run (`summary` is that of `manifest`); the
    commit it made is read in `workdir` once the run's own tree is gone."""
    run_id = manifest["run_id"]
    folder = runs_dir(state) / run_id
    odd = manifest.get("status") == DAMAGED  # its folder may hold a fifo: read none of it
    try:
        prompt = "" if odd else (folder / "prompt.md").read_text("utf-8", errors="replace")
    except FileNotFoundError:
        prompt = ""
    events, bad = ([], 0) if odd else read_events(folder / "transcript.jsonl")
    return {
        "run": summary.as_dict(),
        "backend": manifest.get("backend", "?"), "model": manifest.get("model") or "unknown",
        "ending": ending(manifest), "summary": manifest.get("summary") or "",
        "verdict": None if odd else read_verdict(state, run_id),
        "commit": run_commit(manifest, workdir) if manifest.get("commit") else None,
        "prompt_chars": len(prompt),
        "sections": split_sections(prompt, run_headings(state, manifest)) if prompt else [],
        "turns": [turn_view(t) for t in fold_turns(events)], "bad_lines": bad,
    }
