"""A judge on "same lesson?": which pairs it is asked, what its answers do, where they live."""

import contextlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import UNSURE_FIRST, UNSURE_SECOND
from corpus_quality import stored_lessons

from harness.curator import curatordb
from harness.curator.curate import CuratorSettings, curate, preview_for_model
from harness.curator.identity import IdentityIndex
from harness.curator.judge import Judgments, Question
from harness.curator.matching import LessonIndex, same_lesson
from harness.curator.text import normalize
from tests.test_curatordb import forget

# one lesson in other words: the rule refuses it, and it is among the lessons most like
# each other (conftest)
FIRST, SECOND = UNSURE_FIRST, UNSURE_SECOND
ALIKE = "run `docker compose up --wait` so the tests start after the db is healthy"
OTHER = "the frontend build needs NODE_OPTIONS=--max-old-space-size=4096 or it runs out"
BUCKET = ("worker", "TRICK")
PAIR = (BUCKET, normalize(SECOND).key, normalize(FIRST).key)


def index(judge: Judgments) -> tuple[LessonIndex, int]:
    """An index holding FIRST as cluster 0; the cluster SECOND is then given."""
    ix = LessonIndex(75, judge=judge)
    ix.assign(BUCKET, normalize(FIRST), 0)
    return ix, ix.assign(BUCKET, normalize(SECOND), 1)


def test_an_unsure_pair_is_asked_once_and_kept_apart_meanwhile() -> None:
    assert not same_lesson(FIRST, SECOND, 75)
    judge = Judgments(budget=5)
    _, cluster = index(judge)
    assert cluster == 1
    assert judge.questions == [Question(BUCKET, *PAIR[1:], 0)]
    judge.ask(judge.questions[0])
    assert len(judge.questions) == 1


def test_a_recorded_same_joins_and_a_recorded_apart_keeps_apart_unasked() -> None:
    assert index(Judgments({PAIR: True}))[1] == 0
    judge = Judgments({PAIR: False}, budget=5)
    assert index(judge)[1] == 1 and judge.questions == []


def test_nothing_is_asked_without_a_budget_nor_about_pairs_the_rules_decide() -> None:
    judge = Judgments()
    assert not judge.active() and index(judge)[1] == 1 and judge.questions == []
    judge = Judgments(budget=5)
    ix = LessonIndex(75, judge=judge)
    ix.assign(BUCKET, normalize(ALIKE), 0)
    assert ix.assign(BUCKET, normalize(ALIKE.replace("run", "use")), 1) == 0  # the rule
    assert ix.assign(BUCKET, normalize(OTHER), 1) == 1  # nothing alike enough to ask
    assert judge.questions == []


NPM = "npm cache needs to live in a writable location for this sandbox"
UV = "uv cache needs to live in a writable location for this sandbox"


def test_a_swapped_word_is_no_join_for_the_rules_but_a_question_for_the_judge() -> None:
    # the same sentence about another tool: the score is high, but each side has a word
    # the other lacks, so only a judge may join them; a note whose words only add to an
    # earlier one's is still joined by the rules
    assert same_lesson(NPM, UV, 75)  # the score alone would join them
    pair = (BUCKET, normalize(UV).key, normalize(NPM).key)
    for judge, cluster in ((Judgments(), 1), (Judgments(budget=5), 1),
                           (Judgments({pair: True}), 0), (Judgments({pair: False}), 1)):
        ix = LessonIndex(75, judge=judge)
        ix.assign(BUCKET, normalize(NPM), 0)
        assert ix.assign(BUCKET, normalize(UV), 1) == cluster
    asking = Judgments(budget=5)
    ix = LessonIndex(75, judge=asking)
    ix.assign(BUCKET, normalize(NPM), 0)
    ix.assign(BUCKET, normalize(UV), 1)
    assert asking.questions == [Question(BUCKET, *pair[1:], 0)]
    assert ix.assign(BUCKET, normalize(NPM + " here"), 2) == 0  # no swap: the rule joins


def test_the_budget_bounds_the_notes_asked_about_in_a_pass() -> None:
    third = normalize("use --lf so pytest only repeats the tests that failed before")
    for budget, notes in ((5, 2), (2, 2), (1, 1), (0, 0)):
        judge = Judgments(budget=budget)
        ix, _ = index(judge)
        ix.assign(BUCKET, third, 2)  # unsure of both earlier notes too
        assert len({q.key for q in judge.questions}) == notes
        # a note is asked about its K most similar lessons at most, in one question
        assert all(sum(q.key == key for q in judge.questions) <= 2
                   for key in {q.key for q in judge.questions})


def test_a_candidate_sharing_too_little_is_not_asked_about() -> None:
    judge = Judgments(budget=5)
    ix = LessonIndex(75, judge=judge)
    ix.assign(BUCKET, normalize(FIRST), 0)
    # one word in common (api), of many: under judge.MIN_SCORE
    ix.assign(BUCKET, normalize("the api docs live in docs/ and are built with mkdocs on "
                                "every push to main"), 1)
    assert judge.questions == []


