"""A model's answers (`harness.run.judging`) to "same lesson?" where the rule is unsure."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

from harness.curator.lessondb import Variant
from harness.curator.text import Norm

# Chosen on the development corpora (`bench/judge_bound.py`, each "same" looked at twice): of
# 11, 9 meet the never-erring judge's goal and 10 the noisy one's (K 2, MIN_SCORE 8: 9 and 8),
# at about 1.3 questions a note; rapidfuzz's token_set_ratio ranked worse.
K = 3  # candidate lessons shown per note
MIN_SCORE = 6.0  # a candidate sharing less (`similarity`, 0-100) is not worth a question
# Identity: its one closest line, as each line asked risks a wrong "same" keeping a due lesson
# out, but at any score, as a lesson promoted twice in other words is the costlier mistake.
IDENTITY_ASKED = 1
IDENTITY_MIN_SCORE = 0.0


class Question(NamedTuple):
    """Is the note `key` the lesson of `other`, of cluster (or identity line) `other_cluster`?"""

    bucket: Any  # (role, kind), or a role when the question is about its identity file
    key: str  # `text.normalize` keys, as `other`
    other: str
    other_cluster: int


def about_identity(bucket: Any) -> bool:
    """Whether a question in `bucket` is about identity: a role's bucket, not (role, kind)."""
    return isinstance(bucket, str)


def similarity(a: str, b: str, df: dict[str, int]) -> float:
    """The share (0-100) of word weight in common, rare words (`df`) more; fsum: any seed's sum."""
    wa, wb = set(a.split()), set(b.split())
    weight = {w: 1.0 / (1.0 + math.log1p(df.get(w, 0))) for w in wa | wb}
    union = math.fsum(weight.values())
    return 100.0 * math.fsum(weight[w] for w in wa & wb) / union if union else 0.0


class Judgments:
    """Answers (`fresh`, `recorded`), and questions about `budget` notes (and due lessons)."""

    def __init__(self, answers: dict[tuple[Any, str, str], bool] | None = None, *, budget: int = 0,
                 recorded: Callable[[Any, str], dict[str, bool]] | None = None) -> None:
        self.budget, self.recorded = budget, recorded
        self.questions: list[Question] = []
        self._asked: list[set[str]] = [set(), set()]  # notes asked about: clustering, identity
        self.fresh = dict(answers or {})
        self._fresh: dict[tuple[Any, str], dict[str, bool]] = {}  # note -> other -> same
        for (bucket, key, other), same in self.fresh.items():
            self._fresh.setdefault((bucket, key), {})[other] = same
        self._answers: dict[tuple[Any, str], dict[str, bool]] = {}  # `_fresh` over recorded

    def active(self) -> bool:
        """Whether there is anything to answer or ask: else a pass leaves the judge out."""
        return bool(self.fresh) or self.budget > 0 or self.recorded is not None

    def about(self, bucket: Any, key: str) -> dict[str, bool]:
        """The answers about the note `key`, other key -> same; this pass's over recorded ones."""
        note = (bucket, key)
        if note not in self._answers:
            found = {} if self.recorded is None else self.recorded(bucket, key)
            self._answers[note] = {**found, **self._fresh.get(note, {})}
        return self._answers[note]

    def asking(self, bucket: Any = None, key: str | None = None) -> bool:
        """Whether this pass still asks about the note `key` in `bucket`."""
        asked = self._asked[about_identity(bucket)]
        return key in asked or len(asked) < self.budget

    def decide(self, bucket: Any, norm: Norm, candidates: list[Variant], ask: bool,
               df: dict[str, int]) -> int | None:
        """The first cluster, most alike first, said to be `norm`'s; K unanswered ones asked."""
        identity = about_identity(bucket)
        may_ask, floor = (IDENTITY_ASKED, IDENTITY_MIN_SCORE) if identity else (K, MIN_SCORE)
        scored = [(score, v.owner, v.key) for v in candidates
                  if (score := similarity(norm.key, v.key, df)) >= floor]
        best: dict[int, str] = {}  # cluster -> its best phrasing, best first
        for _, cluster, other in sorted(scored, key=lambda s: -s[0]):  # stable: ties recent first
            best.setdefault(cluster, other)
        answers = self.about(bucket, norm.key)
        for cluster, other in best.items():
            same = answers.get(other)
            if same is None and ask and may_ask > 0:
                may_ask -= 1
                same = self.ask(Question(bucket, norm.key, other, cluster))
            if same:
                return cluster
        return None

    def ask(self, question: Question) -> bool | None:
        """Note `question` (within the budget); None, as the model answers after the pass."""
        if self.asking(question.bucket, question.key) and question not in self.questions:
            self.questions.append(question)
            self._asked[about_identity(question.bucket)].add(question.key)

    def shown(self, note_text: dict[tuple[Any, str], str], lesson_text: Callable[[int], str | None],
              due_text: dict[str, str], identity_line: Callable[[int], str]
              ) -> list[tuple[tuple, str, str]]:
        """The questions as a model is shown them: ((bucket, key, other), text, other text)."""
        out = []
        for q in self.questions:
            identity = about_identity(q.bucket)
            text = due_text.get(q.key) if identity else note_text.get((q.bucket, q.key))
            other = identity_line(q.other_cluster) if identity else lesson_text(q.other_cluster)
            if text is not None and other is not None:
                out.append(((q.bucket, q.key, q.other), text, other))
        return out
