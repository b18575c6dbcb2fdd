"""The benchmark suite: one table of the project's figures, every one measured in this run.

    bench/run                 # everything
    bench/run --quick         # the same without the curator at 300k entries (and 300k history)
    bench/run --markdown      # the table as Markdown, for docs/benchmarks.md

Progress goes to stderr, the table to stdout. Timings of subprocesses are medians of
interleaved rounds (a noisy machine slows every command alike); the curator runs three times
per size (bench/curator.py); a bash tool call with and without bwrap 50 times each
(bench/sandbox.py); five passes over 10 new entries each time the cron case after
1k and 300k entries of history (bench/cron.py); the prompt sizes come from bench/history.py's
simulation; the context figures from bench/context.py's scripted 200-turn run.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import multiprocessing
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(ROOT))

import context  # noqa: E402 - bench/ is not a package
import history  # noqa: E402
import lessons  # noqa: E402
import sandbox  # noqa: E402 - bench/sandbox.py
import spine  # noqa: E402
import worktrees  # noqa: E402

from harness.config import IDENTITY_CHARS  # noqa: E402
from harness.state.memory import append_entry, make_entry, parse_entry  # noqa: E402

WRITERS = 16
CURATOR_SIZES = (10_000, 300_000)
CLUSTER_SIZES = (10_000, 100_000)  # curator clusters against the truth (bench/lessons.py)
CRON_HISTORIES = (1_000, 300_000)  # raw.md entries of history behind a cron pass
CRON_NEW = 10  # new entries per cron pass
PROMPT_RUNS = (10, 1_000, 10_000)


@dataclass
class Row:
    """One line of the table."""

    figure: str
    measured: str
    goal: str = ""
    met: bool | None = None


def say(text: str) -> None:
    print(f"bench: {text}", file=sys.stderr, flush=True)


def ms(seconds: float) -> str:
    """Milliseconds, with a decimal under 10 (a sandboxed call takes less than one)."""
    millis = seconds * 1000
    return f"{millis:.1f} ms" if millis < 10 else f"{millis:.0f} ms"


# ---- the machine ----


def path_python() -> str:
    """What `python3` on PATH is: its path, whether it is a shell shim, its version."""
    found = shutil.which("python3")
    if not found:
        return "none"
    with open(found, "rb") as f:
        shim = f.read(2) == b"#!"
    version = subprocess.run(["python3", "-c", "import platform; print(platform.python_version())"],
                             capture_output=True, text=True).stdout.strip()
    return f"{found}{' (a shell shim)' if shim else ''}, Python {version}"


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def header() -> str:
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    return (f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} · "
            f"{platform.system()} {platform.release()} {platform.machine()} · {cpu_model()} · "
            f"{os.cpu_count()} cores · load {load} at start · .venv Python "
            f"{platform.python_version()} · python3 on PATH: {path_python()}")


# A fixed pure-Python loop: this machine's speed drifts by more than half from one hour to
# the next, so the suite times this beside the curator to show how fast it was just then.
REFERENCE = "d = {}\nfor i in range(3_000_000):\n    d[i & 0xffff] = i"


def reference_row(when: str, runs: int = 3) -> Row:
    """The reference loop's median time, in fresh interpreters."""
    code = f"import time\nt = time.process_time()\n{REFERENCE}\nprint(time.process_time() - t)"
    times = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                  check=True).stdout) for _ in range(runs)]
    return Row(f"  machine speed {when}: a fixed Python loop (3M dict stores), "
               f"median of {runs}", f"{statistics.median(times):.2f} s")


# ---- (1) and (2): note and dry-run against the bare interpreter ----


def spine_rows(repeat: int) -> list[Row]:
    """Medians of `note`, dry-runs at 1k and 100k raw entries, and both bare interpreters."""
    with tempfile.TemporaryDirectory(prefix="suite-spine-") as tmp:
        small, large = spine.make_mission(Path(tmp), 1_000), spine.make_mission(Path(tmp), 100_000)
        t = spine.medians(spine.spine_commands(small, large), repeat, spine.bench_env())
    py3, venv = t["python3 -c pass"], t[".venv/bin/python -c pass"]
    note = t["run.sh note"]
    dry1, dry100 = (t["run.sh worker F-004 --dry-run (1k raw)"],
                    t["run.sh worker F-004 --dry-run (100k raw)"])
    each = f"median of {repeat}"
    return [
        Row(f"`python3 -c pass` (python3 on PATH), {each}", ms(py3)),
        Row(f"`.venv/bin/python -c pass`, {each}", ms(venv)),
        Row(f"`run.sh note`, {each}", ms(note)),
        Row("  note / `python3 -c pass` (PATH)", f"{note / py3:.2f}x", "≤ 3x", note <= 3 * py3),
        Row("  note / `.venv/bin/python -c pass`", f"{note / venv:.2f}x", "≤ 3x",
            note <= 3 * venv),
        Row(f"`run.sh worker F-004 --dry-run`, 1k raw entries, {each}", ms(dry1)),
        Row("  dry-run / `python3 -c pass` (PATH)", f"{dry1 / py3:.2f}x"),
        Row("  dry-run / `.venv/bin/python -c pass`", f"{dry1 / venv:.2f}x"),
        Row(f"`run.sh worker F-004 --dry-run`, 100k raw entries, {each}", ms(dry100)),
        Row("  dry-run 100k / 1k raw entries", f"{dry100 / dry1:.2f}x", "≤ 1.2x",
            dry100 <= 1.2 * dry1),
    ]


