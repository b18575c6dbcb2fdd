"""Archived identity lines: found by a lesson's rare words, and brought back with the
evidence merged (harness/curator/archived.py, identity.IdentityIndex, promotion.returning)."""

from pathlib import Path

from harness.curator.archived import ArchiveSearch
from harness.curator.curatordb import DAMAGED
from harness.curator.curatordb import NAME as DB
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


def test_a_lookup_reads_the_lines_with_the_lessons_rare_words_and_catches_up(
        tmp_path: Path) -> None:
    path = archive(tmp_path, "# worker: lessons moved out of identity/worker.md for room", "",
                   OLD, OTHER)
    search = ArchiveSearch(tmp_path)
    assert search.lines("worker", "ripgrep skips dotfiles unless --hidden") == [OLD]
    search.close()
    newer = OLD.replace("F-002", "F-009")
    archive(tmp_path, newer)
    with open(path, "a") as f:
        f.write("- TRICK: half a line")  # no newline yet: read once it is whole
    search = ArchiveSearch(tmp_path)
    assert sorted(search.lines("worker", "dotfiles")) == sorted([OLD, newer])
    assert search.lines("worker", "alembic") == [OTHER]
    assert search.lines("worker", "nothing shared") == []
    search.close()


def test_a_dry_run_writes_no_index_and_still_sees_every_line(tmp_path: Path) -> None:
    archive(tmp_path, OLD)
    search = ArchiveSearch(tmp_path, write=False)
    assert search.lines("worker", "dotfiles") == [OLD]
    search.close()
    assert not (tmp_path / DB).exists()
    ArchiveSearch(tmp_path).lines("worker", "dotfiles")  # indexed by a real run
    archive(tmp_path, OTHER)
    search = ArchiveSearch(tmp_path, write=False)
    assert search.lines("worker", "alembic") == [OTHER]  # the tail, read from the file
    search.close()


def test_a_cut_archive_or_a_damaged_index_is_read_again(tmp_path: Path) -> None:
    path = archive(tmp_path, OLD, OTHER)
    ArchiveSearch(tmp_path).lines("worker", "dotfiles")
    path.write_text(OTHER + "\n")  # a person cut the file
    search = ArchiveSearch(tmp_path)
    assert search.lines("worker", "dotfiles") == []
    assert search.lines("worker", "alembic") == [OTHER]
    search.close()
    (tmp_path / DB).write_bytes(b"not a database at all" * 100)
    for stale in tmp_path.glob(f"{DB}-*"):
        stale.unlink()
    said: list[str] = []
    search = ArchiveSearch(tmp_path, said=said)
    assert search.lines("worker", "alembic") == [OTHER]
    assert search._conn is not None  # from the index made anew, not from the file
    search.close()
    assert (tmp_path / DAMAGED).exists() and "set aside" in said[0]


def due(text: str, runs: tuple[str, ...], count: int = 2) -> Evidence:
    ev = Evidence("worker", "TRICK", text)
    for n, run in enumerate(runs):
        ev.note(f"2026-04-0{n + 1}", f"2026-04-0{n + 1}T10:00:00Z", "blog", f"F-00{n + 5}", run)
    return ev


def test_a_lesson_the_judge_finds_in_the_archive_comes_back_with_the_evidence_merged(
        tmp_path: Path) -> None:
    archive(tmp_path, OLD, OTHER)
    text = "ripgrep needs --hidden or it never looks in dotfiles"
    old_lesson = "`rg --hidden` finds the dotfiles the search skipped"
    judge = Judgments({("archive/worker/TRICK", normalize(text).key, normalize(old_lesson).key):
                       True})
    search = ArchiveSearch(tmp_path)
    identity = IdentityIndex(75.0, judge=judge, archive=search.lines)
    [promotion] = plan_promotions([due(text, ("r7", "r8"))], identity, "2026-04-10")
    search.close()
    assert promotion.text == old_lesson
    assert promotion.line == (
        f"- TRICK: {old_lesson} [promoted 2026-04-10; seen 4x 2026-02-01..2026-04-02; "
        "missions: shop, blog; features: F-001, F-002, F-005, ...; runs: r1, r2, r7, ...]")
    # without the judge's answer (or a judge) it is a lesson of its own
    for judged in (Judgments(budget=5), None):
        identity = IdentityIndex(75.0, judge=judged, archive=ArchiveSearch(tmp_path).lines)
        [promotion] = plan_promotions([due(text, ("r7", "r8"))], identity, "2026-04-10")
        assert promotion.text == text and promotion.evidence.count == 2


def test_a_lesson_back_in_the_same_cluster_does_not_count_its_notes_twice(
        tmp_path: Path) -> None:
    lesson = "`rg --hidden` finds the dotfiles the search skipped"
    ev = Evidence("worker", "TRICK", lesson)
    for day, feature, run in (("01", "F-001", "r1"), ("03", "F-002", "r2"), ("20", "F-008", "r9")):
        ev.note(f"2026-02-{day}", f"2026-02-{day}T10:00:00Z", "shop", feature, run)
    archive(tmp_path, OLD)
    identity = IdentityIndex(75.0, judge=Judgments(budget=5),
                             archive=ArchiveSearch(tmp_path).lines)
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
    identity = IdentityIndex(75.0, judge=judge, archive=ArchiveSearch(tmp_path).lines)
    [promotion] = plan_promotions([due(text, ("r7", "r8"))], identity, "2026-04-10")
    assert promotion.evidence.count == 2 and "FAIL" not in promotion.line


def test_an_index_that_fails_a_query_leaves_the_lookup_to_the_file(tmp_path: Path) -> None:
    import sqlite3

    archive(tmp_path, OLD, OTHER)
    ArchiveSearch(tmp_path).close()
    ArchiveSearch(tmp_path).lines("worker", "dotfiles")
    with sqlite3.connect(tmp_path / DB) as conn:
        conn.execute("DROP TABLE archive_words")
    search = ArchiveSearch(tmp_path, write=False)  # a dry run: the index stays as it is
    assert sorted(search.lines("worker", "dotfiles")) == sorted([OLD, OTHER])
    assert (tmp_path / DB).exists()
    for made in tmp_path.glob(f"{DB}*"):
        made.unlink()
    search = ArchiveSearch(tmp_path)
    search.lines("worker", "alembic")  # opens the index; validator has no archive at all
    with sqlite3.connect(tmp_path / DB) as conn:
        conn.execute("DROP TABLE archive_words")
    assert search.lines("validator", "dotfiles") == []


def test_two_due_lessons_that_an_archived_line_says_bring_it_back_once(tmp_path: Path) -> None:
    archive(tmp_path, OLD)
    old_lesson = normalize("`rg --hidden` finds the dotfiles the search skipped").key
    texts = ["ripgrep needs --hidden or it never looks in dotfiles",
             "dotfiles stay invisible to rg without the hidden flag"]
    judge = Judgments({("archive/worker/TRICK", normalize(t).key, old_lesson): True
                       for t in texts})
    identity = IdentityIndex(75.0, judge=judge, archive=ArchiveSearch(tmp_path).lines)
    other = "`alembic upgrade head` first or the db tests see an old schema"
    lock = "`pnpm install --frozen-lockfile` keeps CI on the committed lockfile"
    promotions = plan_promotions([due(texts[0], ("r7", "r8")), due(other, ("r1", "r2")),
                                  due(texts[1], ("r5", "r6")), due(lock, ("r3",))],
                                 identity, "2026-04-10")
    assert [(p.evidence.count, p.text[:8]) for p in promotions] == [
        (4, "`rg --hi"), (2, "`alembic"), (1, "`pnpm in")]
