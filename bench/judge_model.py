"""The judge end to end: each corpus through real curator runs (`curator.judge: auto`), the
model answering "same lesson?" in its own small call.

    .venv/bin/python bench/judge_model.py                          # held out, labels answer
    .venv/bin/python bench/judge_model.py --corpus DIR --json      # {"perfect": .., "noisy": ..}
    .venv/bin/python bench/judge_model.py --model claude-haiku-4-5 # a real model

Each pass is `harness.run.curation.run_curator` (what `run.sh curator` runs): the preview,
the judge's prompt (`templates/judge.md.j2`), a call through the `anthropic` backend, the
answer's lines, and the real pass with them, recorded for later passes. By default the
Messages API is the tests' fake one on 127.0.0.1 and answers from the corpus labels
(`LabelModel`): for each note, the candidate of its family, else "new" ("perfect"); and
again with one answer in ten the other way ("noisy", the mean of `--draws` seeds), each
"same" asked again as a pair (`templates/judge_pair.md.j2`) and kept when both agree.
That checks the whole chain and should give `bench/judge_bound.py`'s figures. With
`--model`, the real API answers (ANTHROPIC_API_KEY): what a real model's judgement
reaches. Corpora are fed and scored as `tests/corpus_quality.py` does, identity within its
default bound. The judge's input tokens per call are those the fake API counts (the
request's text at four characters a token) or the real API reports, from the runs' records.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from corpus_quality import Quality, evaluate_passes, held_out_corpora  # noqa: E402
from fake_api import FakeAPI, text  # noqa: E402

from harness.config import CuratorConfig  # noqa: E402
from harness.curator.book import clip  # noqa: E402
from harness.curator.identity import identity_lessons  # noqa: E402
from harness.curator.promotion import Promotion  # noqa: E402
from harness.paths import Paths  # noqa: E402
from harness.run.curation import run_curator  # noqa: E402
from harness.run.judging import SHOWN_CHARS  # noqa: E402

EXAMPLE = ROOT / ".harness.example"
# a note and its candidates as `harness.run.judging.shown` numbers them
NOTE = re.compile(r"^Note (\d+) \([^)]*\): (.*)\n((?:  #\d+: .*\n?)+)", re.M)
CANDIDATE = re.compile(r"^  #(\d+): (.*)$", re.M)
# a pair of the second look as `harness.run.judging.shown_pairs` shows it
PAIR = re.compile(r"^Pair (\d+):\n  A: (.*)\n  B: (.*)$", re.M)


class LabelModel:
    """The fake API's judge: for each note, the candidate of its family, else "new", and for
    each pair of the second look, "yes" when both are of one family; `error` of its answers
    the other way (a fixed seed)."""

    def __init__(self, error: float = 0.0, seed: int = 1) -> None:
        self.family_of: dict[str, str] = {}  # each note's family, by its text
        self.error = error
        self.draw = random.Random(seed)
        self.calls = self.asked = 0

    def __call__(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        self.calls += 1
        lines = [f"{number}: " + ("yes" if self.same(b, a) else "no")
                 for number, a, b in PAIR.findall(_text(body))]
        for number, note, block in NOTE.findall(_text(body)):
            self.asked += 1
            candidates = [(int(i), next(identity_lessons(o), o))
                          for i, o in CANDIDATE.findall(block)]
            family = self.family_of.get(note)
            right = next((i for i, o in candidates
                          if family is not None and self.family_of.get(o) == family), None)
            choice = right
            if self.error and self.draw.random() < self.error:
                choice = self.draw.choice([c for c in [*(i for i, _ in candidates), None]
                                           if c != right])
            lines.append(f"{number}: " + ("new" if choice is None else f"same as #{choice}"))
        return [text("\n".join(lines))]


    def same(self, note: str, other: str) -> bool:
        """The second look at a pair: one family or not, `error` of them the wrong way."""
        family = self.family_of.get(note)
        same = family is not None and self.family_of.get(other) == family
        return not same if self.error and self.draw.random() < self.error else same


def _text(body: dict[str, Any]) -> str:
    contents = [body.get("system") or "", *(m["content"] for m in body["messages"])]
    return "\n".join(t for content in contents for t in (
        [content] if isinstance(content, str) else
        [b.get("text", "") for b in content if isinstance(b, dict)]))


def mission_state(state: Path, mission: str, model: str, base_url: str | None,
                  questions: int) -> None:
    """A state folder for `mission` with the judge on: the example's plan and prices."""
    shutil.copytree(EXAMPLE, state, ignore=shutil.ignore_patterns(
        "raw.md", "MEMORY.md", "summary.md", "progress.log", "ledger", "memory"))
    prices = "\n".join(line for line in (EXAMPLE / "config.yaml").read_text().splitlines()
                       if line.startswith(("prices:", "  claude-")))
    (state / "config.yaml").write_text(
        f"mission: {mission}\nbudget_usd: 1000\ncurator: {{judge: auto, questions: {questions}}}"
        f"\n{prices}\n")
    options = f"options: {{base_url: '{base_url}'}}\n" if base_url else ""
    (state / "roles").mkdir()
    (state / "roles" / "curator.yaml").write_text(
        f"template: curator.md.j2\nbackend: anthropic\nmodel: {model}\n"
        f"tools: [curation, finish]\n{options}")