# ---- (3): the curator, through bench/curator.py ----


def curator_rows(sizes: list[int]) -> list[Row]:
    """Curator runs per size (median of 3), read from bench/curator.py's table."""
    # bench/curator.py prints a header (entries, seconds, ..., peak-MiB, ...), then a row per
    # size; columns are found by their header so that a new column cannot shift them
    argv = [sys.executable, str(BENCH / "curator.py"), "--sizes", ",".join(map(str, sizes))]
    found: dict[int, tuple[float, float, int]] = {}
    identity: dict[int, tuple[int, int, int]] = {}
    columns: list[str] = []
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) as proc:
        for line in proc.stdout:
            say(f"curator.py: {line.rstrip()}")
            if line.split()[:1] == ["entries"]:
                columns = line.split()
            fields = line.split()
            if columns and len(fields) == len(columns) and fields[0].isdigit():
                row = dict(zip(columns, fields, strict=True))
                found[int(fields[0])] = (float(row["seconds"]), float(row["peak-MiB"]),
                                         int(row["runs"]))
                identity[int(fields[0])] = (int(row["id-lines"]), int(row["id-max-chars"]),
                                            int(row["id-archived"]))
    if proc.returncode != 0 or set(found) != set(sizes):
        raise SystemExit(f"bench: {' '.join(argv)} exited {proc.returncode} with rows for "
                         f"{sorted(found)}; expected `entries seconds peak-MiB ...` per size")
    goals = {300_000: (10.0, 300.0)}  # issue 32: a heavy user's year across missions
    rows = []
    for n in sizes:
        seconds, peak, runs = found[n]
        max_s, max_mib = goals.get(n, (None, None))
        goal = " and ".join(g for g in (max_s and f"< {max_s:.0f} s",
                                        max_mib and f"< {max_mib:.0f} MiB") if g)
        met = None if not goal else ((max_s is None or seconds < max_s)
                                     and (max_mib is None or peak < max_mib))
        how = "one run" if runs == 1 else f"median of {runs}"
        rows.append(Row(f"curator, {n:,} raw entries ({how}; peak RSS)",
                        f"{seconds:.2f} s, {peak:.0f} MiB peak", goal, met))
    lines, chars, archived = identity[max(sizes)]
    rows.append(Row(f"identity after {max(sizes):,} entries: lines in the role files, the "
                    "biggest file, lines moved to identity/archive/",
                    f"{lines:,} lines, {chars:,} chars, {archived:,} archived",
                    f"each file <= {IDENTITY_CHARS:,} chars", chars <= IDENTITY_CHARS))
    return rows


def size_rows() -> list[Row]:
    """The curator's share of the harness, in lines (issue 32: half the code)."""
    def lines(folder: Path) -> int:
        return sum(len(p.read_text().splitlines()) for p in folder.rglob("*.py"))

    curator, harness = lines(ROOT / "harness" / "curator"), lines(ROOT / "harness")
    return [Row("lines of harness/curator/ (of harness/)", f"{curator:,} ({harness:,})",
                "≤ 2,500", curator <= 2500)]


# ---- (3b): the cron case, through bench/cron.py ----


