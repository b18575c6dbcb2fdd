"""`run.sh summary [--since 12h]`: the morning view. What the runs of a span did: features done,
failed and blocked (with their reasons and what they need), spend, the commits that landed
with their diffstat, and the runs that erred (infrastructure, not the agent's attempt).
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path
from typing import Any

from harness.errors import UsageError
from harness.run.git import run_git
from harness.state import ledger
from harness.state import plan as plan_mod
from harness.state.run_summary import RunSummary, parse_time, summarize
from harness.state.runs import list_runs

SHA = re.compile(r"[0-9a-f]{4,64}")
SPAN = re.compile(r"^(\d+(?:\.\d+)?)([smhdw])$")
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
ERRED = ("error", "backend-error", "interrupted")  # results that are no attempt's verdict
STAT_FILES = 8  # files a commit's diffstat names; the rest are counted in its last line
COMMITS_SHOWN = 50  # newest commits shown with their diffstat (a git process each)
ERRED_SHOWN = 50  # newest runs that erred listed; a night of outages is counted beyond them


def parse_since(text: str) -> float:
    """Seconds in a span such as `30m`, `12h`, `2d` (s, m, h, d, w)."""
    m = SPAN.match(text.strip().lower())
    if m is None:
        raise UsageError(f"--since takes a span such as 30m, 12h or 2d, not {text!r}")
    return float(m[1]) * UNITS[m[2]]


def collect(state: Path, workdir: Path, seconds: float, now: float | None = None
            ) -> dict[str, Any]:
    """The summary of the last `seconds`, as JSON-ready data (see `collect_since`); a span
    longer than the clock's (99999999d) covers everything, from the epoch."""
    return collect_since(state, workdir, max(0.0, (time.time() if now is None else now)
                                             - seconds))


def ended_at(manifest: dict[str, Any]) -> float:
    """When a run ended, or started if it has not ended: what places it in a span."""
    return parse_time(manifest.get("finished_at")) or parse_time(manifest.get("started_at")) or 0


