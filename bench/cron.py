"""Curator benchmark, the cron case: one pass over a few new entries after a long history.

    .venv/bin/python bench/cron.py                         # 1k and 300k entries of history
    .venv/bin/python bench/cron.py --histories 1000,100000 --passes 5 --new 10

A cron job runs the curator every 30 minutes; each pass finds a few new raw.md entries
behind a history that earlier passes curated. For each history size N this writes
bench/curator.py's raw.md of N entries and its candidate record from three other missions
(N/20 lines), and curates them once ("history-s": that one run). Then, `--passes` times,
for each history in turn (alternating, so a change in the machine's load reaches each
alike), it appends `--new` entries from the same lesson pool, spread over the next 30
minutes (`curator.append_entries`), and times one curator pass over them in a fresh
subprocess (the curate() call, not the interpreter's start). The row is the pass of median time;
"min-s" and "max-s" are the fastest and the slowest. Each pass opens the curator database
(`<identity>/.curator.db`, `harness.curator.curatordb`), reads the lesson rows its new notes
touch (`harness.curator.lessondb`) and, when it appends candidates, writes back what
changed: "db-open-s" and "db-write-s" are the open and the write within the pass, "db-MiB"
and "record-MiB" the sizes of the database and of the candidate record after the passes.
With `--answers N`, each history's identity folder also holds N answers of a model-mode
judge (`harness.curator.curatordb`), which every pass consults about the notes it is unsure
of. Last, one more pass over the biggest history runs under
cProfile, and the top lines of its profile are printed.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import pstats
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parent))

import curator  # noqa: E402 - bench/curator.py: the generators and the child process

# the goal (issue 32): at 300k entries of history, a pass over 10 new ones takes < 0.3 s
# and at most 1.5x the same pass at 1k
GOAL_RATIO, GOAL_SECONDS = 1.5, 0.3
# harness.curator.lessondb's open and its write
TIMED = ("open_store", "_write")
COLUMNS = ("history", "passes", "new", "seconds", "min-s", "max-s", "cpu-s", "db-open-s",
           "db-write-s", "db-MiB", "record-MiB", "history-s")
WIDTH = {c: max(len(c), 7) for c in COLUMNS} | {"history": 10}


def _time_calls(module: ModuleType, name: str, spent: dict[str, float]) -> None:
    """Make `module.name` add the wall time of its calls to `spent[name]`."""
    real: Callable = getattr(module, name)

    def timed(*args, **kwargs):
        started = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            spent[name] += time.perf_counter() - started

    setattr(module, name, timed)


def child(state: str, identity: str, profile_lines: int) -> None:
    """One curator pass (`curator.measure`) with the database's open and write timed, and
    under cProfile when `profile_lines`; prints it as JSON."""
    from harness.curator import curate, lessondb  # noqa: F401 - imported before any profile

    spent = dict.fromkeys(TIMED, 0.0)
    for name in TIMED:
        _time_calls(lessondb, name, spent)
    profiler = cProfile.Profile() if profile_lines else None
    with profiler or contextlib.nullcontext():
        result = curator.measure(state, identity)
    result["open_s"] = spent["open_store"]
    result["write_s"] = spent["_write"]
    if profiler:
        text = io.StringIO()
        stats = pstats.Stats(profiler, stream=text)
        for order in ("cumulative", "tottime"):  # the calls that hold the time, then its sinks
            stats.sort_stats(order).print_stats(profile_lines)
        result["profile"] = text.getvalue()
    print(json.dumps(result))


def build_history(folder: Path, n: int, answers: int = 0) -> tuple[int, dict]:
    """raw.md of `n` entries and its candidate record (and `answers` judged pairs), curated
    once: the time of its last entry, and that run's report."""
    last = curator.generate(folder / "state", n)
    curator.seed_candidates(folder / "identity", n)
    if answers:
        seed_answers(folder / "identity", answers)
    return last, curator.run_child(folder)


def seed_answers(identity: Path, count: int) -> None:
    """`count` recorded answers about pairs of worker notes of six to ten words."""
    from harness.curator import curatordb

    rng = random.Random(count)
    words = [f"w{i}" for i in range(5000)]
    rows = curatordb.answer_rows({(("worker", rng.choice(("TRICK", "FAIL", "FORGOT"))),
                                   " ".join(rng.sample(words, rng.randint(6, 10))),
                                   " ".join(rng.sample(words, rng.randint(6, 10)))):
                                  rng.random() < 0.5 for _ in range(count)},
                                 "2026-01-01T00:00:00Z", "other")
    curatordb.append_answers(identity, rows)