def cron_rows(histories: list[int], passes: int = 5) -> list[Row]:
    """A curator pass over CRON_NEW new entries per size of history (median of `passes`),
    read from bench/cron.py's table, and the biggest history's over the smallest's."""
    argv = [sys.executable, str(BENCH / "cron.py"), "--histories", ",".join(map(str, histories)),
            "--passes", str(passes), "--new", str(CRON_NEW), "--profile", "0"]
    found: dict[int, float] = {}
    columns: list[str] = []
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) as proc:
        for line in proc.stdout:
            say(f"cron.py: {line.rstrip()}")
            fields = line.split()
            if fields[:1] == ["history"]:
                columns = fields
            elif columns and len(fields) == len(columns) and fields[0].isdigit():
                found[int(fields[0])] = float(dict(zip(columns, fields, strict=True))["seconds"])
    if proc.returncode != 0 or set(found) != set(histories):
        raise SystemExit(f"bench: {' '.join(argv)} exited {proc.returncode} with rows for "
                         f"{sorted(found)}; expected `history ... seconds ...` per size")
    rows = []
    for n in histories:
        goal = "< 0.3 s" if n >= 300_000 else ""  # the cron goal: at 300k, under 0.3 s
        rows.append(Row(f"curator pass over {CRON_NEW} new entries, {n:,} entries of history "
                        f"(median of {passes})", ms(found[n]), goal,
                        (found[n] < 0.3) if goal else None))
    if len(histories) > 1:
        small, big = min(histories), max(histories)
        ratio = found[big] / found[small]
        rows.append(Row(f"  pass at {big:,} / at {small:,} entries of history", f"{ratio:.2f}x",
                        "≤ 1.5x", ratio <= 1.5))
    return rows


def sandbox_rows(calls: int = 50) -> list[Row]:
    """A bash tool call with and without bwrap, in a running shell and with its start
    (bench/sandbox.py), medians of `calls`."""
    problem = sandbox.bwrap_problem()
    kinds = [k for k in sandbox.KINDS if k != "bwrap" or problem is None]
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as folder:
        times = sandbox.measure(calls, kinds, Path(folder))
    rows = [Row(f"bash tool {name} (median of {calls})", ms(statistics.median(seconds)))
            for name, seconds in times.items()]
    return rows + ([Row("bash tool call, sandbox: bwrap", f"not measured: {problem}")]
                   if problem else [])


def cluster_rows(sizes: tuple[int, ...]) -> list[Row]:
    """Pairwise precision and recall of the curator's clusters (bench/lessons.py)."""
    rows = []
    for n in sizes:
        f = lessons.measure(n)
        p, r = f.pairs.precision, f.pairs.recall
        goal, met = ("≥ 0.97 / ≥ 0.9", p >= 0.97 and r >= 0.9) if n == 100_000 else ("", None)
        rows.append(Row(f"curator clusters at {n // 1000}k: pairwise precision / recall",
                        f"{p:.3f} / {r:.3f} (curator {f.curate_seconds:.1f} s)", goal, met))
    return rows  # the goal at 100k is issue 13's


def corpus_rows() -> list[Row]:
    """Promotion precision and recall on each labelled corpus (bench/judge_bound.py): the
    rules alone, a judge that never errs and one wrong once in ten answers. Development
    corpora set the judge's constants; the held-out ones (the real agents' notes among
    them) carry the goals."""
    sys.path.insert(0, str(ROOT / "tests"))
    import corpus_quality
    import judge_bound

    goals = {"rules": (0.95, None), "perfect": (0.97, 0.95), "noisy": (0.90, 0.85)}
    names = {"rules": "rules only", "perfect": "a judge that never errs",
             "noisy": "a judge wrong once in ten"}
    rows, development = [], corpus_quality.development_corpora()
    for folder in [*development, *corpus_quality.held_out_corpora()]:
        held_out = folder not in development
        figures = judge_bound.figures(folder)
        for judge, (p_goal, r_goal) in goals.items():
            p, r = figures[judge]["precision"], figures[judge]["recall"]
            goal = f"P ≥ {p_goal}" + (f", R ≥ {r_goal}" if r_goal else "")
            met = p >= p_goal and (r_goal is None or r >= r_goal)
            rows.append(Row(f"{folder.name} ({'held out' if held_out else 'development'}), "
                            f"{names[judge]}: precision / recall", f"{p:.3f} / {r:.3f}",
                            goal if held_out else "", met if held_out else None))
    return rows


def judge_cost_rows(history: int = 100_000, passes: int = 5) -> list[Row]:
    """A judged cron pass over CRON_NEW new entries after `history` entries (one lesson in
    ten distinct: 10k lessons at 100k), bench/judge_cost.py: tokens of its one call."""
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "judge_cost.py"), "--history",
                          str(history), "--passes", str(passes), "--new", str(CRON_NEW)],
                         capture_output=True, text=True, check=True).stdout
    median = {k: float(v) for k, v in re.findall(r"^median (\w+): (\S+)$", out, re.M)}
    lessons = history // 10
    return [Row(f"judged cron pass, {CRON_NEW} new entries, {lessons:,} lessons of history: "
                f"input / output tokens of its calls (median of {passes})",
                f"{median['input_tokens']:,.0f} / {median['output_tokens']:,.0f}",
                "≤ 3,000 input", median["input_tokens"] <= 3000),
            Row(f"judged cron pass: notes asked, wall time (median of {passes})",
                f"{median['notes']:g}, {median['seconds']:.2f} s", "", None)]