def collect_since(state: Path, workdir: Path, cutoff: float,
                  manifests: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The summary of the runs (of `manifests`, else all) that ended (or began, if still
    running) after `cutoff`, seconds since the epoch, as JSON-ready data; the newest commits
    are shown from the repository in `workdir`, the rest counted."""
    runs = [(m, summarize(m)) for m in (list_runs(state) if manifests is None else manifests)
            if ended_at(m) >= cutoff]
    made = [m for m, _ in runs if m.get("commit")]
    plan = {f.id: f for f in plan_mod.load_plan(state)}
    title = (lambda fid: plan[fid].title if fid in plan else "")  # noqa: E731
    validated = [r for _, r in runs if r.role == "validator"]
    return {
        "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(cutoff)),
        "runs": len(runs),
        "by_role": {role: sum(r.role == role for _, r in runs)
                    for role in sorted({r.role for _, r in runs})},
        "spent": round(sum(r.cost_usd for _, r in runs), 6),
        "spent_in_all": ledger.spent(state),
        "done": _unique({"feature": r.feature, "title": title(r.feature), "run_id": r.run_id}
                        for r in validated if r.result == "pass" and r.exit_code == 0),
        "failed": _unique({"feature": r.feature, "title": title(r.feature), "reason": r.reason,
                           "run_id": r.run_id}
                          for r in validated if r.result == "fail"
                          and r.feature in plan and plan[r.feature].status == "failed"),
        "blocked": [{"feature": f.id, "title": f.title, "needs": f.blocked_reason or ""}
                    for f in plan.values() if f.status == "blocked"],
        "commits": [run_commit(m, workdir) for m in made[-COMMITS_SHOWN:]],
        "commits_not_shown": max(0, len(made) - COMMITS_SHOWN),
        **_newest("erred", [{"run_id": r.run_id, "exit_code": r.exit_code, "result": r.result,
                            "reason": r.reason} for _, r in runs if _erred(r)], ERRED_SHOWN),
    }


def _newest(key: str, rows: list[dict[str, Any]], shown: int) -> dict[str, Any]:
    """The newest `shown` of `rows` under `key`, and how many more under `key`_not_shown."""
    return {key: rows[-shown:], f"{key}_not_shown": max(0, len(rows) - shown)}


def _unique(rows: Any) -> list[dict[str, Any]]:
    """Rows with one per feature, the latest kept."""
    return list({row["feature"]: row for row in rows}.values())


def _erred(r: RunSummary) -> bool:
    return r.result in ERRED or r.status not in ("finished", "started", "dry-run") \
        or r.exit_code in (2, 6)


def commit_stat(workdir: Path, sha: str) -> tuple[str, list[str]]:
    """A commit's subject and diffstat lines; ("", []) when git cannot show it, or `sha`
    is no hex object name (a damaged manifest's `--output=FILE` would be git's option)."""
    if not SHA.fullmatch(sha):
        return "", []
    try:
        shown = run_git(workdir, "show", f"--stat=100,80,{STAT_FILES}", "--format=%s",
                        sha, check=False)
        lines = shown.stdout.strip().splitlines() if shown.returncode == 0 else []
    except (OSError, subprocess.SubprocessError):
        lines = []
    return (lines[0] if lines else ""), [s.strip() for s in lines[1:] if s.strip()]


def run_commit(manifest: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """The commit a run made: its sha, subject and diffstat, read in the run's own tree while
    it exists (a feature's worktree is removed once merged), else in `workdir`."""
    sha, subject, stat = str(manifest["commit"]), "", []
    own = [Path(str(manifest["workdir"]))] if manifest.get("workdir") else []
    for tree in [*own, workdir]:
        if not subject and tree.is_dir():
            subject, stat = commit_stat(tree, sha)
    return {"commit": sha, "run_id": manifest["run_id"], "feature": manifest.get("feature"),
            "subject": subject, "stat": stat}


def format_summary(data: dict[str, Any], span: str) -> str:
    """The summary as text, for a terminal or a morning mail."""
    roles = ", ".join(f"{n} {role}" for role, n in data["by_role"].items())
    out = [f"Since {data['since']} ({span}): {data['runs']} runs" + (f" ({roles})" if roles
                                                                    else "")
           + f", ${data['spent']:.4f} spent (${data['spent_in_all']:.4f} in all)"]
    out += _block(f"Done ({len(data['done'])})",
                  [f"{d['feature']} {d['title']}" for d in data["done"]])
    out += _block(f"Failed ({len(data['failed'])})",
                  [f"{d['feature']} {d['title']}: {d['reason']}" for d in data["failed"]])
    out += _block(f"Blocked, waiting for you ({len(data['blocked'])})",
                  [f"{d['feature']} {d['title']}\n    needs: {d['needs']}\n    answer: run.sh "
                   f"answer {d['feature']} TEXT" for d in data["blocked"]])
    out += _block(f"Commits ({len(data['commits']) + data['commits_not_shown']})",
                  [f"{c['commit'][:10]} {c['subject']} [{c['run_id']}]"
                   + "".join(f"\n    {line}" for line in c["stat"]) for c in data["commits"]]
                  + ([f"and {data['commits_not_shown']} earlier"] if data["commits_not_shown"]
                     else []))
    out += _block(f"Runs that erred ({len(data['erred']) + data['erred_not_shown']})",
                  [f"{e['run_id']} exit {e['exit_code']} {e['result']}: {e['reason']}"
                   for e in data["erred"]]
                  + ([f"and {data['erred_not_shown']} earlier"] if data["erred_not_shown"]
                     else []))
    return "\n".join(out)


def _block(heading: str, rows: list[str]) -> list[str]:
    return ["", f"{heading}:", *[f"  {row}" for row in rows]] if rows else []
