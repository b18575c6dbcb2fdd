"""The labelled corpora: their labels follow the promotion rules, and the curator's
promotions on the development corpus reach the quality goal. (The held-out corpora's
figures are printed by bench/suite.py; see tests/corpus_quality.py.)"""

from pathlib import Path

import pytest
from corpus_quality import (
    DEVELOPMENT,
    development_corpora,
    due_by_rule,
    evaluate,
    held_out_corpora,
    read_corpus,
)

CORPORA = [*development_corpora(), *held_out_corpora()]


def test_there_are_three_held_out_corpora_written_apart_from_the_development_ones() -> None:
    held_out = held_out_corpora()
    assert len(held_out) >= 3
    assert not {p.name for p in held_out} & {p.name for p in development_corpora()}
    for folder in CORPORA[1:]:
        assert (folder / "README.md").read_text().strip(), f"{folder} says how it was made"


@pytest.mark.parametrize("folder", CORPORA, ids=lambda p: p.name)
def test_corpus_labels_agree_with_the_rules(folder: Path) -> None:
    """The hand-written expectations match what the rules say about the labelled reports."""
    rows, expected = read_corpus(folder)
    assert due_by_rule(rows) == expected


def test_promotion_precision_and_recall_on_the_development_corpus(tmp_path: Path,
                                                                   capsys) -> None:
    """Rules alone are precise and miss paraphrases; a judge that never errs, asked as a
    pass with `curator.judge: auto` asks, finds them (bench/judge_bound.py has every corpus)."""
    import functools

    from corpus_quality import PerfectJudge

    rules = evaluate(DEVELOPMENT, tmp_path / "rules")
    judged = evaluate(DEVELOPMENT, tmp_path / "judged", judge=functools.partial(
        PerfectJudge, asked=[]), questions=20)
    with capsys.disabled():
        print(f"\nrules: {rules.describe()}\njudged: {judged.describe()}")
    assert rules.precision >= 0.95 and rules.wrong == []
    assert judged.precision >= 0.97 and judged.recall >= 0.95


def test_an_echo_on_one_feature_is_not_a_second_worker(tmp_path: Path) -> None:
    """The demo's situation: a retry on the same feature repeats the TRICK it just read."""
    from harness.curator.curate import CuratorSettings, curate

    state = tmp_path / "state"
    state.mkdir()
    trick = "python3 -m unittest from the project root imports the package uninstalled"
    (state / "raw.md").write_text(
        f"[2026-04-20T10:00:00Z] worker F-004 TRICK: {trick} (run 1776679000-worker-F-004)\n"
        f"[2026-04-20T11:00:00Z] worker F-004 TRICK: {trick} (run 1776682600-worker-F-004)\n")
    report = curate(state, tmp_path / "identity", "demo", CuratorSettings())
    assert report.promoted == []
    with open(state / "raw.md", "a") as f:  # another feature: a second worker
        f.write(f"[2026-04-21T10:00:00Z] worker F-007 TRICK: {trick} "
                "(run 1776765400-worker-F-007)\n")
    assert [p.text for p in curate(state, tmp_path / "identity", "demo",
                                   CuratorSettings()).promoted] == [trick]


def write_corpus(folder: Path, rows: list[tuple[str, str, str, int]]) -> Path:
    """A one-mission corpus of worker TRICKs (text, family, feature, day) due for A and B."""
    folder.mkdir(exist_ok=True)
    (folder / "corpus.tsv").write_text("".join(
        f"shop\t{family}\t[2026-05-0{day}T10:00:00Z] worker {feature} TRICK: {text} "
        f"(run r{day}-worker-{feature})\n" for text, family, feature, day in rows))
    (folder / "expected.tsv").write_text("worker\tTRICK\tA\nworker\tTRICK\tB\n")
    return folder


def test_a_lesson_back_from_the_archive_is_not_counted_a_wrong_promotion(tmp_path: Path) -> None:
    """Identity fits one line: B's promotion moves A to the archive, and A, noted again,
    comes back. That is the lesson recurring, not a second wrong promotion; a lesson
    promoted twice while identity holds it still counts as wrong."""
    from harness.curator.curate import CuratorSettings

    a = "`pnpm test --runInBand` keeps the flaky suite green"
    b = "`alembic upgrade head` before `pytest -k db` or the schema is stale"
    rows = [(a, "A", "F-001", 1), (a, "A", "F-002", 2), (b, "B", "F-003", 3),
            (b, "B", "F-004", 4), (b, "B", "F-005", 5), (a, "A", "F-006", 6)]
    corpus = write_corpus(tmp_path / "corpus", rows)
    quality = evaluate(corpus, tmp_path / "work", CuratorSettings(identity_chars=200))
    archive = (tmp_path / "work" / "identity" / "archive" / "worker.md").read_text()
    assert "runInBand" in archive  # A went to the archive, and came back
    assert (quality.promoted, quality.right, quality.precision) == (2, 2, 1.0)
    # A in words the rules do not join to it: promoted again while identity holds A
    other = "a single jest worker is what stops the suite flaking"
    rows += [(other, "A", "F-007", 7), (other, "A", "F-008", 8), (other, "A", "F-009", 9)]
    quality = evaluate(write_corpus(corpus, rows), tmp_path / "again", CuratorSettings())
    assert (quality.promoted, quality.right, quality.wrong) == (3, 2, [other])


def test_a_corpus_saved_with_a_bom_and_crlf_reads_as_the_same_labels(tmp_path: Path) -> None:
    """A labelled folder from another editor (bench/judge_bound.py --corpus DIR): a BOM,
    CRLF endings and a blank line change nothing; a short row names its file and line."""
    plain = write_corpus(tmp_path / "plain", [("`pnpm test --runInBand` is green", "A",
                                               "F-001", 1), ("x y", "-", "F-002", 2)])
    saved = tmp_path / "saved"
    saved.mkdir()
    for name in ("corpus.tsv", "expected.tsv"):
        text = (plain / name).read_text().replace("\n", "\r\n")
        (saved / name).write_bytes(("\ufeff" + text + "\r\n").encode())
    assert read_corpus(saved) == read_corpus(plain)
    (saved / "expected.tsv").write_text("worker\tTRICK\tA\nworker TRICK B\n")
    with pytest.raises(ValueError, match=r"expected\.tsv:2: expected 3 tab-separated"):
        read_corpus(saved)