# ---- (4): concurrent writers ----


def _writer(state: Path, tag: str, count: int, ready) -> None:
    """Once all are ready, append `count` notes as `note` does: check, redact, locked append."""
    ready.wait()
    for i in range(count):
        append_entry(state, make_entry("worker", "F-004", "TRICK", f"{tag} note {i}", run=tag))


def writer_round(state: Path, tag: str, writers: int, count: int) -> tuple[float, bool]:
    """Seconds for `writers` processes to append `count` notes each; whether each landed once."""
    raw = state / "raw.md"
    before = raw.read_bytes().count(b"\n")
    ctx = multiprocessing.get_context("fork")
    ready = ctx.Barrier(writers + 1)
    procs = [ctx.Process(target=_writer, args=(state, f"{tag}-w{w:02d}", count, ready))
             for w in range(writers)]
    for p in procs:
        p.start()
    ready.wait()  # the clock starts when every writer is up and waiting
    started = time.perf_counter()
    for p in procs:
        p.join()
    seconds = time.perf_counter() - started
    lines = raw.read_text(encoding="utf-8").splitlines()
    texts = collections.Counter(e.text for e in map(parse_entry, lines)
                                if e and e.run and e.run.startswith(f"{tag}-"))
    expected = {f"{tag}-w{w:02d} note {i}" for w in range(writers) for i in range(count)}
    exact = (len(lines) == before + writers * count and set(texts) == expected
             and all(n == 1 for n in texts.values()) and all(p.exitcode == 0 for p in procs))
    return seconds, exact


