"""A judge's answers to "same lesson?", for the notes the rules will not join on their own.

The match rule (`matching`) joins a note to a lesson only when it is sure: the words agree
and neither side swaps one of its words for another ("npm cache ..." and "uv cache ..."
are two tricks). Everything else is a semantic judgement, so a judge decides it: for each
new lesson note the rules leave alone, the K lessons of its role and kind most like it
(`shortlist.pool_of`, ranked by `similarity`: the words they share, weighted by rarity)
are its candidates, and the judge answers "same as #i" or "new". No candidate, no question.

K and MIN_SCORE were chosen on the development corpora (`bench/judge_bound.py`, the
hand-written corpora the match rule was tuned on) for a judge that errs once in ten
answers: each candidate shown is a chance for a wrong "same", each left out a chance to
miss a lesson. There, K=2 and MIN_SCORE=8 gave a perfect judge precision 0.993 and recall
0.986, a noisy one 0.939 and 0.889 (rapidfuzz's token_set_ratio as the ranking, at its
best floor: 0.904 and 0.865 noisy), for about one candidate per lesson note.

The judge is the curator role's model (`harness.run.judging`, or model mode): a dry run
collects the questions (`Question`, one per candidate, grouped by note), the model answers
them in one small call, and the real pass and every later one read the answers
(`Judgments.verdict`) from the curator's database (`verdicts`), so a pass run again, or a
lesson database rebuilt from the candidate record, clusters the same way. Without answers
the rules stand: unsure notes stay apart (precision first).

Whether identity already holds a due lesson is asked too, about the one line ranked first
(IDENTITY_ASKED): every line asked about is a chance for a wrong "same" to keep a due
lesson out, and a lesson promoted twice in other words is the costlier mistake.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.curator.text import Norm

K = 2  # candidate lessons shown per note
MIN_SCORE = 8.0  # a candidate sharing less (`similarity`, 0-100) is not worth a question
IDENTITY_ASKED = 1  # identity lines asked about per due lesson (see the module docstring)
IDENTITY_MIN_SCORE = 0.0  # ... however little they share: a lesson twice is the worse error


@dataclass(frozen=True)
class Question:
    """Is the note `key` the lesson of `other`, a phrasing of `other_cluster` (or, in a
    role's bucket, identity line number `other_cluster`)? Keys are `text.normalize` keys."""

    bucket: Any  # (role, kind), or a role when the question is about its identity file
    key: str
    other: str
    other_cluster: int


def about_identity(bucket: Any) -> bool:
    """Whether a question in `bucket` is about identity: a role's bucket, not (role, kind)."""
    return isinstance(bucket, str)


def similarity(a: str, b: str, df: dict[str, int]) -> float:
    """How much of the two texts' word weight they share (0-100), each word weighted by
    its rarity among the bucket's phrasings (`df`)."""
    wa, wb = set(a.split()), set(b.split())
    weight = {w: 1.0 / (1.0 + math.log1p(df.get(w, 0))) for w in wa | wb}
    union = sum(weight.values())
    return 100.0 * sum(weight[w] for w in wa & wb) / union if union else 0.0


def ranked(key: str, candidates: list[tuple[int, str, int]], floor: float,
           df: dict[str, int]) -> list[tuple[int, str]]:
    """(cluster, phrasing key) of `candidates` (vid, key, cluster), the best phrasing of
    each cluster, best first, none under `floor`. Ties keep the candidates'
    order, which is the index's (most recent first within a word)."""
    scored = sorted(((-similarity(key, other, df), n, cluster, other)
                     for n, (_, other, cluster) in enumerate(candidates)))
    out: list[tuple[int, str]] = []
    for score, _, cluster, other in scored:
        if -score < floor:
            break
        if all(cluster != seen for seen, _ in out):
            out.append((cluster, other))
    return out


class Judgments:
    """Answers, and the questions a pass asks: about at most `budget` notes it clusters,
    and as many due lessons beside identity (`about_identity`), so a pass whose notes use
    up the budget still asks before promoting a lesson twice.

    `fresh` holds this pass's new answers, (bucket, key, other) -> True (same lesson) or
    False; `recorded` looks up those of earlier passes by note (`verdicts.Recorded.about`).
    """

    def __init__(self, answers: dict[tuple[Any, str, str], bool] | None = None, *,
                 budget: int = 0,
                 recorded: Callable[[Any, str], dict[str, bool]] | None = None) -> None:
        self.budget, self.recorded = budget, recorded
        self.questions: list[Question] = []
        self._asked: list[set[str]] = [set(), set()]  # notes asked about: clustering, identity
        self.texts: dict[str, str] = {}  # a question's note key -> its words (`shown`)
        self.fresh = dict(answers or {})
        self._answers: dict[tuple[Any, str], dict[str, bool]] = {}  # note -> other -> same
        for (bucket, key, other), same in self.fresh.items():
            self._answers.setdefault((bucket, key), {})[other] = same
        self._looked: set[tuple[Any, str]] = set()  # notes whose recorded answers are in

    def active(self) -> bool:
        """Whether there is anything to answer or ask: else a pass leaves the judge out."""
        return bool(self._answers) or self.budget > 0 or self.recorded is not None

    def wanted(self, bucket: Any, key: str, may_ask: bool) -> bool:
        """Whether an answer is known about the note `key`, or (`may_ask`) this pass
        still asks questions: whether its candidates need ranking at all."""
        return bool(self._about(bucket, key)) or (may_ask and self.asking(bucket, key))

    def _about(self, bucket: Any, key: str) -> dict[str, bool]:
        """The answers about the note `key`: this pass's, over those recorded before (read
        once per note)."""
        note = (bucket, key)
        if self.recorded is not None and note not in self._looked:
            self._looked.add(note)
            if found := self.recorded(bucket, key):
                self._answers[note] = {**found, **self._answers.get(note, {})}
        return self._answers.get(note, {})

    def asking(self, bucket: Any = None, key: str | None = None) -> bool:
        """Whether this pass still asks about the note `key` in `bucket` (see the class)."""
        asked = self._asked[about_identity(bucket)]
        return key in asked or len(asked) < self.budget

    def decide(self, bucket: Any, norm: Norm, candidates: list[tuple[int, str, int]],
               ask: bool, df: dict[str, int]) -> int | None:
        """The cluster the judge says `norm` belongs to, of `candidates` (vid, phrasing key,
        cluster), or None: the first, best first, with a "same" answer. The best K
        (IDENTITY_ASKED about identity) of those without an answer are asked when `ask`."""
        identity = about_identity(bucket)
        may_ask, floor = (IDENTITY_ASKED, IDENTITY_MIN_SCORE) if identity else (K, MIN_SCORE)
        for cluster, other in ranked(norm.key, candidates, floor, df):
            same = self.verdict(bucket, norm.key, other)
            if same is None and ask and may_ask > 0:
                may_ask -= 1
                same = self.ask(Question(bucket, norm.key, other, cluster))
            if same:
                return cluster
        return None

    def shown(self, lesson_text: Callable[[int], str | None], due_text: dict[str, str],
              identity_line: Callable[[int], str]) -> list[tuple[tuple, str, str]]:
        """The questions as a model is shown them: ((bucket, key, other), text, other
        text): a note by its words (`texts`), the phrasing it was compared with by its
        lesson's text, an identity line (a role's bucket) as it stands, a due lesson by its
        text."""
        out = []
        for q in self.questions:
            if about_identity(q.bucket):
                texts = due_text.get(q.key), identity_line(q.other_cluster)
            else:
                texts = self.texts.get(q.key), lesson_text(q.other_cluster)
            if texts[0] is not None and texts[1] is not None:
                out.append(((q.bucket, q.key, q.other), texts[0], texts[1]))
        return out

    def verdict(self, bucket: Any, key: str, other: str) -> bool | None:
        """The answer about the pair, or None."""
        return self._about(bucket, key).get(other)

    def ask(self, question: Question) -> bool | None:
        """Note `question` for the judge (within the budget). A judge that answers at once
        (a benchmark's) returns its answer; the model answers after the pass: None."""
        if self.asking(question.bucket, question.key) and question not in self.questions:
            self.questions.append(question)
            self._asked[about_identity(question.bucket)].add(question.key)
        return None
