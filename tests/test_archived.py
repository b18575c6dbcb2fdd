"""Archived identity lines: found for a lesson by its judge, and brought back with the
evidence merged (identity.IdentityIndex.archived_line_of, promotion.returning)."""

from pathlib import Path

from harness.curator.identity import IdentityIndex
from harness.curator.judge import Judgments
from harness.curator.promotion import Evidence, plan_promotions
from harness.curator.text import normalize

OLD = ("- TRICK: `rg --hidden` finds the dotfiles the search skipped [promoted 2026-03-01; "
       "seen 2x 2026-02-01..2026-02-03; missions: shop; features: F-001, F-002; runs: r1, r2]")
OTHER = ("- TRICK: `alembic upgrade head` before the db tests [promoted 2026-03-01; seen 2x "
         "2026-02-01; missions: shop; features: F-003, F-004; runs: r3, r4]")


def archive(identity: Path, *lines: str) -> Path:
    path = identity / "archive" / "worker.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))
    return path


def judged(text: str, old_lesson: str) -> Judgments:
    """A judge that answers: `text` says the archived `old_lesson`."""
    return Judgments({("archive/worker/TRICK", normalize(text).key, normalize(old_lesson).key):
                      True})


def test_a_lesson_is_found_among_many_archived_lines_and_the_archive_is_read_as_it_is_now(
        tmp_path: Path) -> None:
    filler = [OTHER.replace("`alembic upgrade head`", f"`tool{i} --flag{i}`") for i in range(500)]
    path = archive(tmp_path, "# worker: lessons moved out of identity/worker.md for room", "",
                   *filler, OLD)
    text = "ripgrep needs --hidden or it never looks in dotfiles"
    judge = judged(text, "`rg --hidden` finds the dotfiles the search skipped")
    identity = IdentityIndex(75.0, judge=judge, folder=tmp_path)
    assert identity.archived_line_of("worker", "TRICK", text) == OLD
    assert identity.archived_line_of("worker", "FAIL", text) is None  # another kind
    path.write_text(OTHER + "\n")  # a person cut the file: the next pass reads what is left
    identity = IdentityIndex(75.0, judge=judge, folder=tmp_path)
    assert identity.archived_line_of("worker", "TRICK", text) is None
    assert not list(tmp_path.glob(".curator.db*"))  # a lookup writes nothing


def due(text: str, runs: tuple[str, ...], count: int = 2) -> Evidence:
    ev = Evidence("worker", "TRICK", text)
    for n, run in enumerate(runs):
        ev.note(f"2026-04-0{n + 1}", "blog", f"F-00{n + 5}", run)
    return ev


def test_a_lesson_the_judge_finds_in_the_archive_comes_back_with_the_evidence_merged(
        tmp_path: Path) -> None:
    archive(tmp_path, OLD, OTHER)
    text = "ripgrep needs --hidden or it never looks in dotfiles"
    old_lesson = "`rg --hidden` finds the dotfiles the search skipped"
    judge = Judgments({("archive/worker/TRICK", normalize(text).key, normalize(old_lesson).key):
                       True})
    identity = IdentityIndex(75.0, judge=judge, folder=tmp_path)
    [promotion] = plan_promotions([due(text, ("r7", "r8"))], identity, "2026-04-10")
    assert promotion.text == old_lesson
    assert promotion.line == (
        f"- TRICK: {old_lesson} [promoted 2026-04-10; seen 4x 2026-02-01..2026-04-02; "
        "missions: shop, blog; features: F-001, F-002, F-005, ...; runs: r1, r2, r7, ...]")
    # without the judge's answer (or a judge) it is a lesson of its own
    for judged in (Judgments(budget=5), None):
        identity = IdentityIndex(75.0, judge=judged, folder=tmp_path)
        [promotion] = plan_promotions([due(text, ("r7", "r8"))], identity, "2026-04-10")
        assert promotion.text == text and promotion.evidence.count == 2


def test_a_lesson_back_in_the_same_cluster_does_not_count_its_notes_twice(
        tmp_path: Path) -> None:
    lesson = "`rg --hidden` finds the dotfiles the search skipped"
    ev = Evidence("worker", "TRICK", lesson)
    for day, feature, run in (("01", "F-001", "r1"), ("03", "F-002", "r2"), ("20", "F-008", "r9")):
        ev.note(f"2026-02-{day}", "shop", feature, run)
    archive(tmp_path, OLD)
    identity = IdentityIndex(75.0, judge=Judgments(budget=5),
                             folder=tmp_path)
    [promotion] = plan_promotions([ev], identity, "2026-03-01")
    assert promotion.evidence is ev and promotion.evidence.count == 3


def test_a_model_is_shown_an_archived_line_by_the_file_it_is_in() -> None:
    from harness.run.curation import questions_shown

    shown = questions_shown([(("archive/worker/TRICK", "k", "o"), "ripgrep needs --hidden", OLD),
                             (("worker", "k", "o"), "ripgrep needs --hidden", OTHER)])
    assert shown[1:5] == ["1. A worker note: ripgrep needs --hidden",
                          f"   B, a line of identity/archive/worker.md: {OLD}",
                          "2. A worker note: ripgrep needs --hidden",
                          f"   B, a line of identity/worker.md: {OTHER}"]


def test_an_archived_line_of_another_kind_does_not_come_back_for_a_lesson(
        tmp_path: Path) -> None:
    archive(tmp_path, OLD.replace("- TRICK: ", "- FAIL: "))
    text = "`rg --hidden` finds the dotfiles the search skipped"
    key = normalize(text).key
    judge = Judgments({(bucket, key, key): True
                       for bucket in ("archive/worker/TRICK", "archive/worker/FAIL")})
    identity = IdentityIndex(75.0, judge=judge, folder=tmp_path)
    [promotion] = plan_promotions([due(text, ("r7", "r8"))], identity, "2026-04-10")
    assert promotion.evidence.count == 2 and "FAIL" not in promotion.line


def test_two_due_lessons_that_an_archived_line_says_bring_it_back_once(tmp_path: Path) -> None:
    archive(tmp_path, OLD)
    old_lesson = normalize("`rg --hidden` finds the dotfiles the search skipped").key
    texts = ["ripgrep needs --hidden or it never looks in dotfiles",
             "dotfiles stay invisible to rg without the hidden flag"]
    judge = Judgments({("archive/worker/TRICK", normalize(t).key, old_lesson): True
                       for t in texts})
    identity = IdentityIndex(75.0, judge=judge, folder=tmp_path)
    other = "`alembic upgrade head` first or the db tests see an old schema"
    lock = "`pnpm install --frozen-lockfile` keeps CI on the committed lockfile"
    promotions = plan_promotions([due(texts[0], ("r7", "r8")), due(other, ("r1", "r2")),
                                  due(texts[1], ("r5", "r6")), due(lock, ("r3",))],
                                 identity, "2026-04-10")
    assert [(p.evidence.count, p.text[:8]) for p in promotions] == [
        (4, "`rg --hi"), (2, "`alembic"), (1, "`pnpm in")]
