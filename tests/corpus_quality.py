"""Promotion quality on a labelled corpus: precision and recall of the curator's promotions.

A corpus is a folder with `corpus.tsv` (mission TAB family TAB raw.md line; family `-` for
noise) and `expected.tsv` (role TAB kind TAB family, one per lesson the rules make due).
`tests/data/curator_corpus` is the development set of the match rule (its constants were
tuned on it). The folders under `tests/data/corpora/` were written independently of it and
of each other. The judge's K and MIN_SCORE (`harness.curator.judge`) were chosen on the
development set and the FITTED ones (`development_corpora`; dev_real_tools and dev_real_apps,
real agents' notes, joined them later); the rest are held out:
nothing was tuned or fitted on them. Held out, by the round that first measured them:
mobile_native, python_services and systems_cpp (round 2; since used in experiments that
changed nothing, so count them as development for any later tuning); dotnet_enterprise,
rails_ops, research_hpc and web3_tooling (round 3); elixir_phoenix and php_laravel
(round 4); llm_apps and julia_r_stats (round 5). Used by tests/test_corpora.py,
bench/suite.py, bench/judge_bound.py and bench/judge_model.py
(`evaluate_passes`); `PerfectJudge`, a judge that answers from the labels, by
bench/judge_bound.py and bench/lessons.py too.
"""

from __future__ import annotations

import collections
import random
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from harness.curator.curate import CuratorReport, CuratorSettings, curate, preview_for_model
from harness.curator.identity import identity_lessons
from harness.curator.judge import Judgments, Question
from harness.curator.lessondb import open_store
from harness.curator.promotion import Evidence, Promotion
from harness.curator.text import normalize
from harness.state.memory import parse_entry

DATA = Path(__file__).resolve().parent / "data"
DEVELOPMENT = DATA / "curator_corpus"
CORPORA = DATA / "corpora"
# written apart from the match rule, then used (with it) to choose the judge's constants
FITTED = ("web_mobile", "data_ml", "infra_systems", "jvm_services", "games_scripting",
          "embedded_rust", "frontend_monorepo", "cloud_data_ops", "dev_real_tools",
          "dev_real_apps")
NOW = "2026-06-01T00:00:00Z"  # every pass's date: promotions made on it, and kept
PARTS = 3  # each mission's log is fed in thirds, missions interleaved, as cron passes would


@dataclass
class Quality:
    name: str
    lines: int
    expected: int
    promoted: int
    right: int
    missed: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)  # promoted texts that were not deserved

    @property
    def precision(self) -> float:
        return self.right / self.promoted if self.promoted else 1.0

    @property
    def recall(self) -> float:
        return self.right / self.expected if self.expected else 1.0

    def describe(self) -> str:
        return (f"{self.name}: {self.lines} lines, {self.expected} expected promotions, "
                f"{self.promoted} made, precision {self.precision:.3f}, recall "
                f"{self.recall:.3f}; missed: {sorted(self.missed)}")


def development_corpora() -> list[Path]:
    """What the match rule was tuned on, and the judge's constants chosen on."""
    return [DEVELOPMENT, *(CORPORA / name for name in FITTED)]


def held_out_corpora() -> list[Path]:
    """The corpora nothing was tuned or fitted on."""
    return sorted(p for p in CORPORA.iterdir()
                  if (p / "corpus.tsv").exists() and p.name not in FITTED)


def read_corpus(folder: Path) -> tuple[list[list[str]], set[tuple[str, ...]]]:
    """corpus.tsv's rows and expected.tsv's lessons; a file saved with a BOM or CRLF endings
    reads the same, blank lines are skipped, and a short row is a ValueError naming it."""
    rows = _tsv(folder / "corpus.tsv", 3)
    return rows, {tuple(row) for row in _tsv(folder / "expected.tsv", 3)}


def _tsv(path: Path, fields: int) -> list[list[str]]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8-sig").split("\n"), 1):
        if not line.strip():
            continue
        row = line.rstrip("\r").split("\t", fields - 1)
        if len(row) != fields:
            raise ValueError(f"{path}:{n}: expected {fields} tab-separated fields, got {len(row)}")
        rows.append(row)
    return rows