def writer_rows(count: int, rounds: int) -> list[Row]:
    """Notes per second from WRITERS processes at once, and from one writing as many alone."""
    notes = WRITERS * count
    times: dict[int, list[float]] = {WRITERS: [], 1: []}
    exact = True
    with tempfile.TemporaryDirectory(prefix="suite-writers-") as tmp:
        state = Path(tmp) / ".harness"
        shutil.copytree(ROOT / ".harness.example", state)
        for r in range(rounds):
            for writers in times:  # interleaved, so load changes hit both alike
                seconds, ok = writer_round(state, f"r{r}n{writers}", writers, notes // writers)
                times[writers].append(seconds)
                exact = exact and ok
    many, alone = statistics.median(times[WRITERS]), statistics.median(times[1])
    return [
        Row(f"notes/s, {WRITERS} writer processes × {count} notes at once, median of {rounds}",
            f"{notes / many:,.0f} notes/s", "each note once", exact),
        Row(f"  for reference: 1 process writing {notes:,} notes",
            f"{notes / alone:,.0f} notes/s"),
    ]


# ---- (5): prompt size after a simulated history ----


def prompt_rows(checkpoints: tuple[int, ...]) -> tuple[list[Row], str]:
    snapshots, mission, seconds = history.simulate(list(checkpoints))
    tokens = {s.runs: s.tokens for s in snapshots}
    first, last = checkpoints[0], checkpoints[-1]
    rows = [Row(f"worker prompt after {n:,} simulated runs", f"{tokens[n]:,} tokens")
            for n in checkpoints]
    ratio = tokens[last] / tokens[first]
    rows.append(Row(f"  prompt at {last:,} / at {first:,} runs", f"{ratio:.2f}x", "≤ 1.1x",
                    ratio <= 1.1))
    if len(checkpoints) > 2:
        mid = checkpoints[-2]
        rows.append(Row(f"  prompt at {last:,} / at {mid:,} runs",
                        f"{tokens[last] / tokens[mid]:.2f}x"))
    curator = f"{mission.curator_passes} curator passes took {mission.curator_seconds:.0f} s"
    note = (f"history: {mission.runs:,} runs simulated in {seconds:.0f} s ({len(mission.plan):,} "
            f"features, {mission.notes:,} notes, {mission.long_notes} long notes; {curator})")
    return rows, note


# ---- (6): a long tool loop within its context budget ----


def context_rows(turns: int = 200, budget: int = 48_000, limit: int = 60_000) -> list[Row]:
    """bench/context.py: input tokens sent and the cacheable share, clearing and not."""
    figures = context.measure(turns, budget, limit)
    batches, every, none = (figures[k] for k in (
        "clearing in batches", "clearing every turn", "no clearing, no limit"))
    where = f"{turns}-turn run, budget {budget // 1000}k, API limit {limit // 1000}k tokens"
    return [
        Row(f"{where}: finished, requests refused", f"{batches.status}, {batches.refused}",
            "finished, 0", batches.status == "finished" and batches.refused == 0),
        Row("  input tokens sent, clearing in batches / no clearing (limit lifted)",
            f"{batches.total / 1e6:.1f}M / {none.total / 1e6:.1f}M"),
        Row("  input tokens in a prefix shared with the previous request, batches",
            f"{batches.cached_share:.1%}", "≥ 80%", batches.cached_share >= 0.8),
        Row("  the same, clearing a little every turn", f"{every.cached_share:.1%}"),
    ]


# ---- output ----


def met_text(met: bool | None) -> str:
    return "" if met is None else ("yes" if met else "NO")


def plain_table(rows: list[Row]) -> str:
    fw, mw, gw = (max(len(getattr(r, a)) for r in rows + [Row("figure", "measured", "goal")])
                  for a in ("figure", "measured", "goal"))
    return "\n".join(f"{f:<{fw}}  {m:>{mw}}  {g:<{gw}}  {met}".rstrip() for f, m, g, met in
                     [("figure", "measured", "goal", "met")]
                     + [(r.figure, r.measured, r.goal, met_text(r.met)) for r in rows])


def markdown_table(rows: list[Row]) -> str:
    out = ["| figure | measured | goal | met |", "|---|---:|---|---|"]
    out += [f"| {r.figure.strip()} | {r.measured} | {r.goal} | {met_text(r.met)} |"
            for r in rows]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="skip the curator at 300k entries and the cron pass after 300k")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--repeat", type=int, default=15, help="rounds per subprocess timing")
    parser.add_argument("--notes", type=int, default=200, help="notes per concurrent writer")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of concurrent writers")
    parser.add_argument("--loop-rounds", type=int, default=3,
                        help="rounds of 1 loop against 4 loops in worktrees mode (--quick: 1)")
    args = parser.parse_args()
    started = time.perf_counter()
    head = header()
    say(f"note and dry-run against the bare interpreter, {args.repeat} interleaved rounds")
    rows = spine_rows(args.repeat)
    say(f"{WRITERS} concurrent writers, {args.rounds} rounds of {args.notes} notes each")
    rows += writer_rows(args.notes, args.rounds)
    say("bash tool calls with and without the bwrap sandbox (bench/sandbox.py)")
    rows += sandbox_rows()
    sizes = [n for n in CURATOR_SIZES if not (args.quick and n >= 300_000)]
    say(f"curator at {', '.join(f'{n:,}' for n in sizes)} raw entries")
    rows.append(reference_row("before the curator runs"))
    rows += curator_rows(sizes) + size_rows()
    histories = [n for n in CRON_HISTORIES if not (args.quick and n >= 300_000)]
    say(f"curator passes over {CRON_NEW} new entries after "
        f"{', '.join(f'{n:,}' for n in histories)} entries of history")
    rows += cron_rows(histories)
    rows.append(reference_row("after them"))
    say("curator clusters against the truth at 10k and 100k entries (bench/lessons.py)")
    rows += cluster_rows(CLUSTER_SIZES)
    say("promotions on the labelled corpora, with and without a judge (bench/judge_bound.py)")
    rows += corpus_rows()
    say("a judged cron pass after 10k lessons of history (bench/judge_cost.py)")
    rows += judge_cost_rows()
    say(f"simulating {PROMPT_RUNS[-1]:,} runs for the worker prompt's size")
    prompt, history_note = prompt_rows(PROMPT_RUNS)
    rows += prompt
    say("a 200-turn tool loop against the fake Messages API, three ways (bench/context.py)")
    rows += context_rows()
    loop_rounds = 1 if args.quick else args.loop_rounds
    say(f"1 loop against 4 loops in worktrees mode, {loop_rounds} round(s) (bench/worktrees.py)")
    rows += [Row(*figure) for figure in worktrees.figures(loop_rounds)]
    took = time.perf_counter() - started
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    footer = f"{history_note}; whole suite {took:.0f} s; load {load} at end"
    if args.markdown:
        print(f"Measured {head}.\n\n{markdown_table(rows)}\n\n{footer[0].upper()}{footer[1:]}.")
    else:
        print(f"{head}\n\n{plain_table(rows)}\n\n{footer}")


if __name__ == "__main__":
    main()
