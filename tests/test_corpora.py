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
    quality = evaluate(DEVELOPMENT, tmp_path)
    with capsys.disabled():
        print(f"\n{quality.describe()}")
    assert quality.precision >= 0.95
    assert quality.recall >= 0.9


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
