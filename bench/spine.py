"""Spine benchmark: `run.sh note` and `run.sh worker --dry-run` against bare interpreter start.

Prints medians of repeated real subprocess runs, all measured in this one run:
  - `python3 -c pass` (the python3 on PATH) and `.venv/bin/python -c pass`
  - `run.sh note` (goal: within 3x of the bare interpreter)
  - `run.sh worker F-004 --dry-run` with 1k and 100k raw.md entries (goal: 100k within 1.2x of 1k)

Usage: .venv/bin/python bench/spine.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN_SH = ROOT / "run.sh"
LINE = ("[2026-11-18T09:12:45Z] worker F-{f:03d} {kind}: lesson {i} about the build, {pad} "
        "(run 17634{i:05d}-worker-F-{f:03d})\n")
KINDS = ("TRICK", "GOTCHA", "DECISION", "FAIL", "FORGOT", "-")


def medians(commands: dict[str, tuple[list[str], Path]], repeat: int,
            env: dict[str, str]) -> dict[str, float]:
    """Median seconds per command; rounds interleave the commands so drift hits all alike."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, (argv, cwd) in commands.items():
            start = time.perf_counter()
            subprocess.run(argv, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(ts) for name, ts in times.items()}


def make_mission(folder: Path, entries: int) -> Path:
    project = folder / f"mission-{entries}"
    shutil.copytree(ROOT / ".harness.example", project / ".harness")
    with open(project / ".harness" / "raw.md", "w") as f:
        for i in range(entries):
            f.write(LINE.format(f=i % 40, kind=KINDS[i % 6], i=i, pad="x" * (i % 60)))
    return project


def bench_env() -> dict[str, str]:
    """The caller's environment without harness variables, so runs use the missions given."""
    return {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}


def spine_commands(small: Path, large: Path) -> dict[str, tuple[list[str], Path]]:
    """What the spine benchmark times: bare interpreters, `note`, dry runs at 1k and 100k."""
    venv_python = str(ROOT / ".venv/bin/python")
    return {
        "python3 -c pass": (["python3", "-c", "pass"], small),
        ".venv/bin/python -c pass": ([venv_python, "-c", "pass"], small),
        "run.sh note": ([str(RUN_SH), "note", "TRICK", "benchmark note"], small),
        "run.sh worker F-004 --dry-run (1k raw)": (
            [str(RUN_SH), "worker", "F-004", "--dry-run"], small),
        "run.sh worker F-004 --dry-run (100k raw)": (
            [str(RUN_SH), "worker", "F-004", "--dry-run"], large),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=21)
    args = parser.parse_args()
    env = bench_env()
    subprocess.run([str(RUN_SH), "--help"], check=True, stdout=subprocess.DEVNULL)  # bootstrap
    with tempfile.TemporaryDirectory() as tmp:
        small, large = make_mission(Path(tmp), 1_000), make_mission(Path(tmp), 100_000)
        base = medians(spine_commands(small, large), args.repeat, env)
    print(f"spine benchmark, median of {args.repeat} runs, {sys.platform}, {os.cpu_count()} cores")
    print(f"{'what':<42} {'median ms':>10}")
    for name, seconds in base.items():
        print(f"{name:<42} {seconds * 1000:>10.1f}")
    note = base["run.sh note"]
    print(f"note / python3 -c pass:            {note / base['python3 -c pass']:.2f}x (goal <= 3x)")
    print(f"note / .venv/bin/python -c pass:   {note / base['.venv/bin/python -c pass']:.2f}x")
    ratio = base["run.sh worker F-004 --dry-run (100k raw)"] / base[
        "run.sh worker F-004 --dry-run (1k raw)"]
    print(f"dry-run 100k / 1k raw entries:     {ratio:.2f}x (goal <= 1.2x)")


if __name__ == "__main__":
    main()
