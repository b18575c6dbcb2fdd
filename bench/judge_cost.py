"""What a judged cron pass costs: the judge's tokens per call, and the pass's time.

    .venv/bin/python bench/judge_cost.py                     # 100k entries: 10k lessons
    .venv/bin/python bench/judge_cost.py --history 20000 --passes 3

A history of bench/curator.py's raw.md (`--history` entries drawn from a pool of one
distinct lesson per ten entries, each in three phrasings) is curated once with the judge
off. Then, `--passes` times, `--new` entries are appended as cron would find them after 30
minutes (`curator.append_entries`) and one `run.sh curator` pass runs with
`curator.judge: auto` (`harness.run.curation.run_curator`), the tests' fake Messages API on
127.0.0.1 answering the judge from the lessons the generator drew (`judge_model.LabelModel`:
the candidate of the same lesson, else "new"). Input tokens are the fake API's count, four
characters a token, of everything the request carries; output tokens are the answer's at
the same rate. Printed: per pass, its calls (the questions, then the second look at each
"same"), the notes asked, their input and output tokens together, and the pass's wall
time; then the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests")]

import curator as generator  # noqa: E402 - bench/curator.py: the raw.md generators
import judge_model  # noqa: E402
from fake_api import FakeAPI, count_tokens  # noqa: E402

from harness.paths import Paths  # noqa: E402
from harness.run.curation import run_curator  # noqa: E402


def families(pool: int) -> dict[str, str]:
    """Each phrasing of the pool's lessons (and of the fresh ones appended later) -> its
    lesson number, as the label model reads families."""
    return {generator.lesson(k, p)[2]: str(k) for k in range(pool * 2) for p in range(3)}


def one_pass(paths: Paths, api: FakeAPI) -> dict:
    before = len(api.requests)
    started = time.perf_counter()
    run_curator(paths)
    seconds = time.perf_counter() - started
    calls = api.requests[before:]
    answers = [m.get("summary", "") for m in judge_runs(paths.state)[-len(calls):]] \
        if calls else []
    return {"calls": len(calls), "input_tokens": sum(count_tokens(body) for body in calls),
            "output_tokens": sum(len(a) // 4 for a in answers),
            "notes": sum(body_notes(body) for body in calls), "seconds": seconds}


def judge_runs(state: Path) -> list[dict]:
    """The judge runs' manifests, oldest first."""
    manifests = (json.loads(p.read_text()) for p in sorted(state.glob("runs/*/manifest.json")))
    return [m for m in manifests if m.get("template") in ("judge.md.j2", "judge_pair.md.j2")]


def body_notes(body: dict) -> int:
    return len(judge_model.NOTE.findall(judge_model._text(body)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=int, default=100_000)
    parser.add_argument("--new", type=int, default=10)
    parser.add_argument("--passes", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("ANTHROPIC_API_KEY", "fake-key")  # the fake API takes any
    api = FakeAPI()
    api.start()
    label = judge_model.LabelModel()
    label.family_of = families(max(args.history // 10, 10))
    api.respond, api.count_input = label, True
    work = Path(tempfile.mkdtemp(prefix="judge-cost-"))
    try:
        state = work / "shop"
        judge_model.mission_state(state, "shop", "claude-haiku-4-5", api.base_url, 20)
        t = generator.generate(state, args.history)
        paths = Paths(home=ROOT, state=state, workdir=state, identity=work / "identity")
        config = state / "config.yaml"
        auto = config.read_text()
        config.write_text(auto.replace("judge: auto", "judge: off"))
        started = time.perf_counter()
        run_curator(paths)
        print(f"history: {args.history} entries, {len(label.family_of) // 6} lessons in the "
              f"pool; first pass (judge off) {time.perf_counter() - started:.1f} s")
        config.write_text(auto)
        rows = []
        for n in range(args.passes):
            t = generator.append_entries(state, args.new, args.history, t, seed=n + 1)
            rows.append(one_pass(paths, api))
            r = rows[-1]
            print(f"pass {n + 1}: {r['calls']} calls, {r['notes']} notes asked, "
                  f"{r['input_tokens']} input and {r['output_tokens']} output tokens, "
                  f"{r['seconds']:.2f} s")
        for name in ("notes", "input_tokens", "output_tokens", "seconds"):
            print(f"median {name}: {statistics.median(r[name] for r in rows):g}")
    finally:
        api.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
