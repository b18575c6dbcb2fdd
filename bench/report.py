"""`run.sh report` over a simulated mission of 10,000 runs: first report and incremental ones.

    .venv/bin/python bench/report.py                 # 10,000 runs, 3 rounds each
    .venv/bin/python bench/report.py --runs 2000 --rounds 5

The mission comes from bench/history.py's simulator (plan, ledger verdicts, raw.md notes,
long notes, curator passes), and each simulated run also leaves the run record a real run
leaves, written through the harness's own RunRecord: manifest.json with usage and cost,
prompt.md (the worker prompt of a real dry run, about 9 KB), and a transcript.jsonl of three
turns with a bash call each. Timed, as medians of `--rounds`: the first report into an empty
folder; an incremental report after 10 new runs; one with nothing new. Sizes are what each
wrote. The simulation itself is not timed.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))

import history  # noqa: E402 - bench/ is not a package

from harness.ops.report.site import write_report  # noqa: E402
from harness.state.runs import start_run  # noqa: E402

NEW_RUNS = 10


class Recorder:
    """Leaves a run record for each simulated run, as the runner would."""

    def __init__(self, prompt: str) -> None:
        self.prompt, self.rng = prompt, random.Random(3)

    def __call__(self, state: Path, run_id: str, role: str, fid: str, started: float,
                 cost: float, exit_code: int, result: str) -> None:
        (state / "runs" / run_id).mkdir(parents=True, exist_ok=True)
        record = start_run(state, run_id, {"role": role, "feature": fid, "backend": "anthropic",
                                           "model": "claude-sonnet-4-5"})
        record.manifest["started_at"] = history.iso(started)
        record.write_file("prompt.md", self.prompt)
        rng, usage = self.rng, {"input_tokens": 0, "output_tokens": 0,
                                "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        for turn in range(1, 4):
            step = {"input_tokens": rng.randint(500, 3000), "output_tokens": rng.randint(80, 900),
                    "cache_creation_input_tokens": rng.randint(0, 4000),
                    "cache_read_input_tokens": rng.randint(0, 9000)}
            usage = {k: usage[k] + v for k, v in step.items()}
            command = rng.choice(history.CMDS)
            record.record({"event": "model_turn", "turn": turn, "stop_reason": "tool_use",
                           "usage": step, "content": [
                               {"type": "text", "text": f"Turn {turn} on {fid}: trying {command}"},
                               {"type": "tool_use", "id": f"t{turn}", "name": "bash",
                                "input": {"command": command}}]})
            output = "\n".join(f"{command}: line {i}" for i in range(rng.randint(3, 60)))
            record.record({"event": "tool_call", "turn": turn, "id": f"t{turn}", "name": "bash",
                           "input": {"command": command}, "result": output + "\n[exit code 0]",
                           "is_error": False})
        record.finish("finished", exit_code, cost_usd=cost, usage=usage, turns=3,
                      outcome="finished", result=result,
                      finished_at=history.iso(started + rng.randint(60, 1500)))


def simulate(folder: Path, runs: int) -> history.Mission:
    mission = history.new_mission(folder, folder / "identity", "textstats")
    mission.recorder = Recorder(history.worker_prompt(mission))  # leaves one dry-run record
    while mission.runs < runs:
        mission.run_once()
    mission.save_plan()
    return mission


def size_of(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def timed(mission: history.Mission, out: Path) -> tuple[float, object]:
    started = time.perf_counter()
    written = write_report(mission.state, mission.identity, out)
    return time.perf_counter() - started, written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    shm = Path("/dev/shm")
    where = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="report-bench-", dir=where) as tmp:
        started = time.perf_counter()
        mission = simulate(Path(tmp) / "mission", args.runs)
        print(f"{mission.runs} runs simulated in {time.perf_counter() - started:.0f} s, "
              f"{len(mission.plan)} features; run records {size_of(mission.state / 'runs'):,} "
              "bytes")
        firsts, out = [], Path(tmp) / "report"
        for _ in range(args.rounds):
            shutil.rmtree(out, ignore_errors=True)
            seconds, written = timed(mission, out)
            firsts.append(seconds)
        print(f"first report: median {statistics.median(firsts):.2f} s of {args.rounds} "
              f"({', '.join(f'{s:.2f}' for s in firsts)}); {written.pages:,} files, "
              f"{written.bytes:,} bytes ({size_of(out):,} on disk with the cache)")
        rows = []
        for _ in range(args.rounds):
            while mission.runs < args.runs + NEW_RUNS * (len(rows) + 1):
                mission.run_once()
            mission.save_plan()
            rows.append(timed(mission, out))
        print(f"after {NEW_RUNS} new runs: median {statistics.median(s for s, _ in rows):.2f} s "
              f"of {args.rounds}; wrote {rows[-1][1].run_pages} run pages, "
              f"{rows[-1][1].pages} files, {rows[-1][1].bytes:,} bytes")
        idle = [timed(mission, out) for _ in range(args.rounds)]
        print(f"nothing new: median {statistics.median(s for s, _ in idle):.2f} s; wrote "
              f"{idle[-1][1].pages} files, {idle[-1][1].bytes:,} bytes")


if __name__ == "__main__":
    main()
