"""A judge's answers to "same lesson?", for the pairs the rules are unsure of (`matching`).

A note that the rapidfuzz rule joins to no shortlisted phrasing may still be one of them
in other words: the words the two share are few, or a measurement or a short tool name
on one side makes the rule veto the pair. For the shortlisted phrasings the pair model
(`learned`) still scores at FLOOR or more, conflicting or not, a judge may decide; that
includes the one the second opinion would join (out of sample it is right about 95 times
in 100: `bench/matcher_train.py`), which stays joined while the judge has not answered.
With `curator.mode: model` the judge is the curator's model: a dry run collects the pairs
as `Question`s (up to a budget), the model answers, and the real pass and every later one
read the answers (`Judgments.verdict`) from `<identity>/.judgments.db`, so a pass run
again, or a lesson database rebuilt from the candidate record, clusters the same way.

FLOOR was chosen on the development corpora by `bench/judge_bound.py`: a perfect judge
asked from probability 0.5 lifts mean recall from 0.503 to 0.983 there, for 0.84
questions per lesson note. Whether identity already holds a due lesson is asked with no
floor (`identity.IdentityIndex`): identity's few lines make the pair model's word weights
a poor guide there, and a lesson promoted twice in other words is the costlier mistake.
But only about the line it ranks first (IDENTITY_ASKED): every line asked about is a
chance for a wrong "same" to keep a due lesson out. On the development corpora, in model
mode with one answer in ten wrong (means of five draws), asking about every shortlisted
line gave precision 0.966 and recall 0.795, about one line 0.970 and 0.877; a perfect
judge did as well with one (`bench/judge_bound.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.curator import learned
from harness.curator.text import Norm

FLOOR = 0.5  # the pair model's probability from which a judge is asked
IDENTITY_ASKED = 1  # identity lines asked about per due lesson (see the module docstring)


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


class Judgments:
    """Answers, and the questions a pass asks: at most `budget` about the notes it
    clusters, and as many about its due lessons beside identity (`about_identity`), so a
    pass whose notes use up the budget still asks before promoting a lesson twice.

    `answers` are this pass's new ones, (bucket, key, other) -> True (same lesson) or False;
    `recorded` looks up those of earlier passes by note (`verdicts.Recorded.about`).
    """

    def __init__(self, answers: dict[tuple[Any, str, str], bool] | None = None, *,
                 budget: int = 0,
                 recorded: Callable[[Any, str], dict[str, bool]] | None = None) -> None:
        self.budget = budget
        self.recorded = recorded  # (bucket, key) -> the answers earlier passes recorded
        self.questions: list[Question] = []
        self._asked = [0, 0]  # questions about clustering, about identity
        self.texts: dict[str, str] = {}  # a question's note key -> its words (`shown`)
        self.fresh = dict(answers or {})  # new answers: recorded with the pass that got them
        self._answers: dict[tuple[Any, str], dict[str, bool]] = {}
        for (bucket, key, other), same in self.fresh.items():
            self._answers.setdefault((bucket, key), {})[other] = same
        self._looked: set[tuple[Any, str]] = set()  # notes whose recorded answers are in

    def active(self) -> bool:
        """Whether there is anything to answer or ask: else a pass leaves the judge out."""
        return bool(self._answers) or self.budget > 0 or self.recorded is not None

    def wanted(self, bucket: Any, key: str, may_ask: bool) -> bool:
        """Whether an answer is known about the note `key`, or (`may_ask`) this pass
        still asks questions: whether the pair model need score its candidates at all."""
        return bool(self._about(bucket, key)) or (may_ask and self.asking(bucket))

    def _about(self, bucket: Any, key: str) -> dict[str, bool] | None:
        """The answers about the note `key`: this pass's, then those recorded before."""
        note = (bucket, key)
        if self.recorded is not None and note not in self._looked:
            self._looked.add(note)
            found = self.recorded(bucket, key)
            if found:
                self._answers[note] = {**found, **self._answers.get(note, {})}
        return self._answers.get(note)

    def asking(self, bucket: Any = None) -> bool:
        """Whether this pass still asks questions of `bucket`'s kind (see the class)."""
        return self._asked[about_identity(bucket)] < self.budget

    def decide(self, b: Any, norm: Norm, words: set[str], refused: list[tuple],
               vetoed: list[int], ask: bool, floor: float = FLOOR,
               second_opinion: bool = True) -> int | None:
        """The cluster the judge says `norm` belongs to, in `b` (a `matching` bucket): of
        the candidates, (id, key, anchors, strict words) `refused` and ids `vetoed`, those
        the pair model scores at `floor` (at most learned.THRESHOLD) or more, surest first.
        Unanswered pairs are asked when `ask`. The second opinion's pick (with
        `second_opinion`: the surest of `refused` at learned.THRESHOLD, as
        `learned.second_opinion` picks it) is one of them, joined while it has no answer."""
        key = norm.key
        candidates = refused + [(v, b.keys[v], b.anchors[v].replace("!", "").split(),
                                 b.strict[v]) for v in vetoed]
        scored = learned.ranked(key, words, norm.anchors.split(), norm.strict.split(),
                                candidates, b.df, floor)
        second = None
        if second_opinion:
            cut, refused_ids = learned.log_odds(learned.THRESHOLD), {c[0] for c in refused}
            second = next((vid for margin, vid in scored
                           if margin >= cut and vid in refused_ids), None)
        # about identity, only the line the pair model is surest of is asked about
        may_ask = IDENTITY_ASKED if about_identity(b.name) else len(scored)
        for _, vid in scored:
            other = b.keys[vid]
            same = self.verdict(b.name, key, other)
            if same is None and ask and may_ask > 0:
                may_ask -= 1
                same = self.ask(Question(b.name, key, other, b.owner[vid]))
            if same or (same is None and vid == second):
                return b.owner[vid]
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
        found = self._about(bucket, key)
        return None if found is None else found.get(other)

    def ask(self, question: Question) -> bool | None:
        """Note `question` for the judge (within the budget). A judge that answers at once
        (a benchmark's) returns its answer; the model answers after the pass: None."""
        if self.asking(question.bucket) and question not in self.questions:
            self.questions.append(question)
            self._asked[about_identity(question.bucket)] += 1
        return None