def test_questions_about_identity_have_their_own_budget() -> None:
    # the notes' questions used the whole budget: a due lesson is still checked against
    # identity by the judge, not promoted again in other words by the rules alone
    judge = Judgments(budget=1)
    index(judge)
    assert len(judge.questions) == 1 and not judge.asking(BUCKET)
    known = IdentityIndex(75, judge=judge)
    known.add_text("worker", f"- TRICK: {FIRST}")
    assert not known.knows("worker", SECOND)
    assert [q.bucket for q in judge.questions] == [BUCKET, "worker"]
    assert not known.knows("worker", ALIKE) and len(judge.questions) == 2  # its budget: 1


def test_identity_knows_a_lesson_a_judge_said_it_holds() -> None:
    line = f"- TRICK: {FIRST} [promoted 2026-06-01; seen 2x 2026-06-01; missions: shop]"
    # without a judge, a lesson that may be the line in other words counts as held (it
    # waits); a judge's "new" lets it through
    for judge, knows in ((None, True), (Judgments({("worker", *PAIR[1:]): True}), True),
                         (Judgments({("worker", *PAIR[1:]): False}), False)):
        known = IdentityIndex(75, judge=judge)
        known.add_text("worker", line)
        assert known.knows("worker", SECOND) is knows
    asking = Judgments(budget=5)
    known = IdentityIndex(75, judge=asking)
    known.add_text("worker", line)
    assert not known.knows("worker", SECOND)
    assert [(q.bucket, known.line(q.other_cluster)) for q in asking.questions] == [
        ("worker", line)]


def test_answers_are_recorded_once_each_and_read_by_the_note_they_are_about(
        tmp_path: Path) -> None:
    answers = {PAIR: True, ("validator", "a b", "c d"): False}
    rows = curatordb.answer_rows(answers, "2026-06-01T00:00:00Z", "shop")
    assert curatordb.connect(tmp_path, write=False) is None
    assert curatordb.recorded_answers(None) is None
    with contextlib.closing(curatordb.connect(tmp_path)) as conn:  # type: ignore[arg-type]
        assert curatordb.recorded_answers(conn) is None  # none recorded yet
    curatordb.append_answers(tmp_path, rows)
    curatordb.append_answers(tmp_path,
                             curatordb.answer_rows({PAIR: False}, "2026-06-02T00:00:00Z", "shop"))
    curatordb.append_answers(tmp_path, rows)  # a redone journal step
    assert curatordb.read_answers(tmp_path) == answers  # the first answer stands
    with contextlib.closing(curatordb.connect(tmp_path, write=False)) as conn:  # type: ignore
        about = curatordb.recorded_answers(conn)
        assert about is not None
        assert about(BUCKET, PAIR[1]) == {PAIR[2]: True}
        assert about("validator", "a b") == {"c d": False}
        assert about(BUCKET, "never asked") == {}
        judge = Judgments(recorded=about)
        assert judge.active() and judge.about(BUCKET, PAIR[1]) == {PAIR[2]: True}
        assert judge.about(BUCKET, "never asked") == {}


def raw_line(feature: str, text: str, minute: int) -> str:
    return (f"[2026-06-01T10:{minute:02d}:00Z] worker {feature} TRICK: {text} "
            f"(run r{minute}-worker-{feature})\n")


@pytest.mark.parametrize("damage", [  # the lesson rows gone, or a hand damaged
    "DELETE FROM lesson_meta", "UPDATE lesson_meta SET v = 'not json' WHERE k = 'end'"])
def test_a_pass_asks_then_one_with_the_answer_promotes_records_it_and_a_rebuild_agrees(
        tmp_path: Path, damage: str) -> None:
    state, identity = tmp_path / "state", tmp_path / "identity"
    state.mkdir()
    identity.mkdir()
    (state / "raw.md").write_text(raw_line("F-001", FIRST, 1) + raw_line("F-002", SECOND, 2))
    preview = curate(state, identity, "shop", CuratorSettings(), dry_run=True,
                     judge=Judgments(budget=5))
    assert preview.promoted == []
    assert preview.questions == [(PAIR, SECOND, FIRST)]
    report = curate(state, identity, "shop", CuratorSettings(), judge=Judgments({PAIR: True}))
    assert [p.text for p in report.promoted] == [FIRST]
    assert curatordb.read_answers(identity) == {PAIR: True}
    assert not (state / "curator" / "journal.json").exists()
    # the lesson rows made again from the record cluster the two notes as one again, as the
    # recorded answer says: nothing new is due, no lesson of the second note's words apart
    with contextlib.closing(sqlite3.connect(identity / curatordb.NAME)) as conn, conn:
        conn.execute(damage)
    with open(state / "raw.md", "a") as raw:
        raw.write(raw_line("F-003", SECOND, 3))
    again = curate(state, identity, "shop", CuratorSettings())
    assert again.promoted == [] and again.questions == []
    assert [ev.count for ev in stored_lessons(identity, 75.0)] == [3]


