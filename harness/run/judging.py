"""`curator.judge: auto`: the curator role's model decides "same lesson?" in one small call.

A rules pass planned as a dry run (`curate.preview_for_model`) collects the questions: each
new lesson note the rules would not join on their own, with the few lessons most like it,
and each due lesson beside the identity line most like it (`harness.curator.judge`). They
go to the curator role's backend in one run of their own, through the run lifecycle like
any run (prompt, transcript, tokens and cost recorded; `templates/judge.md.j2`: the
questions, not the memory), and the answer, one line per note ("3: same as #1", "4: new"),
is the pass's answers. Each "same" is then asked again the other way round, as a pair
("yes"/"no", `templates/judge_pair.md.j2`, a second small run): a join stands only when both
answers say so, for one wrong "same" would teach identity a lesson no second worker had. The
real pass then clusters with the answers and records them for every later pass.

No question, no call. A backend that cannot authenticate (`unavailable`), a spent budget,
a failed call or an answer that does not parse leaves the rules to decide alone: the pass
goes on and says why (`Verdict.note`); it never fails for its judge. A "same" the second
call does not answer leaves its note to the rules too. A SIGTERM during either call ends
the pass like any run's.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.backends.cli_presets import build_argv
from harness.config import MissionConfig, RoleConfig, load_role_config
from harness.curator.book import clip
from harness.curator.curate import preview_for_model
from harness.curator.identity import identity_file, identity_lessons, role_of
from harness.curator.judge import Judgments, about_identity
from harness.curator.settings import CuratorSettings
from harness.errors import DONE, HarnessError, UsageError
from harness.paths import Paths
from harness.run.lifecycle import call_and_close
from harness.run.outcome import SIGNAL_EXIT, Judged, judge_error, outcome_fields
from harness.run.prepare import Prepared, prepare
from harness.state import ledger
from harness.state.plan import load_plan
from harness.types import Outcome

TEMPLATE = "judge.md.j2"
PAIR_TEMPLATE = "judge_pair.md.j2"  # the second look at each "same"
MAX_TOKENS = 1024  # an answer is a line per note
SHOWN_CHARS = 600  # of each note or lesson: a megabyte of note must not make a question huge
# an agent CLI judging agents' notes may neither edit nor run commands: Claude Code plans
# (read-only), Codex's sandbox is read-only, Gemini asks, and headless nobody approves; nor
# note: no structured answer, whose notes would go to raw.md
NO_TOOLS = {"permission_mode": "plan", "allowed_tools": [], "sandbox": "read-only",
            "approval_mode": "default", "structured_answer": False}
KEYS = {"anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"), "openai": ("OPENAI_API_KEY",)}
_ANSWER = re.compile(r"^\W*(?:note\s*)?(\d+)\s*[:.)\-]\s*(?:(new)\b|same(?:\s+as)?\s*#?\s*(\d+))",
                     re.I | re.M)
_YES_NO = re.compile(r"^\W*(?:pair\s*)?(\d+)\s*[:.)\-]\s*(yes|no)\b", re.I | re.M)

Pair = tuple[Any, str, str]  # (bucket, note key, candidate key): a question's pair


class JudgeInterrupted(HarnessError):
    """SIGTERM during the judge's call: the pass stops there, like any run."""

    exit_code = SIGNAL_EXIT


@dataclass
class Verdict:
    """What the judge gave a pass: its answers (None: the rules decide alone) and why."""

    answers: Judgments | None
    note: str = ""  # for the pass's report: why there was no judge, or what it cost
    run_id: str | None = None


