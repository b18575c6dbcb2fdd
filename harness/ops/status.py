"""`run.sh status`: what the mission looks like now, as data and as text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.ops.worktrees import recent_merges, worktree_rows
from harness.state.memory import parse_entry, raw_path
from harness.state.plan import load_plan
from harness.state.runs import DAMAGED, list_runs, run_progress
from harness.state.store import count_lines

STATUSES = ("pending", "in_progress", "done", "failed", "blocked")


def _raw_stats(path: Path) -> dict[str, int]:
    entries = unparsed = 0
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.strip():
                    entries += 1
                    unparsed += parse_entry(line) is None
    except FileNotFoundError:
        pass
    return {"entries": entries, "unparsed": unparsed}


def state_warnings(state: Path) -> list[str]:
    """Damage a person should know about; cheap enough to check before every run."""
    warnings = []
    raw = raw_path(state)
    try:
        with open(raw, "rb") as f:
            size = f.seek(0, 2)
            f.seek(max(size - 1, 0))
            if size and f.read(1) != b"\n":
                warnings.append(f"{raw} ends with a half-written line; it is kept as it is and "
                                "the next note starts on a new line")
    except FileNotFoundError:
        warnings.append(f"{raw} is missing; the next note creates it")
    for name in ("summary.md", "MEMORY.md"):
        path = state / name
        if not path.exists():
            warnings.append(f"{path} is missing; run `run.sh curator` to rebuild it")
        elif not path.read_text(encoding="utf-8", errors="replace").strip():
            warnings.append(f"{path} is empty; prompts show no curated memory until "
                            "`run.sh curator` rebuilds it")
    return warnings


def collect_status(state: Path, workdir: Path | None = None) -> dict[str, Any]:
    """Features by status, runs in flight or interrupted, spend, memory sizes; with the
    working directory, the features' worktrees and the last merges too."""
    plan = load_plan(state)
    runs = list_runs(state)
    return {
        "state": str(state),
        "warnings": state_warnings(state),
        "counts": {s: sum(f.status == s for f in plan) for s in STATUSES},
        "features": [f.model_dump(exclude_none=True, exclude={"description",
                                                              "acceptance_criteria"})
                     for f in plan],
        "running": [r["run_id"] for r in runs if r.get("status") == "started"],
        "progress": {r["run_id"]: run_progress(state, r["run_id"])
                     for r in runs if r.get("status") == "started"},
        "interrupted": [r["run_id"] for r in runs if r.get("status") == "interrupted"],
        "damaged": {r["run_id"]: r["detail"] for r in runs if r.get("status") == DAMAGED},
        "runs": len(runs),
        "spent_usd": round(sum(float(r.get("cost_usd") or 0) for r in runs), 6),
        "last_runs": [{k: r.get(k) for k in ("run_id", "status", "exit_code")}
                      for r in runs[-5:]],
        "worktrees": worktree_rows(state, workdir) if workdir else [],
        "merges": recent_merges(state),
        "memory": {
            "raw": _raw_stats(raw_path(state)),
            "summary_lines": count_lines(state / "summary.md"),
            "memory_lines": count_lines(state / "MEMORY.md"),
            "long_notes": len(list((state / "memory").glob("*.md"))),
        },
    }


def _so_far(progress: dict[str, Any] | None) -> str:
    """`(3 turns, $0.0123 so far)`, as far as the run's events tell."""
    if not progress:
        return ""
    cost = progress.get("cost_usd")
    spent = f"${cost:.4f}" if isinstance(cost, int | float) else "cost not priced"
    return f" ({progress.get('turns', 0)} turns, {spent} so far)"


def format_status(report: dict[str, Any]) -> str:
    """The report as a few readable lines."""
    counts = ", ".join(f"{n} {s}" for s, n in report["counts"].items() if n) or "empty plan"
    lines = [f"warning: {w}" for w in report["warnings"]]
    lines += [f"state: {report['state']}", f"plan: {counts}"]
    for f in report["features"]:
        extra = f" (attempts {f['attempts']})" if f.get("attempts") else ""
        if f.get("blocked_reason"):
            extra += f" blocked: {f['blocked_reason']}"
        lines.append(f"  {f['id']:<8} {f['status']:<12} {f['title']}{extra}")
    lines.append(f"runs: {report['runs']} recorded, ${report['spent_usd']:.4f} spent")
    for run_id in report["running"]:
        lines.append(f"  running: {run_id}{_so_far(report['progress'].get(run_id))}")
    for run_id in report["interrupted"]:
        lines.append(f"  interrupted: {run_id}")
    for run_id, detail in report["damaged"].items():
        lines.append(f"  damaged: {run_id}: {detail}")
    for row in report["worktrees"]:
        lines.append(f"  worktree {row['branch']} ({row['feature_status']}): {row['state']}"
                     + (f"\n    fix: {row['fix']}" if row["fix"] else ""))
    lines += [f"  merge: {line}" for line in report["merges"]]
    mem = report["memory"]
    raw = mem["raw"]
    lines.append(
        f"memory: raw.md {raw['entries']} entries"
        + (f" ({raw['unparsed']} unparsed)" if raw["unparsed"] else "")
        + f", summary.md {mem['summary_lines']} lines, MEMORY.md {mem['memory_lines']} lines,"
        f" {mem['long_notes']} long-form notes"
    )
    return "\n".join(lines)
