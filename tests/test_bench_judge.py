"""bench/judge_bound.py and bench/judge_model.py: the judges they simulate answer from the
labels as a model answers the judge's prompt, and their figures come out as documented."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import UNSURE_FIRST, UNSURE_SECOND

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow  # a benchmark script's test, not the harness's


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_label_judge_picks_the_family_or_new_and_errs_its_share_when_told() -> None:
    from corpus_quality import PerfectJudge

    from harness.curator.text import normalize

    family_of = {"pnpm lint in CI": "lint", "run pnpm lint on CI": "lint", "go vet": "vet",
                 "cargo clippy": "clippy"}
    key = {text: normalize(text).key for text in family_of}
    judge = PerfectJudge(family_of, [])
    others = [key["go vet"], key["pnpm lint in CI"]]
    assert judge.choose(key["run pnpm lint on CI"], others) == key["pnpm lint in CI"]
    assert judge.choose(key["cargo clippy"], others) is None  # "new"
    wrong = PerfectJudge(family_of, [], error=1.0)
    assert wrong.choose(key["run pnpm lint on CI"], others) in (key["go vet"], None)
    assert wrong.choose(key["cargo clippy"], others) in others


def test_judge_bound_prints_the_three_judges_of_a_corpus_as_json(tmp_path: Path) -> None:
    from test_corpora import write_corpus

    other = "`alembic upgrade head` before `pytest -k db` or the schema is stale"
    corpus = write_corpus(tmp_path / "corpus", [
        (UNSURE_FIRST, "A", "F-001", 1), (UNSURE_SECOND, "A", "F-002", 2),
        (other, "B", "F-003", 3), (other, "B", "F-004", 4)])
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "judge_bound.py"), "--corpus",
                          str(corpus), "--json"], capture_output=True, text=True, check=True)
    figures = json.loads(out.stdout)
    assert figures["rules"] == {"precision": 1.0, "recall": 0.5}  # A needs the judge
    assert figures["perfect"] == {"precision": 1.0, "recall": 1.0}
    assert set(figures["noisy"]) == {"precision", "recall"}
    assert figures["questions_per_note"] > 0


def test_judge_model_end_to_end_joins_what_the_model_says_and_counts_its_tokens(
        api, tmp_path: Path) -> None:
    # curator runs with the judge on, the fake API answering from the labels
    from test_corpora import write_corpus

    judge_model = load("judge_model")
    other = "`alembic upgrade head` before `pytest -k db` or the schema is stale"
    corpus = write_corpus(tmp_path / "corpus", [
        (UNSURE_FIRST, "A", "F-001", 1), (UNSURE_SECOND, "A", "F-002", 2),
        (other, "B", "F-003", 3), (other, "B", "F-004", 4)])
    right = judge_model.LabelModel()
    api.respond, api.count_input = right, True
    quality, usage = judge_model.through_judge(corpus, tmp_path / "right", "claude-haiku-4-5",
                                               api.base_url, 20, right)
    assert (quality.precision, quality.recall) == (1.0, 1.0)
    assert right.calls >= 1 and right.asked >= 1
    assert usage and all(0 < u["input_tokens"] < 3000 for u in usage)
    wrong = judge_model.LabelModel(error=1.0)  # every answer another choice
    api.respond = wrong
    quality, _ = judge_model.through_judge(corpus, tmp_path / "wrong", "claude-haiku-4-5",
                                           api.base_url, 20, wrong)
    assert (quality.precision, quality.recall, quality.missed) == (1.0, 0.5, ["A"])


def test_the_label_model_answers_each_note_the_prompt_numbers() -> None:
    from fake_api import text

    judge_model = load("judge_model")
    label = judge_model.LabelModel()
    label.family_of = {"use --lf": "lf", "pytest --lf again": "lf", "go vet": "vet"}
    prompt = ("# Same lesson?\n\nNote 1 (a worker TRICK note): pytest --lf again\n"
              "  #1: go vet\n  #2: use --lf\n\n"
              "Note 2 (a worker TRICK note): go vet\n  #1: use --lf\n\n"
              "Note 3 (is this worker lesson already in identity/worker.md?): use --lf\n"
              "  #1: - TRICK: pytest --lf again [promoted 2026-06-01; seen 2x]\n")
    (reply,) = label({"messages": [{"role": "user", "content": [text(prompt)]}]})
    assert reply["text"].splitlines() == ["1: same as #2", "2: new", "3: same as #1"]
    assert (label.calls, label.asked) == (1, 3)


def test_judge_model_prints_the_perfect_and_the_noisy_judge_of_a_corpus_as_json(
        tmp_path: Path) -> None:
    from test_corpora import write_corpus

    other = "`alembic upgrade head` before `pytest -k db` or the schema is stale"
    corpus = write_corpus(tmp_path / "corpus", [
        (UNSURE_FIRST, "A", "F-001", 1), (UNSURE_SECOND, "A", "F-002", 2),
        (other, "B", "F-003", 3), (other, "B", "F-004", 4)])
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "judge_model.py"), "--corpus",
                          str(corpus), "--json", "--draws", "1"],
                         capture_output=True, text=True, check=True)
    figures = json.loads(out.stdout)
    assert figures["perfect"]["precision"] == 1.0 and figures["perfect"]["recall"] == 1.0
    assert figures["perfect"]["calls"] >= 1 and 0 < figures["perfect"]["input_tokens_max"] < 3000
    assert set(figures["noisy"]) == {"precision", "recall"}