def test_explain_finds_a_note_in_the_lesson_a_judge_joined_it_to(tmp_path: Path) -> None:
    from harness.curator.explain import explain

    state, identity = tmp_path / "state", tmp_path / "identity"
    state.mkdir()
    identity.mkdir()
    (state / "raw.md").write_text(raw_line("F-001", FIRST, 1) + raw_line("F-002", SECOND, 2))
    curate(state, identity, "shop", CuratorSettings(), judge=Judgments({PAIR: True}))
    forget(identity)  # explain clusters the record itself
    said = explain(state, identity, SECOND, 75.0)
    assert "evidence: 2 notes" in said
    assert "judge: 1 answers recorded about its notes: 1 'same' (joined), 0 'new'" in said
    (identity / curatordb.NAME).unlink()
    said = explain(state, identity, SECOND, 75.0)
    assert "evidence: 1 note," in said and "judge:" not in said


def test_a_model_mode_preview_asks_too_what_the_real_pass_meets_once_a_pair_is_one(
        tmp_path: Path) -> None:
    # identity holds the lesson already (another mission's words: SECOND's). Until the
    # pair is one lesson nothing is due, so nothing is asked about identity; once the
    # model says "same", the real pass finds it due and must know whether identity holds it
    state, identity = tmp_path / "state", tmp_path / "identity"
    state.mkdir()
    identity.mkdir()
    (identity / "worker.md").write_text(
        f"- TRICK: {SECOND} [promoted 2026-05-01; seen 2x 2026-05-01; missions: blog]\n")
    (state / "raw.md").write_text(raw_line("F-001", FIRST, 1) + raw_line("F-002", SECOND, 2))
    about_identity = ("worker", normalize(FIRST).key, normalize(SECOND).key)
    plain = curate(state, identity, "shop", CuratorSettings(), dry_run=True,
                   judge=Judgments(budget=5))
    assert [pair for pair, _, _ in plain.questions] == [PAIR]
    # answered only that, the real pass would promote the lesson a second time
    assert [p.text for p in curate(state, identity, "shop", CuratorSettings(), dry_run=True,
                                   judge=Judgments({PAIR: True})).promoted] == [FIRST]
    preview = preview_for_model(state, identity, "shop", CuratorSettings(), 5)
    assert [pair for pair, _, _ in preview.questions] == [PAIR, about_identity]
    assert preview.questions[1][1:] == (FIRST, f"- TRICK: {SECOND} [promoted 2026-05-01; "
                                               "seen 2x 2026-05-01; missions: blog]")
    report = curate(state, identity, "shop", CuratorSettings(),
                    judge=Judgments({PAIR: True, about_identity: True}))
    assert report.promoted == []
    assert (identity / "worker.md").read_text().count("TRICK") == 1


def test_a_model_mode_preview_keeps_to_the_budget_of_each_kind(tmp_path: Path) -> None:
    state, identity = tmp_path / "state", tmp_path / "identity"
    state.mkdir()
    identity.mkdir()
    (identity / "worker.md").write_text(f"- TRICK: {SECOND} [promoted 2026-05-01]\n")
    (state / "raw.md").write_text(raw_line("F-001", FIRST, 1) + raw_line("F-002", SECOND, 2))
    preview = preview_for_model(state, identity, "shop", CuratorSettings(), 1)
    assert [pair[0] for pair, _, _ in preview.questions] == [BUCKET, "worker"]
    assert preview_for_model(state, identity, "shop", CuratorSettings(), 0).questions == []


def test_a_due_lesson_is_asked_about_one_identity_line_the_surest() -> None:
    # each line asked about is a chance for a wrong "same" to keep the lesson out
    lines = f"- TRICK: {FIRST}\n- TRICK: use --lf so pytest only repeats the failed tests\n"
    keys = {normalize(FIRST).key, normalize("use --lf so pytest only repeats the failed tests").key}
    judge = Judgments(budget=5)
    known = IdentityIndex(75, judge=judge)
    known.add_text("worker", lines)
    assert not known.knows("worker", SECOND)
    assert [q.bucket for q in judge.questions] == ["worker"]  # of two lines it scores
    # an answer recorded about the other line still counts
    (unasked,) = keys - {judge.questions[0].other}
    known = IdentityIndex(75, judge=Judgments({("worker", normalize(SECOND).key, unasked): True}))
    known.add_text("worker", lines)
    assert known.knows("worker", SECOND)


def test_the_candidates_rank_the_same_under_every_hash_seed() -> None:
    # the words' weights were summed in a set's order, which changes with the hash seed:
    # the last bit of a score moved, and with it which of two equal candidates was asked
    script = ("from harness.curator.judge import similarity\n"
              "a = 'alpha bravo charlie delta echo foxtrot golf hotel'\n"
              "b = 'alpha bravo charlie delta india juliet kilo lima'\n"
              "df = {w: i * 7 + 3 for i, w in enumerate(sorted(set((a + ' ' + b).split())))}\n"
              "print(repr(similarity(a, b, df)))")
    scores = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             check=True, env={**os.environ, "PYTHONHASHSEED": str(seed)}
                             ).stdout for seed in range(12)}
    assert len(scores) == 1, scores
