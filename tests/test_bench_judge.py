"""bench/judge_bound.py's judge: asked only about pairs scored in its band, it joins
exactly the pairs of one family, and the rule's and the second opinion's joins stand."""

import importlib.util
import sys
from pathlib import Path

import pytest

from harness.curator import learned

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow  # a benchmark script's test, not the harness's


def load_bench():
    sys.path[:0] = [str(ROOT / "bench")]  # judge_bound imports matcher_train beside it
    spec = importlib.util.spec_from_file_location("judge_bound", ROOT / "bench" / "judge_bound.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = load_bench()


class Margins:
    """A pair model whose margin is the pair's one feature."""

    def margin(self, x: list[float]) -> float:
        return x[0]


def row(i: int, j: int, probability: float, *, same: bool, accepted: bool = False,
        vetoed: bool = False) -> tuple:
    return ([learned.log_odds(probability)], same, i, j, accepted, vetoed)


def test_without_a_judge_only_the_rule_and_the_second_opinion_join() -> None:
    prs = [row(1, 0, 0.3, same=True, accepted=True), row(2, 0, 0.95, same=False),
           row(3, 0, 0.95, same=True, vetoed=True), row(4, 0, 0.6, same=True)]
    joined, asked = bench.judged(prs, None, Margins())
    assert joined == {1: 0, 2: 0} and asked == 0


def test_the_judge_is_asked_in_its_band_and_joins_only_one_family() -> None:
    prs = [row(1, 0, 0.6, same=True, vetoed=True), row(2, 0, 0.6, same=False),
           row(3, 0, 0.1, same=True), row(4, 0, 0.95, same=True, vetoed=True)]
    joined, asked = bench.judged(prs, 0.5, Margins())
    assert joined == {1: 0, 4: 0}  # 3 is under the band: never asked
    assert asked == 3


def test_a_note_joins_its_best_partner() -> None:
    prs = [row(5, 0, 0.6, same=True), row(5, 1, 0.8, same=True), row(5, 2, 0.7, same=False)]
    joined, _ = bench.judged(prs, 0.5, Margins())
    assert joined == {5: 1}


def test_the_label_judge_answers_by_family_and_flips_its_share_when_told() -> None:
    from corpus_quality import PerfectJudge

    from harness.curator.judge import Question
    from harness.curator.text import normalize

    family_of = {"pnpm lint in CI": "lint", "run pnpm lint on CI": "lint", "go vet": "vet"}
    key = {text: normalize(text).key for text in family_of}
    same = Question(("worker", "TRICK"), key["run pnpm lint on CI"], key["pnpm lint in CI"], 0)
    other = Question(("worker", "TRICK"), key["go vet"], key["pnpm lint in CI"], 0)
    asked: list = []
    judge = PerfectJudge(family_of, asked)
    assert (judge.ask(same), judge.ask(other), len(asked)) == (True, False, 2)
    flipped = PerfectJudge(family_of, [], error=1.0)
    assert (flipped.ask(same), flipped.ask(other)) == (False, True)


def test_a_perfect_judge_answering_as_model_mode_runs_promotes_no_lesson_twice(
        tmp_path: Path) -> None:
    # data_ml (a development corpus): the real passes of model mode met pairs nobody had
    # asked about, and promoted lessons twice (precision 0.861) until the preview asked them
    import functools
    import sys

    from corpus_quality import CORPORA, PerfectJudge, evaluate

    from harness.curator.settings import CuratorSettings

    asked: list = []
    quality = evaluate(CORPORA / "data_ml", tmp_path, CuratorSettings(identity_chars=sys.maxsize),
                       functools.partial(PerfectJudge, asked=asked), questions=20)
    assert quality.wrong == [] and quality.recall >= 0.9
    assert asked  # through the previews: the real passes ask nothing


def test_a_perfect_judge_in_model_mode_with_identity_bounded_promotes_nothing_wrong(
        tmp_path: Path) -> None:
    # data_ml with the default identity bound: lessons move to identity/archive/ for room,
    # and three came back as other clusters, promoted anew with part of their evidence
    # (precision 0.912) until a due lesson was looked for in the archive too
    import functools

    from corpus_quality import CORPORA, PerfectJudge, evaluate

    quality = evaluate(CORPORA / "data_ml", tmp_path / "work", judge=functools.partial(
        PerfectJudge, asked=[]), questions=20)
    assert list((tmp_path / "work" / "identity" / "archive").glob("*.md"))
    assert quality.wrong == [] and quality.recall >= 0.9


def load_judge_model():
    spec = importlib.util.spec_from_file_location("judge_model", ROOT / "bench" / "judge_model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_model_mode_end_to_end_joins_what_the_model_says_is_one_lesson(api, tmp_path: Path) -> None:
    # bench/judge_model.py: curator runs in model mode, the fake API answering from labels
    from conftest import UNSURE_FIRST, UNSURE_SECOND
    from test_corpora import write_corpus

    judge_model = load_judge_model()
    other = "`alembic upgrade head` before `pytest -k db` or the schema is stale"
    corpus = write_corpus(tmp_path / "corpus", [
        (UNSURE_FIRST, "A", "F-001", 1), (UNSURE_SECOND, "A", "F-002", 2),
        (other, "B", "F-003", 3), (other, "B", "F-004", 4)])
    right = judge_model.LabelModel()
    api.respond = right
    quality = judge_model.through_model_mode(corpus, tmp_path / "right", "claude-haiku-4-5",
                                             api.base_url, 20, right)
    assert (quality.precision, quality.recall) == (1.0, 1.0)
    assert right.calls >= 1 and right.asked >= 1
    wrong = judge_model.LabelModel(error=1.0)  # every answer the other way
    api.respond = wrong
    quality = judge_model.through_model_mode(corpus, tmp_path / "wrong", "claude-haiku-4-5",
                                             api.base_url, 20, wrong)
    assert (quality.precision, quality.recall, quality.missed) == (1.0, 0.5, ["A"])


def test_the_label_model_answers_the_pairs_the_prompt_numbers() -> None:
    from fake_api import text

    judge_model = load_judge_model()
    label = judge_model.LabelModel()
    label.family_of = {"use --lf": "lf", "pytest --lf again": "lf", "go vet": "vet"}
    prompt = ("### Same lesson? (answer `same` ...)\n"
              "1. A worker note: pytest --lf again\n   B, an earlier worker TRICK note: use --lf\n"
              "2. A worker note: go vet\n   B, an earlier worker TRICK note: use --lf\n"
              "3. A worker note: use --lf\n"
              "   B, a line of identity/worker.md: - TRICK: pytest --lf again [promoted "
              "2026-06-01; seen 2x 2026-06-01; missions: shop]\n")
    first = label({"messages": [{"role": "user", "content": [text(prompt)]}]})
    assert first[0]["name"] == "curation" and first[0]["input"]["same"] == [1, 3]
    done = label({"messages": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "x", "content": "ok"}]}]})
    assert done[0]["name"] == "finish" and (label.calls, label.asked) == (1, 3)
