"""Prompt size after a simulated mission history: the worker's prompt at run 10 vs run 10,000.

    .venv/bin/python bench/history.py                    # checkpoints 10,1000,10000
    .venv/bin/python bench/history.py --runs 10,100,10000

An earlier mission of 2,000 simulated runs first fills the shared identity folder (identity
is cross-mission memory); the measured mission then starts from a copy of .harness.example,
and the curator runs just before each checkpoint. Each simulated run
does what a real one leaves on disk, through the harness's own functions: a progress.log
line, a ledger verdict for the feature (validator runs), a few raw.md notes of mixed kinds
(lessons recur across workers and features, so promotion has work to do), now and then a
long-form note under memory/. When the plan has no pending feature left a planner run adds
a batch of features. The curator runs every 50 runs, as a cron job would. At each
checkpoint `worker next` is dry-run and its prompt.md measured with memory.estimate_tokens.
Run records, locks and git are not simulated: no prompt reads them.
"""

from __future__ import annotations

import argparse
import calendar
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.curator.curate import CuratorSettings, curate  # noqa: E402
from harness.paths import Paths  # noqa: E402
from harness.run.runner import run_role  # noqa: E402
from harness.state import memory  # noqa: E402 - the path above makes a checkout importable
from harness.state.ledger import append_progress, append_verdict  # noqa: E402

CURATE_EVERY = 50
PREVIOUS_MISSION_RUNS = 2000  # the earlier mission whose lessons fill identity/
BATCH = 25  # features a planner run adds when none is pending
PASS_RATE = 0.7
MAX_ATTEMPTS = 3  # .harness.example/config.yaml
LONG_NOTE_RATE = 0.03
START = "2026-11-18T15:23:10Z"  # the example mission's last progress line

CMDS = ["python3 -m unittest -q", "pytest -x -k", "ruff check --fix", "git stash -u",
        "psql -f", "docker compose up -d", "curl -s localhost:8000", "jq -r", "make -n",
        "rg --hidden", "npx tsx", "alembic upgrade head", "uv run", "gh pr checks"]
OBJECTS = ["migrations", "fixtures", "snapshots", "env files", "lockfile", "test database",
           "api routes", "worker queue", "schema", "log files", "json output", "cli parser",
           "unicode input", "config loader", "temp folders", "exit codes"]
EFFECTS = ["applies the {o} in filename order", "skips the {o} unless you pass --all",
           "needs the {o} to exist first", "caches the {o} between runs",
           "rewrites the {o} in place", "prints the {o} as json", "ignores the {o} on a dry run",
           "fails on the {o} when run from a subfolder"]
FRAMES = {"TRICK": ["{c} {e}; use it for the {o2}", "running `{c}` {e}, which saves a retry"],
          "GOTCHA": ["{c} {e}, so check the {o2} before trusting it",
                     "careful: {c} {e} and the error names the {o2} instead"],
          "FAIL": ["{c} failed because it {e}; the {o2} were stale",
                   "tests broke: {c} {e} and nobody reset the {o2}"],
          "FORGOT": ["forgot again that {c} {e}", "forgot that {c} {e}; the {o2} depend on it"]}
PLAIN = ["{f} done, verify passes and the new tests are green",
         "started on {f}; reading the ledger and the summary first",
         "{f} needs a small refactor of the {o} first, doing that now",
         "{f}: checked the acceptance criteria by hand as well as with verify"]
TOPICS = ["storage", "cli", "parsing", "output", "errors", "tests", "packaging", "docs"]
VERBS = ["Add", "Support", "Handle", "Report", "Validate", "Cache", "Stream", "Document"]
FAIL_REASONS = ["the {o} are not handled: {c} exits 0 where the spec wants exit 2",
                "acceptance criterion 2 does not hold; the {o} differ from the plain output "
                "for the same input files",
                "verify passes but the {o} case from the description is untested and fails "
                "when tried by hand with {c}"]


def lesson(k: int) -> tuple[str, str, str, str]:
    """Command, effect, object and second object of distinct lesson `k`."""
    rng = random.Random(k)
    obj, obj2 = rng.sample(OBJECTS, 2)
    return rng.choice(CMDS), rng.choice(EFFECTS).format(o=obj), obj, obj2


def iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