def through_judge(folder: Path, work: Path, model: str, base_url: str | None, questions: int,
                  label: LabelModel | None = None) -> tuple[Quality, list[dict]]:
    """The corpus fed to curator runs with the judge in `work`, scored, and the usage of
    each judge call; `label` is told the notes' families."""

    def run_pass(state: Path, identity: Path, mission: str,
                 family_of: dict[str, str]) -> list[Promotion]:
        if label is not None:
            # as the judge is shown them: a long note cut (judging.SHOWN_CHARS)
            label.family_of = {**family_of, **{clip(text, SHOWN_CHARS): family
                                               for text, family in family_of.items()}}
        if not (state / "config.yaml").exists():
            raw = (state / "raw.md").read_text()
            shutil.rmtree(state)
            mission_state(state, mission, model, base_url, questions)
            (state / "raw.md").write_text(raw)
        paths = Paths(home=ROOT, state=state, workdir=state, identity=identity)
        return run_curator(paths).promoted

    quality = evaluate_passes(folder, work, run_pass)
    return quality, judge_usage(work)


def judge_usage(work: Path) -> list[dict]:
    """Each judge call's usage, from the run records under `work`."""
    out = []
    for manifest in sorted(work.glob("*/runs/*/manifest.json")):
        record = json.loads(manifest.read_text())
        if record.get("template") in ("judge.md.j2", "judge_pair.md.j2"):
            out.append(record.get("usage") or {})
    return out


def one_run(folder: Path, args: argparse.Namespace, error: float, seed: int = 1) -> dict:
    """One corpus through the judge once: precision, recall, calls and tokens per call."""
    with tempfile.TemporaryDirectory(prefix="judge-model-") as work:
        if args.model:
            q, usage = through_judge(folder, Path(work), args.model, None, args.questions)
            calls = len(usage)
        else:
            os.environ.setdefault("ANTHROPIC_API_KEY", "fake-key")  # the fake API takes any
            api = FakeAPI()
            api.start()
            try:
                label = LabelModel(error, seed)
                api.respond, api.count_input = label, True
                q, usage = through_judge(folder, Path(work), "claude-haiku-4-5", api.base_url,
                                         args.questions, label)
            finally:
                api.stop()
            calls = label.calls
    inputs = [u.get("input_tokens", 0) for u in usage] or [0]
    return {"precision": round(q.precision, 3), "recall": round(q.recall, 3), "calls": calls,
            "input_tokens_median": statistics.median(inputs), "input_tokens_max": max(inputs)}


def figures(folder: Path, args: argparse.Namespace) -> dict:
    """A real model's figures (`--model`), or the label model's: never wrong ("perfect")
    and wrong once in ten answers ("noisy", the mean of `--draws` seeds)."""
    if args.model:
        return {"model": one_run(folder, args, 0.0)}
    perfect = one_run(folder, args, 0.0)
    noisy = [one_run(folder, args, 0.1, seed) for seed in range(1, args.draws + 1)]
    return {"perfect": perfect, "noisy": {
        name: round(statistics.mean(run[name] for run in noisy), 3)
        for name in ("precision", "recall")}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, action="append", metavar="DIR",
                        help="a labelled folder in the corpus format (default: held out)")
    parser.add_argument("--model", help="a real model through the Messages API")
    parser.add_argument("--draws", type=int, default=5, help="noisy label models (seeds)")
    parser.add_argument("--questions", type=int, default=CuratorConfig().questions)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    folders = args.corpus or held_out_corpora()
    results = {folder.name: figures(folder, args) for folder in folders}
    if args.json:
        print(json.dumps(results if len(results) > 1 else next(iter(results.values()))))
        return
    print(f"{'corpus':20} {'judge':8} {'P / R':>15} {'calls':>6} {'input tokens: median, max':>26}")
    for name, f in results.items():
        for judge, run in f.items():
            calls = f"{run['calls']:6} {run['input_tokens_median']:>12} " \
                f"{run['input_tokens_max']:>12}" if "calls" in run else ""
            print(f"{name:20} {judge:8} {run['precision']:.3f} / {run['recall']:.3f} {calls}")


if __name__ == "__main__":
    main()