def reading_order(rows: list[list[str]]) -> Iterator[tuple[str, list[list[str]]]]:
    """(mission, rows) as cron passes would read them: each mission's rows in PARTS
    chunks, the missions interleaved."""
    missions = list(dict.fromkeys(m for m, _, _ in rows))
    for part in range(PARTS):
        for mission in missions:
            mine = [row for row in rows if row[0] == mission]
            yield mission, mine[part * len(mine) // PARTS:(part + 1) * len(mine) // PARTS]


def due_by_rule(rows: list[list[str]]) -> set[tuple[str, str, str]]:
    """The families the promotion rules make due, from the labelled reports alone."""
    workers, runs, missions, kinds = (collections.defaultdict(set) for _ in range(4))
    for mission, family, line in rows:
        e = parse_entry(line)
        if e and family != "-":
            workers[family].add((mission, e.feature))  # a retry on one feature is an echo
            runs[family].add((mission, e.run))
            missions[family].add(mission)
            kinds[family] = (e.role, e.kind)
    return {(*kinds[f], f) for f in kinds
            if (kinds[f][1] == "TRICK" and len(workers[f]) >= 2)
            or (kinds[f][1] == "FAIL" and len(missions[f]) >= 2)
            or (kinds[f][1] == "FORGOT" and len(runs[f]) >= 2)}


def evaluate(folder: Path, work: Path, settings: CuratorSettings | None = None,
             judge: Callable[[dict[str, str]], Judgments] | None = None,
             questions: int | None = None) -> Quality:
    """Feed the corpus to the curator in `work` and score what it promotes; `judge`, given
    each note's family by its text, makes each pass's judge (`bench/judge_bound.py`). It
    answers each question at once, unless `questions` is given: then each pass runs as
    model mode does (`harness.run.curation`), a preview asking up to that many, the
    judge answering them all, then the real pass with the answers."""
    settings = settings or CuratorSettings()

    def run_pass(state: Path, identity: Path, mission: str,
                 family_of: dict[str, str]) -> list[Promotion]:
        pass_judge = judge(family_of) if judge else None
        if pass_judge is not None and questions is not None:
            pass_judge = answered(preview_for_model(state, identity, mission, settings,
                                                    questions, now=NOW), pass_judge)
        return curate(state, identity, mission, settings, now=NOW, judge=pass_judge).promoted

    return evaluate_passes(folder, work, run_pass)


def evaluate_passes(folder: Path, work: Path,
                    run_pass: Callable[[Path, Path, str, dict[str, str]], list[Promotion]]
                    ) -> Quality:
    """Feed the corpus in `reading_order`, each chunk appended to its mission's raw.md in
    `work` and then `run_pass(state, identity, mission, family_of)` (what it promotes),
    and score the promotions. A lesson back from identity/archive/ (its line moved out for
    room, then the lesson recurred) is not counted; one promoted again while identity holds
    it is wrong."""
    rows, expected = read_corpus(folder)
    family_of, family_runs = {}, collections.defaultdict(set)
    for _, family, line in rows:
        e = parse_entry(line)
        if e and family != "-":
            family_of[e.text] = family
            family_runs[family].add(e.run)
    identity = work / "identity"
    promoted = []
    for mission, chunk in reading_order(rows):
        state = work / mission
        state.mkdir(parents=True, exist_ok=True)
        with open(state / "raw.md", "a") as f:
            f.write("".join(line + "\n" for _, _, line in chunk))
        held = families_in_identity(identity, family_of)
        promoted += [(p, held) for p in run_pass(state, identity, mission, family_of)]
    right, counted, wrong, returned = 0, {}, [], 0
    for p, held in promoted:
        family = family_of.get(p.text)
        first_run = p.evidence.runs[:1]
        if first_run and counted.get(family) == first_run and (p.role, family) not in held:
            returned += 1  # the same lesson back from identity/archive/: it recurred
            continue
        # deserved: an expected lesson, first time, backed only by its own reports
        if ((p.role, p.kind, family) in expected and family not in counted
                and set(p.evidence.runs) <= family_runs[family]):
            right += 1
            counted[family] = first_run  # the lesson's first run: how a return is known
        else:
            wrong.append(p.text)
    missed = [f for _, _, f in expected if f not in counted]
    return Quality(folder.name, len(rows), len(expected), len(promoted) - returned, right,
                   missed, wrong)


def answered(preview: CuratorReport, judge: PerfectJudge) -> Judgments:
    """The answers `judge` gives to the questions of a `preview`, as `harness.run.judging`
    takes them (the real pass asks nothing more): one answer per note, "same as #i" or "new"
    (`PerfectJudge.choose`), a "same" standing only if the second look (`confirm`) says so
    too, told as an answer per pair shown."""
    shown: dict[tuple, list[str]] = {}
    for (bucket, key, other), _, _ in preview.questions:
        shown.setdefault((bucket, key), []).append(other)
    answers = {}
    for (bucket, key), others in shown.items():
        chosen = judge.choose(key, others)
        if chosen is not None and not judge.confirm(key, chosen):
            chosen = None
        answers.update({(bucket, key, other): other == chosen for other in others})
    return Judgments(answers)


def families_in_identity(identity: Path, family_of: dict[str, str]) -> set[tuple[str, str]]:
    """(role, family) of each lesson the role files hold now (not those in the archive)."""
    return {(path.stem, family_of.get(lesson, "?")) for path in identity.glob("*.md")
            for lesson in identity_lessons(path.read_text(encoding="utf-8"))}


def stored_lessons(identity: Path, similarity: float) -> list[Evidence]:
    """Every lesson the curator database holds for `similarity`'s rule, in cluster order."""
    store = open_store(identity, similarity, write=False)
    try:
        return [Evidence.from_row(row) for cid in range(store.first_cluster)
                if (row := store.lesson_row(cid))]
    finally:
        store.close()


class PerfectJudge(Judgments):
    """Answers each question at once, by the families of the two notes (by their keys);
    with `error`, that share of its answers (drawn from a fixed seed) the wrong way."""

    def __init__(self, family_of: dict[str, str], asked: list[Question],
                 error: float = 0.0, seed: int = 0) -> None:
        super().__init__(budget=sys.maxsize)
        self.family = {normalize(text).key: family for text, family in family_of.items()}
        self.asked, self.error = asked, error
        self.draw = random.Random(len(asked) * 7919 + seed)

    def choose(self, key: str, others: list[str]) -> str | None:
        """The one of `others` the note `key` says the lesson of, or None ("new"); with
        `error`, that share of the answers is another choice, drawn at random."""
        self.asked.extend(others)
        family = self.family.get(key)
        right = next((o for o in others if family is not None
                      and self.family.get(o) == family), None)
        if self.error and self.draw.random() < self.error:
            wrong = [o for o in [*others, None] if o != right]
            return self.draw.choice(wrong)
        return right

    def confirm(self, key: str, other: str) -> bool:
        """The second look at a "same": whether the two notes are of one family; with
        `error`, that share of these answers the wrong way too, drawn apart from `choose`'s."""
        family = self.family.get(key)
        same = family is not None and family == self.family.get(other)
        return not same if self.error and self.draw.random() < self.error else same

    def ask(self, question: Question) -> bool:
        self.asked.append(question)
        return self.confirm(question.key, question.other)  # one pair, answered at once
