"""Curator benchmark: time and peak memory of one curator run over a big raw.md.

    .venv/bin/python bench/curator.py                      # 300k entries: the goal
    .venv/bin/python bench/curator.py --sizes 10000,100000

For each size it writes a realistic raw.md into a temp dir: every kind mixed,
three roles, hundreds of features and runs, dates over several months, about
one line in 100 that does not parse, and lessons drawn from a pool of N/10
distinct ones (one distinct lesson per ten entries, all of them used), each
noted by one role and repeated in three phrasings with a long-tailed
popularity. The identity folder starts with a candidate record from three
other missions (N/20 lines) sharing part of the pool, so cross-mission
promotion has work to do. Each run happens in a fresh subprocess, which
reports its own wall time and CPU time; "peak-MiB" is its peak resident set
(the kernel's high-water mark, and the samples taken every 20 ms while it runs).
bench/cron.py times the cron case with the same generators: a pass over a few new
entries after a long history.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CMDS = ["psql -f", "pnpm test", "pnpm build", "docker compose up -d", "git stash -u",
        "pytest -k", "curl -s", "jq -r", "uv run pytest", "npx playwright test",
        "alembic upgrade", "kubectl logs -f", "cargo test", "go test ./...", "make -n",
        "rg --hidden", "gh pr checks", "npx tsx", "terraform plan", "helm upgrade"]
OBJECTS = ["migrations", "seed files", "fixtures", "snapshots", "env files", "lockfile",
           "build cache", "test database", "api routes", "worker queue", "schema", "logs"]
EFFECTS = [("applies the {o} in filename order", "runs the {o} sorted by file name"),
           ("skips the {o} unless you pass --all", "ignores the {o} without --all"),
           ("needs the {o} to exist first", "fails when the {o} are missing"),
           ("caches the {o} between runs", "keeps the {o} cached from one run to the next"),
           ("rewrites the {o} in place", "changes the {o} on disk directly"),
           ("prints the {o} as json", "outputs the {o} in json format")]
PHRASES = ["{c} {p} {e}", "running `{c} {p}` {e2}", "{e2}: use {c} {p}"]
PLAIN = ["{f} done, tests green", "started on {f}", "{f} verified via curl + DB row inspection",
         "{f} needs a migration, writing it now", "read the plan, {f} is next"]
TOPICS = ["db", "auth", "api", "styling", "tests", "deploy", "cache", "queue", "logging"]
# the goal (issue 32): a first pass over 300k entries, a heavy user's year across missions
GOAL_ENTRIES, GOAL_SECONDS, GOAL_MIB = 300_000, 10.0, 300.0
KINDS = ["-"] * 30 + ["lesson"] * 61 + ["DECISION"] * 8 + ["?"] * 1


LESSON_KINDS = ["TRICK"] * 35 + ["GOTCHA"] * 17 + ["FAIL"] * 26 + ["FORGOT"] * 22


def lesson(k: int, phrasing: int) -> tuple[str, str, str]:
    """Distinct lesson `k`: the role that notes it, its kind, and its text in one of three
    phrasings; the path makes each lesson distinct."""
    rng = random.Random(k)
    role = "worker" if rng.random() < 0.8 else "validator"
    kind = rng.choice(LESSON_KINDS)
    cmd = rng.choice(CMDS)
    obj = rng.choice(OBJECTS)
    effect, effect2 = rng.choice(EFFECTS)
    path = f"src/{rng.choice(OBJECTS).split()[0]}{k % 997}/part{k // 997}.ts"
    text = PHRASES[phrasing].format(c=cmd, p=path, e=effect.format(o=obj),
                                    e2=effect2.format(o=obj))
    return role, kind, f"forgot that {text}" if kind == "FORGOT" else text


def pick_lesson(rng: random.Random, pool: int, fresh: list[int]) -> int:
    """A lesson not seen yet about one time in five (so all get used), else a popular one."""
    if fresh and rng.random() < 0.2:
        return fresh.pop()
    return int(pool * rng.random() ** 3)  # a long tail: the first lessons recur most


def entry_line(rng: random.Random, t: int, pool: int, fresh: list[int]) -> str:
    """One raw.md line at time `t`: a note of a random kind (a lesson from a pool of `pool`,
    taking from `fresh` as `pick_lesson` does), or about one time in 100 a line that does
    not parse."""
    kind = rng.choice(KINDS)
    if kind == "lesson":
        role, kind, text = lesson(pick_lesson(rng, pool, fresh), rng.randrange(3))
    else:
        role = rng.choice(("worker", "worker", "validator", "planner"))
    feature = f"F-{rng.randint(1, 400):03d}"
    run = f"{t - rng.randint(0, 3000)}-{role}-{feature}"
    ts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
    if kind == "?":
        return rng.choice(["npm WARN deprecated glob@7.2.3", "", "Traceback (most recent call "
                           "last):", f"[{ts[:10]}] {role} broken line"])
    if kind == "-":
        return f"[{ts}] {role} {feature} -: {rng.choice(PLAIN).format(f=feature)} (run {run})"
    if kind == "DECISION":
        topic = rng.choice(TOPICS)
        return f"[{ts}] planner - DECISION: {topic}: use option {rng.randint(1, 40)} for {topic}"
    return f"[{ts}] {role} {feature} {kind}: {text} (run {run})"


def generate(state: Path, n: int, seed: int = 1) -> int:
    """Write a raw.md of `n` lines into `state`; the time of its last line."""
    rng = random.Random(seed)
    pool = max(n // 10, 10)
    fresh = list(range(pool))
    rng.shuffle(fresh)
    t = 1767225600  # 2026-01-01
    step = max(1, 180 * 86400 // max(n, 1))  # spread over about six months
    state.mkdir(parents=True, exist_ok=True)
    with open(state / "raw.md", "w", encoding="utf-8") as out:
        buf = []
        for _ in range(n):
            t += rng.randint(1, 2 * step)
            buf.append(entry_line(rng, t, pool, fresh))
            if len(buf) >= 10000:
                out.write("\n".join(buf) + "\n")
                buf = []
        if buf:
            out.write("\n".join(buf) + "\n")
    return t


def append_entries(state: Path, count: int, history: int, t: int, seed: int,
                   seconds: int = 1800) -> int:
    """Append `count` lines to raw.md, spread over the `seconds` after time `t`, drawn like
    those of `generate`'s raw.md of `history` lines (the same lesson pool, now and then a
    lesson it never saw); the time of the last one."""
    rng = random.Random(seed)
    pool = max(history // 10, 10)
    fresh = list(range(pool + seed * count, pool + (seed + 1) * count))  # new to the pool
    with open(state / "raw.md", "a", encoding="utf-8") as out:
        for _ in range(count):
            t += rng.randint(1, 2 * seconds // count)
            out.write(entry_line(rng, t, pool, fresh) + "\n")
    return t


def seed_candidates(identity: Path, n: int, seed: int = 2) -> None:
    """A candidate record from three other missions sharing part of the lesson pool."""
    rng = random.Random(seed)
    pool = max(n // 10, 10)
    identity.mkdir(parents=True, exist_ok=True)
    with open(identity / ".candidates.log", "w", encoding="utf-8") as out:
        for i in range(max(n // 20, 1)):
            mission = rng.choice(("alpha", "beta", "gamma"))
            role, kind, text = lesson(rng.randrange(pool), rng.randrange(3))
            if kind == "GOTCHA":
                continue
            feature = f"F-{rng.randint(1, 400):03d}"
            out.write(f"seed{mission}:{i}\t2025-12-01T00:00:00Z\t{mission}\t{role}\t{kind}\t"
                      f"{feature}\t{1764547200 + i}-{role}-{feature}\t{text}\n")


def measure(state: str, identity: str) -> dict:
    """One curator pass, timed: its wall and CPU time, its peak RSS, and what it did."""
    from harness.curator.curate import CuratorSettings, curate

    started, cpu = time.perf_counter(), time.process_time()
    report = curate(Path(state), Path(identity), "bench", CuratorSettings(),
                    now="2026-07-01T00:00:00Z")
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    own = resource.getrusage(resource.RUSAGE_SELF)
    return {"seconds": seconds, "cpu": cpu, "curator_mib": own.ru_maxrss / 1024,
            "archived": report.archived, "promoted": len(report.promoted),
            "unparsed": report.unparsed, **identity_figures(Path(identity))}


def identity_figures(identity: Path) -> dict:
    """The identity files after the run: their lines, the biggest one's characters (each
    must stay within the bound the prompt shows whole), and the lines moved to the archive."""
    files = [p.read_text(encoding="utf-8") for p in identity.glob("*.md")]
    archive = sum(p.read_text(encoding="utf-8").count("\n")
                  for p in (identity / "archive").glob("*.md"))
    return {"identity_lines": sum(t.count("\n") for t in files),
            "identity_chars": max(map(len, files), default=0), "identity_archived": archive}


def child(state: str, identity: str) -> None:
    """Run one curator pass and print what `measure` found, as JSON."""
    print(json.dumps(measure(state, identity)))


def rss_mib(pid: int) -> float:
    """A process's resident set now, 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024
    except (OSError, StopIteration):
        return 0.0


