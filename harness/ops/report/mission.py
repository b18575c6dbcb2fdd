"""What the report shows of the mission as a whole: the plan board with each feature's ledger
verdicts and runs, and the memory files (summary, MEMORY.md, identity, long-form notes)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson

from harness.state.ledger import ledger_path
from harness.state.plan import Feature, load_plan
from harness.state.run_summary import RunSummary

STATUSES = ("pending", "in_progress", "blocked", "failed", "done")
LEDGER_TEXT = ("time", "verdict", "reason", "run_id")  # what the board shows of a verdict
PROVENANCE = re.compile(r"\s*(\[promoted [^\]]*\])\s*$")


def read_ledger(state: Path, feature_id: str) -> list[dict[str, Any]]:
    """A feature's verdicts, oldest first, each with its time, verdict, reason and run as
    text; a line that is not a JSON object shows as a `damaged` verdict naming the line."""
    path = ledger_path(state, feature_id)
    try:
        with open(path, "rb") as f:
            lines = f.read().splitlines()
    except (FileNotFoundError, IsADirectoryError):
        return []
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)  # the board reads a ledger per feature, 3,579 at 10k runs
        except orjson.JSONDecodeError:
            record = None
        if not isinstance(record, dict):
            record = {"verdict": "damaged", "reason": f"{path} line {n} is not a JSON object"}
        out.append({**record, **{k: str(record.get(k) or "") for k in LEDGER_TEXT}})
    return out


def plan_board(state: Path, rows: list[RunSummary]) -> dict[str, list[dict[str, Any]]]:
    """Features by status (every status a column), each with its verdicts and run ids."""
    runs_of: dict[str, list[str]] = {}
    for r in rows:
        runs_of.setdefault(r.feature, []).append(r.run_id)
    board: dict[str, list[dict[str, Any]]] = {s: [] for s in STATUSES}
    for feature in load_plan(state):
        board[feature.status].append(card(state, feature, runs_of.get(feature.id, [])))
    return board


def card(state: Path, feature: Feature, runs: list[str]) -> dict[str, Any]:
    return {**feature.model_dump(), "verdicts": read_ledger(state, feature.id), "runs": runs}


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, IsADirectoryError):
        return None


def memory_files(state: Path) -> list[dict[str, Any]]:
    """summary.md and MEMORY.md, their text (None when missing)."""
    return [{"title": title, "anchor": name.split(".")[0].lower(), "path": str(state / name),
             "text": read_text(state / name)}
            for title, name in (("Summary", "summary.md"), ("Long memory", "MEMORY.md"))]


def identity_files(identity: Path) -> list[dict[str, Any]]:
    """Each `<identity>/<role>.md`: its lines split into lesson and provenance."""
    out = []
    for path in sorted(identity.glob("*.md")) if identity.is_dir() else []:
        if path.name == "README.md":
            continue
        lines = []
        for line in (read_text(path) or "").splitlines():
            if line.strip() and not line.startswith("#"):
                m = PROVENANCE.search(line)
                lines.append((line[: m.start()] if m else line, m.group(1) if m else ""))
        out.append({"name": path.name, "lines": lines})
    return out


def long_notes(state: Path) -> list[dict[str, str]]:
    """The long-form notes under memory/, newest first, with their text."""
    folder = state / "memory"
    out = []
    for path in sorted(folder.glob("*.md"), reverse=True) if folder.is_dir() else []:
        text = read_text(path) or ""
        first = text.splitlines()[0] if text else ""
        out.append({"name": path.name, "title": first.lstrip("#").strip() or path.name,
                    "text": text})
    return out