def judged(paths: Paths, mission: MissionConfig, name: str,
           settings: CuratorSettings) -> Verdict:
    """Ask the curator role's model this pass's questions (see the module docstring)."""
    role, _, _ = load_role_config("curator", paths.state, paths.home)
    why = unavailable(role) or _budget_spent(paths, mission)
    if why:
        return Verdict(None, f"judge: none ({why}); the rules decided alone")
    preview = preview_for_model(paths.state, paths.identity, name, settings,
                                mission.curator.questions)
    if not preview.questions:
        return Verdict(None)  # nothing unsure: no call
    notes = grouped(preview.questions)
    answers: dict[Pair, bool] = {}
    result = _call(paths, mission, role, TEMPLATE, {"judge_questions": shown(notes)},
                   lambda answer: parse(answer, notes), answers, len(notes))
    if result.exit_code != DONE or not answers:
        return Verdict(None, f"judge: {result.message or 'no answer'} (run {result.run_id}); "
                       "the rules decided alone", result.run_id)
    note = f"judge: {len(notes)} notes asked in run {result.run_id}"
    note += confirmed(paths, mission, role, notes, answers)  # before the answers are taken
    return Verdict(Judgments(answers) if answers else None, note, result.run_id)


def confirmed(paths: Paths, mission: MissionConfig, role: RoleConfig,
              notes: list[tuple[str, str, list[Pair], list[str]]],
              answers: dict[Pair, bool]) -> str:
    """Ask each "same" of `answers` again as a pair, the lesson first; a "no" makes it "new",
    no answer takes its note's answers out (the rules decide it). Changes `answers`;
    returns what to report."""
    pairs = [(pair, text, other) for _, text, asked, others in notes
             for pair, other in zip(asked, others, strict=True) if answers.get(pair)]
    if not pairs:
        return ""
    yes: dict[Pair, bool] = {}
    why = _budget_spent(paths, mission)
    if why is None:
        result = _call(paths, mission, role, PAIR_TEMPLATE, {"judge_pairs": shown_pairs(pairs)},
                       lambda answer: parse_pairs(answer, pairs), yes, len(pairs))
        why = None if result.exit_code == DONE else result.message
        why = f"{why or 'asked'} in run {result.run_id}"
    for pair, _, _ in pairs:
        if pair not in yes:
            for other in [p for p in answers if p[:2] == pair[:2]]:
                del answers[other]
        elif not yes[pair]:
            answers[pair] = False
    kept = sum(yes.values())
    return f"; {kept} of {len(pairs)} \"same\" confirmed ({why})"


def _call(paths: Paths, mission: MissionConfig, role: RoleConfig, template: str,
          shown_text: dict[str, str], read: Callable[[str], dict[Pair, bool]],
          answers: dict[Pair, bool], asked: int) -> Any:
    """One small run of the curator role on `template` (no tools, one turn): its answer
    read into `answers`. A SIGTERM during it stops the pass."""
    prepared = prepare(paths, "curator", None, load_plan(paths.state), mission,
                       extra=shown_text,
                       role_update={"template": template, "tools": [],
                                    "options": {**role.options, **(
                                        NO_TOOLS if role.backend == "command" else {})},
                                    "caps": role.caps.model_copy(update={
                                        "turns": 1, "max_tokens": MAX_TOKENS})})
    result = call_and_close(paths, prepared, _reader(read, answers, asked))
    if result.exit_code == SIGNAL_EXIT:
        raise JudgeInterrupted(f"curator: {result.message} while its judge worked; "
                               "nothing was curated")
    return result


def unavailable(role: RoleConfig) -> str | None:
    """Why the role's backend cannot judge here, or None: an API backend needs its key (in
    the environment or an env file, loaded before), an agent CLI its program on PATH."""
    if role.backend in KEYS:
        if role.backend == "openai" and (role.options.get("base_url")
                                         or os.environ.get("OPENAI_BASE_URL")):
            return None  # a server of one's own may take no key
        keys = KEYS[role.backend]
        return None if any(os.environ.get(k) for k in keys) else f"no {' or '.join(keys)}"
    if role.backend == "command":
        try:  # the argv a run would start, read as the command backend reads it
            program = build_argv(role.options, role.model, None)[0][0]
        except (UsageError, ValueError) as e:
            return f"its command cannot be read: {e}"
        return None if shutil.which(program) else f"{program} is not on PATH"
    return None


def _budget_spent(paths: Paths, mission: MissionConfig) -> str | None:
    if mission.budget_usd is not None and ledger.spent(paths.state) >= mission.budget_usd:
        return f"the mission budget ${mission.budget_usd:.2f} is spent"
    return None