def run_child(folder: Path, script: str = __file__, *flags: str) -> dict:
    """One curator run in a child process (`script --child STATE IDENTITY [flags]`), its
    report plus its peak resident set, sampled from here every 20 ms too (a sampler in
    the child would take the curator's interpreter lock)."""
    proc = subprocess.Popen([sys.executable, script, "--child", str(folder / "state"),
                             str(folder / "identity"), *flags], stdout=subprocess.PIPE,
                            text=True)
    peak = 0.0
    while proc.poll() is None:
        peak = max(peak, rss_mib(proc.pid))
        time.sleep(0.02)
    out = proc.stdout.read()
    proc.stdout.close()
    if proc.returncode != 0:
        raise SystemExit(f"curator bench child exited {proc.returncode}")
    result = json.loads(out.strip().splitlines()[-1])
    # the samples can miss a short spike; the kernel's high-water mark does not
    result["peak_mib"] = max(peak, result["curator_mib"])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=str(GOAL_ENTRIES))
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per size, each on a fresh copy; the row is the run of "
                             "median time")
    parser.add_argument("--child", nargs=2, metavar=("STATE", "IDENTITY"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    print(f"{'entries':>10} {'runs':>4} {'seconds':>8} {'cpu-s':>8} "
          f"{'peak-MiB':>9} {'archived':>9} "
          f"{'promoted':>9} {'id-lines':>8} {'id-max-chars':>12} {'id-archived':>11}")
    for n in sizes:
        tmp = Path(tempfile.mkdtemp(prefix=f"curator-bench-{n}-"))
        try:
            generate(tmp / "data" / "state", n)
            seed_candidates(tmp / "data" / "identity", n)
            results = []
            for _ in range(max(1, args.repeat)):
                shutil.rmtree(tmp / "run", ignore_errors=True)
                shutil.copytree(tmp / "data", tmp / "run")
                results.append(run_child(tmp / "run"))
            result = sorted(results, key=lambda r: r["seconds"])[len(results) // 2]
            print(f"{n:>10} {len(results):>4} {result['seconds']:>8.2f} {result['cpu']:>8.2f} "
                  f"{result['peak_mib']:>9.1f} {result['archived']:>9} "
                  f"{result['promoted']:>9} {result['identity_lines']:>8} "
                  f"{result['identity_chars']:>12} {result['identity_archived']:>11}",
                  flush=True)
            if n == GOAL_ENTRIES:
                ok = result["seconds"] < GOAL_SECONDS and result["peak_mib"] < GOAL_MIB
                print(f"goal at {n:,} entries: < {GOAL_SECONDS:g} s and < {GOAL_MIB:g} MiB: "
                      f"{'met' if ok else 'MISSED'}", flush=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
