"""Promotion quality through the real curator: the rules alone, and with a judge (a model
asked "same lesson?") that never errs, or errs once in ten answers.

    .venv/bin/python bench/judge_bound.py                    # development corpora
    .venv/bin/python bench/judge_bound.py --held-out         # the held-out corpora
    .venv/bin/python bench/judge_bound.py --corpus DIR --json

Each corpus is fed to the curator as cron passes would feed it (`tests/corpus_quality.py`:
each mission's log in thirds, missions interleaved, identity within its default bound) and
its promotions are scored against the labels. "Rules": `curator.judge: off`. "Perfect":
each pass runs as `curator.judge: auto` does (`harness.run.judging`): a preview collects
the questions (`curate.preview_for_model`, QUESTIONS notes per pass), a judge answering
from the labels answers them all, and the real pass clusters with the answers. "Noisy":
the same with one answer in ten wrong, the mean of DRAWS draws. The questions column is
the judge's questions (candidate lessons shown) per lesson note of the corpus.

The development corpora are those the match rule's constants were chosen on
(`corpus_quality.development_corpora`); nothing was tuned on the held-out ones.
`--json` prints `{"corpus": {"rules": {...}, "perfect": {"precision": P, "recall": R},
"noisy": {...}, "questions_per_note": Q}}`.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from corpus_quality import (  # noqa: E402
    PerfectJudge,
    development_corpora,
    evaluate,
    held_out_corpora,
    read_corpus,
)

from harness.config import CuratorConfig  # noqa: E402
from harness.curator.record import LESSON_KINDS  # noqa: E402
from harness.state.memory import parse_entry  # noqa: E402

QUESTIONS = CuratorConfig().questions  # notes asked about per pass, by default
DRAWS = 5  # noisy judges, each with its own seed


def figures(folder: Path) -> dict:
    """The corpus's precision and recall: rules only, perfect judge, noisy judge."""
    asked: list = []
    out = {"rules": _quality(folder, None),
           "perfect": _quality(folder, functools.partial(PerfectJudge, asked=asked))}
    noisy = [_quality(folder, functools.partial(PerfectJudge, asked=[], error=0.1, seed=n))
             for n in range(DRAWS)]
    out["noisy"] = {name: round(statistics.mean(q[name] for q in noisy), 3)
                    for name in ("precision", "recall")}
    out["questions_per_note"] = round(len(asked) / max(1, _lesson_notes(folder)), 3)
    return out


def _quality(folder: Path, judge) -> dict:
    with tempfile.TemporaryDirectory(prefix="judge-bound-") as work:
        q = evaluate(folder, Path(work), judge=judge,
                     questions=None if judge is None else QUESTIONS)
    return {"precision": round(q.precision, 3), "recall": round(q.recall, 3)}


def _lesson_notes(folder: Path) -> int:
    rows, _ = read_corpus(folder)
    return sum(1 for _, _, line in rows
               if (e := parse_entry(line)) is not None and e.kind in LESSON_KINDS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--held-out", action="store_true", help="the held-out corpora")
    parser.add_argument("--corpus", type=Path, action="append", metavar="DIR",
                        help="a labelled folder in the corpus format (repeatable)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    folders = args.corpus or (held_out_corpora() if args.held_out else development_corpora())
    results = {folder.name: figures(folder) for folder in folders}
    if args.json:
        print(json.dumps(results if len(results) > 1 else next(iter(results.values()))))
        return
    print(f"{'corpus':20} {'rules P / R':>13} {'perfect P / R':>15} {'1 in 10 wrong':>15} "
          f"{'questions/note':>15}")
    for name, f in results.items():
        cells = [f"{f[k]['precision']:.3f} / {f[k]['recall']:.3f}"
                 for k in ("rules", "perfect", "noisy")]
        print(f"{name:20} {cells[0]:>13} {cells[1]:>15} {cells[2]:>15} "
              f"{f['questions_per_note']:15.2f}")
    if len(results) > 1:
        for k in ("rules", "perfect", "noisy"):
            p = [f[k]["precision"] for f in results.values()]
            r = [f[k]["recall"] for f in results.values()]
            print(f"mean {k}: precision {statistics.mean(p):.3f}, recall "
                  f"{statistics.mean(r):.3f}; lowest precision {min(p):.3f}, recall {min(r):.3f}")


if __name__ == "__main__":
    main()
