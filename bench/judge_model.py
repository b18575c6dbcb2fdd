"""Model mode end to end: each corpus through the curator role's real runs, the model
answering "same lesson?" through the `curation` tool.

    .venv/bin/python bench/judge_model.py                      # labels answer, fake API
    .venv/bin/python bench/judge_model.py --error 0.1          # ... one answer in ten wrong
    .venv/bin/python bench/judge_model.py --model claude-haiku-4-5   # a real model

Each pass is `harness.run.curation.run_curator` in `curator.mode: model` (what `run.sh
curator` runs): the preview, the curator role's prompt, a call through the `anthropic`
backend, the model's `curation` answer, and the real pass with its answers, recorded for
later passes. By default the Messages API is the tests' fake one on 127.0.0.1, answering
from the corpus labels: the pairs shown in the prompt whose notes are of one family (its
summary and memory are placeholders, so the rules' texts are written). That checks the
whole chain and should give `bench/judge_bound.py`'s "perfect, model mode" figures. With
`--model`, the real API answers (ANTHROPIC_API_KEY; each pass is one curator call):
what a real model's judgement reaches. Corpora are fed and scored as
`tests/corpus_quality.py` does, identity within its default bound.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from corpus_quality import (  # noqa: E402
    Quality,
    development_corpora,
    evaluate_passes,
    held_out_corpora,
)
from fake_api import FakeAPI, tool_use  # noqa: E402

from harness.config import CuratorConfig  # noqa: E402
from harness.curator.identity import identity_lessons  # noqa: E402
from harness.curator.promotion import Promotion  # noqa: E402
from harness.paths import Paths  # noqa: E402
from harness.run.curation import run_curator  # noqa: E402

EXAMPLE = ROOT / ".harness.example"
# a pair as `harness.run.curation.questions_shown` numbers it
PAIR = re.compile(r"^(\d+)\. A \S+ note: (.*)\n   B, (?:an earlier \S+ \S+ note|"
                  r"a line of identity/\S+\.md): (.*)$", re.M)


class LabelModel:
    """The fake API's curator: says `same` for the pairs shown whose two notes are of one
    family, flipping `error` of its answers (a fixed seed), then finishes."""

    def __init__(self, error: float = 0.0) -> None:
        self.family_of: dict[str, str] = {}  # each note's family, by its text
        self.error = error
        self.draw = random.Random(1)
        self.calls = self.asked = 0

    def __call__(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        if _has_tool_result(body["messages"][-1]):
            return [tool_use("finish", {"summary": "answered"})]
        self.calls += 1
        same = []
        for number, note, other in PAIR.findall(_text(body)):
            self.asked += 1
            lesson = next(identity_lessons(other), other)
            family = self.family_of.get(note)
            answer = family is not None and family == self.family_of.get(lesson)
            if self.error and self.draw.random() < self.error:
                answer = not answer
            if answer:
                same.append(int(number))
        return [tool_use("curation", {"summary": "-", "memory": "-", "same": same})]


def _has_tool_result(message: dict[str, Any]) -> bool:
    content = message["content"]
    return isinstance(content, list) and any(b.get("type") == "tool_result" for b in content)


def _text(body: dict[str, Any]) -> str:
    """Every text the request shows the model: its system prompt and messages, each a
    string or a list of content blocks."""
    contents = [body.get("system") or "", *(m["content"] for m in body["messages"])]
    return "\n".join(text for content in contents for text in (
        [content] if isinstance(content, str) else
        [b.get("text", "") for b in content if isinstance(b, dict)]))


def mission_state(state: Path, mission: str, model: str, base_url: str | None,
                  questions: int) -> None:
    """A state folder for `mission` in model mode: the example's plan and prices, no memory."""
    shutil.copytree(EXAMPLE, state, ignore=shutil.ignore_patterns(
        "raw.md", "MEMORY.md", "summary.md", "progress.log", "ledger", "memory"))
    prices = "\n".join(line for line in (EXAMPLE / "config.yaml").read_text().splitlines()
                       if line.startswith(("prices:", "  claude-")))
    (state / "config.yaml").write_text(
        f"mission: {mission}\nbudget_usd: 1000\ncurator: {{mode: model, questions: {questions}}}"
        f"\n{prices}\n")
    options = f"options: {{base_url: '{base_url}'}}\n" if base_url else ""
    (state / "roles").mkdir()
    (state / "roles" / "curator.yaml").write_text(
        f"template: curator.md.j2\nbackend: anthropic\nmodel: {model}\n"
        f"tools: [curation, finish]\n{options}")


def through_model_mode(folder: Path, work: Path, model: str, base_url: str | None,
                       questions: int, label: LabelModel | None = None) -> Quality:
    """The corpus fed to model-mode curator runs in `work`, scored; `label` is told the
    notes' families."""

    def run_pass(state: Path, identity: Path, mission: str,
                 family_of: dict[str, str]) -> list[Promotion]:
        if label is not None:
            label.family_of = family_of
        if not (state / "config.yaml").exists():
            raw = (state / "raw.md").read_text()
            shutil.rmtree(state)
            mission_state(state, mission, model, base_url, questions)
            (state / "raw.md").write_text(raw)
        paths = Paths(home=ROOT, state=state, workdir=state, identity=identity)
        return run_curator(paths).promoted

    return evaluate_passes(folder, work, run_pass)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", help="comma-separated corpus names (default: held out)")
    parser.add_argument("--development", action="store_true", help="the development corpora")
    parser.add_argument("--model", help="a real model through the Messages API")
    parser.add_argument("--error", type=float, default=0.0,
                        help="share of the label model's answers flipped (fake API only)")
    parser.add_argument("--questions", type=int, default=CuratorConfig().questions)
    args = parser.parse_args()
    known = {p.name: p for p in [*development_corpora(), *held_out_corpora()]}
    folders = ([known[name] for name in args.corpora.split(",")] if args.corpora else
               development_corpora() if args.development else held_out_corpora())
    print(f"{'corpus':20} {'P / R':>15} {'model calls':>12} {'pairs asked':>12}")
    for folder in folders:
        with tempfile.TemporaryDirectory(prefix="judge-model-") as work:
            row = run(folder, Path(work), args)
        print(row)


def run(folder: Path, work: Path, args: argparse.Namespace) -> str:
    """One corpus's row: through the real API, or the fake one answering from labels."""
    if args.model:
        q = through_model_mode(folder, work, args.model, None, args.questions)
        return f"{folder.name:20} {q.precision:.3f} / {q.recall:.3f}"
    os.environ.setdefault("ANTHROPIC_API_KEY", "fake-key")  # the fake API takes any
    api = FakeAPI()
    api.start()
    try:
        label = LabelModel(args.error)
        api.respond = label
        q = through_model_mode(folder, work, "claude-haiku-4-5", api.base_url, args.questions,
                               label)
    finally:
        api.stop()
    return (f"{folder.name:20} {q.precision:.3f} / {q.recall:.3f} {label.calls:12} "
            f"{label.asked:12}")


if __name__ == "__main__":
    main()