def mib(path: Path) -> float:
    return path.stat().st_size / 2**20 if path.exists() else 0.0


def row(history: int, new: int, results: list[dict], first: dict, folder: Path) -> str:
    """The table's row: the pass of median time, the spread, the files' sizes."""
    times = sorted(r["seconds"] for r in results)
    median = sorted(results, key=lambda r: r["seconds"])[len(results) // 2]
    identity = folder / "identity"
    figures = (history, len(results), new, median["seconds"], times[0], times[-1],
               median["cpu"], median["open_s"], median["write_s"],
               sum(map(mib, identity.glob(".curator.db*"))), mib(identity / ".candidates.log"),
               first["seconds"])
    return " ".join(f"{f:>{WIDTH[c]}.3f}" if isinstance(f, float) else f"{f:>{WIDTH[c]}}"
                    for c, f in zip(COLUMNS, figures, strict=True))


def profile(folder: Path, history: int, last: int, new: int, lines: int) -> str:
    """One more pass over `new` entries, under cProfile: its top `lines` by cumulative time."""
    curator.append_entries(folder / "state", new, history, last, seed=0)
    result = curator.run_child(folder, __file__, "--child-profile", str(lines))
    return (f"one more pass over {new} new entries, {history:,} entries of history, under "
            f"cProfile: {result['seconds']:.3f} s (database open {result['open_s']:.3f} s, "
            f"write {result['write_s']:.3f} s)\n{result['profile'].strip()}")


def timed_passes(histories: list[int], folders: dict[int, Path], args: argparse.Namespace
                 ) -> tuple[dict[int, float], str]:
    """Build every history, then time the passes alternating between them, so that a change
    in the machine's load reaches every history alike; print a row per history. The median
    pass per history, and the profile of one more pass at the biggest."""
    last, first, results = {}, {}, {n: [] for n in histories}
    for n in histories:
        folders[n] = Path(tempfile.mkdtemp(prefix=f"curator-cron-{n}-"))
        last[n], first[n] = build_history(folders[n], n, args.answers)
    for p in range(max(1, args.passes)):
        for n in histories:
            last[n] = curator.append_entries(folders[n] / "state", args.new, n, last[n],
                                             seed=p + 1)
            results[n].append(curator.run_child(folders[n], __file__))
    for n in histories:
        print(row(n, args.new, results[n], first[n], folders[n]), flush=True)
    seconds = {n: sorted(r["seconds"] for r in results[n])[len(results[n]) // 2]
               for n in histories}
    big = max(histories)
    profiled = profile(folders[big], big, last[big], args.new, args.profile) if args.profile else ""
    return seconds, profiled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--histories", default="1000,300000",
                        help="raw.md entries of history, comma-separated")
    parser.add_argument("--passes", type=int, default=5, help="timed passes per history")
    parser.add_argument("--new", type=int, default=10, help="new raw.md entries per pass")
    parser.add_argument("--answers", type=int, default=0,
                        help="judged pairs recorded in each history's identity folder")
    parser.add_argument("--profile", type=int, default=25, metavar="LINES",
                        help="profile lines of one more pass at the biggest history; 0: none")
    parser.add_argument("--child", nargs=2, metavar=("STATE", "IDENTITY"), help=argparse.SUPPRESS)
    parser.add_argument("--child-profile", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child, args.child_profile)
        return
    histories = [int(s) for s in args.histories.split(",") if s.strip()]
    print(" ".join(f"{c:>{WIDTH[c]}}" for c in COLUMNS), flush=True)
    folders: dict[int, Path] = {}
    try:
        seconds, profiled = timed_passes(histories, folders, args)
    finally:
        for folder in folders.values():
            shutil.rmtree(folder, ignore_errors=True)
    if len(seconds) > 1:
        small, big = min(seconds), max(seconds)
        ratio = seconds[big] / seconds[small]
        print(f"\npass at {big:,} / at {small:,} entries of history: {ratio:.2f}x")
        ok = ratio <= GOAL_RATIO and seconds[big] < GOAL_SECONDS
        print(f"goal: <= {GOAL_RATIO:g}x and < {GOAL_SECONDS:g} s at {big:,}: "
              f"{'met' if ok else 'MISSED'}")
    if profiled:
        print(f"\n{profiled}")


if __name__ == "__main__":
    main()