@dataclass
class Mission:
    """A simulated mission: its state folder, plan, clock and what happened so far."""

    state: Path
    identity: Path
    name: str = "textstats"
    plan: list[dict] = field(default_factory=list)
    clock: float = calendar.timegm(time.strptime(START, "%Y-%m-%dT%H:%M:%SZ"))
    rng: random.Random = field(default_factory=lambda: random.Random(7))
    runs: int = 0
    first_open: int = 0  # plan index before which every feature is done or failed
    fresh: int = 10_000  # lesson numbers above the popular pool: said once
    curator_passes: int = 0
    curator_seconds: float = 0.0
    notes: int = 0
    long_notes: int = 0
    recorder: Callable[..., None] | None = None  # bench/report.py: leaves each run's record

    def pick_lesson(self) -> int:
        """Mostly a popular lesson (long-tailed), else one nobody said before."""
        if self.rng.random() < 0.6:
            return min(int(self.rng.paretovariate(1.2)) - 1, 299)
        self.fresh += 1
        return self.fresh

    def note_text(self, kind: str, fid: str) -> str:
        if kind == "-":
            return self.rng.choice(PLAIN).format(f=fid, o=self.rng.choice(OBJECTS))
        if kind == "DECISION":
            topic = self.rng.choice(TOPICS)
            return (f"{topic}: keep the {self.rng.choice(OBJECTS)} in one module for {fid}; "
                    f"option {self.rng.randint(1, 30)} was simpler to test")
        c, e, o, o2 = lesson(self.pick_lesson())
        return self.rng.choice(FRAMES[kind]).format(c=c, e=e, o=o, o2=o2)

    def note(self, role: str, fid: str, run_id: str, kinds: list[str], weights: list[int],
             count: int) -> None:
        for _ in range(count):
            self.clock += self.rng.randint(20, 300)
            kind = self.rng.choices(kinds, weights)[0]
            entry = memory.make_entry(role, fid, kind, self.note_text(kind, fid), run=run_id,
                                      ts=iso(self.clock))
            memory.append_entry(self.state, entry)
            self.notes += 1

    def add_features(self, n: int) -> None:
        """A planner run: `n` new pending features and its decisions in raw.md."""
        start = len(self.plan) + 1
        for i in range(start, start + n):
            topic, obj = self.rng.choice(TOPICS), self.rng.choice(OBJECTS)
            desc = " ".join(f"The {topic} code must {e} and report it clearly." for e in
                            (self.rng.choice(EFFECTS).format(o=obj)
                             for _ in range(self.rng.randint(2, 5))))
            self.plan.append({
                "id": f"F-{i:03d}", "title": f"{self.rng.choice(VERBS)} {obj} in the {topic} "
                f"layer", "description": desc,
                "acceptance_criteria": [f"the {self.rng.choice(OBJECTS)} case works as "
                                        "described" for _ in range(self.rng.randint(2, 4))],
                "verify": f"python3 -m unittest -q tests.test_f{i:03d}",
                "status": "pending", "attempts": 0})
        run_id = f"{int(self.clock)}-planner-mission"
        self.note("planner", "-", run_id, ["DECISION", "-"], [2, 1], 2)
        append_progress(self.state, "planner", None, run_id, "done", 0, 0.04)

    def current(self) -> dict:
        """The feature the loop works on: the first one not yet done or failed."""
        # one feature at a time, in plan order, so that feature is also what `next` picks
        while self.first_open < len(self.plan) and \
                self.plan[self.first_open]["status"] in ("done", "failed"):
            self.first_open += 1
        if self.first_open == len(self.plan):
            self.add_features(BATCH)
        return self.plan[self.first_open]

    def run_once(self) -> None:
        """One simulated worker or validator run and everything it leaves on disk."""
        self.runs += 1
        self.clock += self.rng.randint(600, 2400)
        feature = self.current()
        fid = feature["id"]
        cost = round(self.rng.uniform(0.03, 0.6), 4)
        if feature["status"] == "pending":
            run_id = f"{int(self.clock)}-worker-{fid}"
            self.note("worker", fid, run_id, ["-", "TRICK", "GOTCHA", "DECISION", "FAIL",
                                              "FORGOT"], [35, 20, 12, 8, 15, 10],
                      self.rng.randint(1, 4))
            if self.rng.random() < LONG_NOTE_RATE:
                self.write_long_note(fid)
            feature["status"] = "in_progress"
            append_progress(self.state, "worker", fid, run_id, "in_progress", 0, cost)
            if self.recorder:
                self.recorder(self.state, run_id, "worker", fid, self.clock, cost, 0,
                              "in_progress")
        else:
            run_id = f"{int(self.clock)}-validator-{fid}"
            passed = self.rng.random() < PASS_RATE
            c, _, o, _ = lesson(self.pick_lesson())
            reason = ("all acceptance criteria hold; verify passes" if passed else
                      self.rng.choice(FAIL_REASONS).format(o=o, c=c))
            append_verdict(self.state, fid, {"time": iso(self.clock), "run_id": run_id,
                                             "verdict": "pass" if passed else "fail",
                                             "reason": reason, "verify_exit": 0})
            self.note("validator", fid, run_id, ["-", "FAIL", "TRICK", "GOTCHA"],
                      [3, 0, 1, 1] if passed else [1, 3, 1, 1], self.rng.randint(1, 2))
            if passed:
                feature["status"] = "done"
            else:
                feature["attempts"] += 1
                feature["status"] = "failed" if feature["attempts"] >= MAX_ATTEMPTS else "pending"
            append_progress(self.state, "validator", fid, run_id, "pass" if passed else "fail",
                            0 if passed else 1, cost)
            if self.recorder:
                self.recorder(self.state, run_id, "validator", fid, self.clock, cost,
                              0 if passed else 1, "pass" if passed else "fail")
        if self.runs % CURATE_EVERY == 0:
            self.curate()

    def curate(self) -> None:
        """One curator pass, as the cron job would run it."""
        started = time.perf_counter()
        curate(self.state, self.identity, self.name, CuratorSettings(), now=iso(self.clock))
        self.curator_seconds += time.perf_counter() - started
        self.curator_passes += 1

    def write_long_note(self, fid: str) -> None:
        topic, obj = self.rng.choice(TOPICS), self.rng.choice(OBJECTS)
        paragraphs = [f"# How the {topic} layer handles the {obj} ({fid})", ""]
        for _ in range(self.rng.randint(3, 8)):
            c, e, o, o2 = lesson(self.pick_lesson())
            paragraphs.append(f"While working on {fid}, `{c}` {e}. The {o2} depend on the {o}, "
                              "so change them together and rerun verify before finishing.")
        slug = f"{topic}-{fid.lower()}-{self.runs}"
        memory.write_long_note(self.state, "worker", slug, "\n".join(paragraphs),
                               day=iso(self.clock)[:10])
        self.long_notes += 1

    def save_plan(self) -> None:
        (self.state / "features.json").write_text(json.dumps(self.plan, indent=2) + "\n")