def grouped(questions: list[tuple[Pair, str, str]]) -> list[tuple[str, str, list[Pair], list[str]]]:
    """The questions by note: (what is asked, the note's words, its pairs, their texts)."""
    notes: dict[tuple[Any, str], tuple[str, str, list[Pair], list[str]]] = {}
    for pair, text, other in questions:
        bucket, identity = pair[0], about_identity(pair[0])
        if (bucket, pair[1]) not in notes:
            asked = (f"is this {role_of(bucket)} lesson already in {identity_file(bucket)}?"
                     if identity else f"a {bucket[0]} {bucket[1]} note")
            notes[(bucket, pair[1])] = (asked, text, [], [])
        _, _, pairs, others = notes[(bucket, pair[1])]
        pairs.append(pair)
        # an identity line by its lesson alone: its provenance is for people, not the question
        others.append(next(identity_lessons(other), other) if identity else other)
    return list(notes.values())


def shown(notes: list[tuple[str, str, list[Pair], list[str]]]) -> str:
    """The questions as the judge's prompt shows them, numbered."""
    lines = []
    for n, (asked, text, _, others) in enumerate(notes, 1):
        lines += [f"Note {n} ({asked}): {clip(text, SHOWN_CHARS)}",
                  *(f"  #{i}: {clip(other, SHOWN_CHARS)}" for i, other in enumerate(others, 1)),
                  ""]
    return "\n".join(lines).rstrip() + "\n"


def parse(answer: str, notes: list[tuple[str, str, list[Pair], list[str]]]) -> dict[Pair, bool]:
    """The pairs' answers from the model's lines; a note answered twice, or with a
    candidate it was not shown, is left unanswered."""
    chosen: dict[int, int | None] = {}
    for number, new, same in _ANSWER.findall(answer):
        n = int(number)
        pick = None if new else int(same)
        if not 1 <= n <= len(notes) or (pick is not None and not 1 <= pick <= len(notes[n - 1][2])):
            continue
        chosen[n] = -1 if n in chosen and chosen[n] != pick else pick
    out: dict[Pair, bool] = {}
    for n, pick in chosen.items():
        if pick != -1:
            out.update({pair: i == pick for i, pair in enumerate(notes[n - 1][2], 1)})
    return out


def shown_pairs(pairs: list[tuple[Pair, str, str]]) -> str:
    """The second look's pairs as its prompt shows them: the lesson first, then the note."""
    return "".join(f"Pair {n}:\n  A: {clip(other, SHOWN_CHARS)}\n"
                   f"  B: {clip(text, SHOWN_CHARS)}\n\n"
                   for n, (_, text, other) in enumerate(pairs, 1)).rstrip() + "\n"


def parse_pairs(answer: str, pairs: list[tuple[Pair, str, str]]) -> dict[Pair, bool]:
    """The pairs' "yes"/"no" lines; a pair answered both ways is left unanswered."""
    said: dict[int, set[bool]] = {}
    for number, word in _YES_NO.findall(answer):
        if 1 <= int(number) <= len(pairs):
            said.setdefault(int(number), set()).add(word.lower() == "yes")
    return {pairs[n - 1][0]: same.pop() for n, same in said.items() if len(same) == 1}


def _reader(read: Callable[[str], dict[Pair, bool]], answers: dict[Pair, bool], asked: int):
    """The lifecycle's judge of the run: reads the answer into `answers`."""
    def judge(_paths: Paths, _prepared: Prepared, outcome: Outcome | None,
              error: BaseException | None) -> Judged:
        if error is not None:
            code, result, message = judge_error(error)
            fields, message = outcome_fields(outcome, error, message)
            return Judged(code, result, message, {**fields, "result": result})
        answers.update(read(outcome.summary if outcome else ""))
        message = (f"{len({p[:2] for p in answers})} of {asked} answered"
                   if answers else "the judge's answer named no note")
        fields, message = outcome_fields(outcome, None, message)
        return Judged(DONE, "done", message, {**fields, "result": "done"})
    return judge
