"""A mission to report on: the demo's cycle, then a worker run and notes that hold markup."""

from __future__ import annotations

import json
from pathlib import Path

from harness.ops.demo import curate_demo, run_demo
from harness.paths import Paths
from harness.run.runner import run_role
from harness.state import memory

ROOT = Path(__file__).resolve().parent.parent
HOSTILE_SCRIPT = ROOT / "tests" / "data" / "hostile-worker.yaml"
HOSTILE_NOTE = "<script>window.pwned = 5</script> in a long note"


def build_mission(base: Path) -> tuple[Paths, str]:
    """The demo mission in `base`, plus a hostile worker run on F-005; (paths, its run id)."""
    paths, _ = run_demo(ROOT, base)
    curate_demo(paths)
    result = run_role(paths, "worker", "F-005", backend="scripted",
                      backend_options={"script": str(HOSTILE_SCRIPT)})
    assert result.run_id is not None, result.message
    memory.write_long_note(paths.state, "worker", "markup", f"# {HOSTILE_NOTE}\n\nbody <b>x</b>")
    summary = paths.state / "summary.md"
    summary.write_text(summary.read_text() + "\n- <script>window.pwned = 6</script>\n")
    return paths, result.run_id


def feature_ids(state: Path) -> list[str]:
    return [f["id"] for f in json.loads((state / "features.json").read_text())]


def tool_calls(state: Path, run_id: str) -> int:
    lines = (state / "runs" / run_id / "transcript.jsonl").read_text().splitlines()
    return sum(json.loads(line).get("event") == "tool_call" for line in lines)