def new_mission(folder: Path, identity: Path, name: str) -> Mission:
    """A copy of the example mission, sharing the harness's identity folder."""
    project = folder / "project"
    shutil.copytree(ROOT / ".harness.example", project / ".harness")
    identity.mkdir(exist_ok=True)
    state = project / ".harness"
    return Mission(state, identity, name=name,
                   plan=json.loads((state / "features.json").read_text()))


def worker_prompt(mission: Mission) -> str:
    """Dry-run `worker next` on the mission as it stands; the rendered prompt.md."""
    mission.save_plan()
    paths = Paths(home=ROOT, state=mission.state, workdir=mission.state.parent,
                  identity=mission.identity)
    result = run_role(paths, "worker", "next", dry_run=True)
    return (mission.state / "runs" / result.run_id / "prompt.md").read_text(encoding="utf-8")


def template_headings() -> list[str]:
    """The fixed start of every heading the templates write, e.g. `## Your feature: `."""
    heads = set()
    for path in (ROOT / "templates").rglob("*.j2"):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("#"):
                heads.add(line.split("{{")[0])
    return sorted(heads, key=len, reverse=True)


def blocks(prompt: str) -> dict[str, int]:
    """Tokens per template section of a prompt (headings inside memory files stay inside)."""
    heads = template_headings()
    sizes: dict[str, int] = {}
    name, lines = "(before the first heading)", []
    for line in prompt.splitlines(keepends=True) + ["\0"]:
        head = next((h for h in heads if line.startswith(h)), None)
        if head or line == "\0":
            if lines:
                sizes[name] = sizes.get(name, 0) + memory.estimate_tokens("".join(lines))
            name = (head or "").lstrip("#").strip().split(" (")[0].rstrip(":")
            lines = []
        lines.append(line)
    return sizes


@dataclass
class Snapshot:
    """The worker prompt after `runs` simulated runs."""

    runs: int
    tokens: int
    blocks: dict[str, int]


def simulate(checkpoints: list[int]) -> tuple[list[Snapshot], Mission, float]:
    """Simulate up to the largest checkpoint; the prompt at each, the mission, the seconds."""
    snapshots = []
    started = time.perf_counter()
    # tmpfs when there is one: the simulation's own I/O speed is not what is measured
    shm = Path("/dev/shm")
    where = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="history-bench-", dir=where) as tmp:
        identity = Path(tmp) / "identity"
        # Identity is cross-mission: the measured mission starts where an earlier one left it,
        # as on any harness that has run before; only the mission's own history varies.
        earlier = new_mission(Path(tmp) / "earlier", identity, "earlier-mission")
        earlier.rng = random.Random(11)
        while earlier.runs < PREVIOUS_MISSION_RUNS:
            earlier.run_once()
        mission = new_mission(Path(tmp) / "measured", identity, "textstats")
        for target in sorted(checkpoints):
            while mission.runs < target:
                mission.run_once()
            mission.curate()  # both checkpoints are measured just after a curator pass
            prompt = worker_prompt(mission)
            snapshots.append(Snapshot(target, memory.estimate_tokens(prompt), blocks(prompt)))
        return snapshots, mission, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="10,1000,10000", help="checkpoints, comma-separated")
    args = parser.parse_args()
    snapshots, mission, seconds = simulate([int(n) for n in args.runs.split(",")])
    print(f"{mission.runs} runs simulated in {seconds:.1f} s: {len(mission.plan)} features, "
          f"{mission.notes} notes, {mission.long_notes} long notes, "
          + f"{mission.curator_passes} curator passes ({mission.curator_seconds:.1f} s)")
    names = list(dict.fromkeys(name for s in snapshots for name in s.blocks))
    print(f"{'prompt block (tokens)':<42}" + "".join(f"{s.runs:>9}" for s in snapshots))
    for name in names:
        print(f"{name:<42}" + "".join(f"{s.blocks.get(name, 0):>9}" for s in snapshots))
    print(f"{'total':<42}" + "".join(f"{s.tokens:>9}" for s in snapshots))


if __name__ == "__main__":
    main()
