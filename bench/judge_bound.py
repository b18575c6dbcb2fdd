"""How far promotions could go if a judge (a model asked "same lesson?") settled the pairs
the curator is unsure of, and how many questions that would take.

    .venv/bin/python bench/judge_bound.py              # development corpora
    .venv/bin/python bench/judge_bound.py --held-out   # and, through the curator, held out

On each development corpus (never a held-out one), every lesson note is paired with each
earlier note of its role and kind, in the curator's reading order (`bench/matcher_train.py`).
The rapidfuzz rule's accepts and the second opinion's joins (probability >= its THRESHOLD,
no conflict) stand as they are; a pair the second opinion scores at or above LOW but under
its threshold, conflicting or not, goes to a perfect judge, which joins exactly the pairs of
one family. Each note joins its best partner, and promotions are counted as
`tests/corpus_quality.py` counts them. The figures are an upper bound for a judge with the
shipped pair model, which was fitted on these corpora: a real model errs, and on new notes
the pair model ranks worse. "None" asks nothing: the curator as it ships.

The second table runs the real curator (`corpus_quality.evaluate`: its index, shortlist and
passes) with a perfect judge, which answers each question the curator asks
(`judge.Judgments.ask`, pairs from `judge.FLOOR`) by the two notes' families. "At once":
each answer comes as the pass asks, so later notes of the pass see it. "Model mode": each
pass runs as `curator.mode: model` does (`harness.run.curation`): a preview collects up to
QUESTIONS pairs (`curate.preview_for_model`), the judge answers them all, and the real pass
clusters with those answers; the pairs it meets that nobody asked are left to the rules.
That is what a model that never errs reaches; "1 in 10 wrong" flips a tenth of its answers.
Identity has its default bound (`prompt.identity_chars`), as users run it: lessons move to
identity/archive/ for room, and one that comes back from there is not counted as a second
promotion (`corpus_quality.evaluate_passes`). With --held-out it runs on the held-out
corpora too: judge.FLOOR was fixed before they were run through it, and nothing was
changed after.
"""

from __future__ import annotations

import argparse
import collections
import functools
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests")]

import matcher_train  # noqa: E402 - bench/ is not a package
from corpus_quality import (  # noqa: E402
    PerfectJudge,
    development_corpora,
    evaluate,
    held_out_corpora,
)

from harness.config import CuratorConfig  # noqa: E402
from harness.curator import learned  # noqa: E402
from harness.curator.settings import CuratorSettings  # noqa: E402

LOWS = (None, 0.5, 0.2, 0.05)  # the judge is asked about pairs scored in [LOW, THRESHOLD)
QUESTIONS = CuratorConfig().questions  # asked per pass in model mode, by default


def judged(prs: list[tuple], low: float | None,
           model: learned.PairModel) -> tuple[dict[int, int], int]:
    """Each note's best partner (`matcher_train.best_partners`), and how many questions
    the judge got."""
    cut = learned.log_odds(learned.THRESHOLD)
    floor = None if low is None else learned.log_odds(low)
    joins, asked = [], 0
    for x, same, i, j, accepted, vetoed in prs:
        margin = 1e9 if accepted else model.margin(x)
        if not accepted and not (margin >= cut and not vetoed):
            if floor is None or margin < floor:
                continue
            asked += 1
            if not same:
                continue  # the judge says no
        joins.append((i, j, margin))
    return matcher_train.best_partners(joins), asked


def through_curator(folders: list[Path]) -> None:
    """Each corpus through the curator: without a judge, with a perfect one answering at
    once, and with one answering as model mode runs (QUESTIONS per pass; also 1 in 10
    answers wrong)."""
    settings = CuratorSettings()
    print(f"\n{'through the curator':20} {'P / R as shipped':>17} {'perfect, at once':>17} "
          f"{'perfect, model mode':>20} {'1 in 10 wrong':>15} {'questions per lesson note':>26}")
    for folder in folders:
        figures, asked = [], []
        runs = ((None, None), (functools.partial(PerfectJudge, asked=[]), None),
                (functools.partial(PerfectJudge, asked=asked), QUESTIONS),
                (functools.partial(PerfectJudge, asked=[], error=0.1), QUESTIONS))
        for judge, questions in runs:
            with tempfile.TemporaryDirectory(prefix="judge-bound-") as work:
                q = evaluate(folder, Path(work), settings, judge, questions)
            figures.append(f"{q.precision:.3f} / {q.recall:.3f}")
        notes = len(matcher_train.notes_in_order(folder)[0])
        print(f"{folder.name:20} {figures[0]:>17} {figures[1]:>17} {figures[2]:>20} "
              f"{figures[3]:>15} {len(asked) / notes:26.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--held-out", action="store_true",
                        help="run the held-out corpora through the curator too")
    args = parser.parse_args()
    bound()
    through_curator(development_corpora() + (held_out_corpora() if args.held_out else []))


def bound() -> None:
    """The first table: a perfect judge over every earlier note (an upper bound)."""
    model, similarity = learned.model(), CuratorSettings().similarity
    corpora = []
    for folder in development_corpora():
        notes, expected = matcher_train.notes_in_order(folder)
        corpora.append((folder.name, notes, expected, matcher_train.pairs(notes, similarity)))
    print(f"{'judge asked from':18} {'mean P':>7} {'mean R':>7} {'min R':>7} "
          f"{'questions per lesson note':>26}")
    for low in LOWS:
        figures = collections.defaultdict(list)
        for _, notes, expected, prs in corpora:
            partner, asked = judged(prs, low, model)
            p, r = matcher_train.promotions_of(notes, partner, expected)
            figures["p"].append(p)
            figures["r"].append(r)
            figures["q"].append(asked / len(notes))
        label = "none (as shipped)" if low is None else f"p >= {low}"
        mean_p, mean_r = statistics.mean(figures["p"]), statistics.mean(figures["r"])
        print(f"{label:18} {mean_p:7.3f} {mean_r:7.3f} {min(figures['r']):7.3f} "
              f"{statistics.mean(figures['q']):26.2f}")
    print(f"({len(corpora)} development corpora: {', '.join(name for name, *_ in corpora)})")


if __name__ == "__main__":
    main()
