"""The second opinion on "same lesson" (`harness.curator.learned`): paraphrases the rapidfuzz
rule refuses are joined, conflicts still keep near misses apart, and the shipped model was
fitted on the development corpora only."""

import json

import pytest
from corpus_quality import development_corpora, held_out_corpora

from harness.curator import learned, lessondb
from harness.curator.clusters import Clusters
from harness.curator.curate import CuratorSettings, curate
from harness.curator.identity import IdentityIndex
from harness.curator.matching import same_lesson

BUCKET = ("worker", "TRICK")
MAKE_PHONY = (
    "`make test` printed \"make: 'test' is up to date.\" and ran nothing, because there's a "
    "test/ directory and make thinks the target file exists. `.PHONY: test` fixed it",
    "Added make lint and make test targets; test said up to date immediately. needs .PHONY "
    "since test/ is a directory",
)


def test_a_paraphrase_the_rule_refuses_joins_the_lesson() -> None:
    first, second = MAKE_PHONY
    assert not same_lesson(first, second, 75.0)  # the rule alone keeps them apart
    clusters = Clusters(75.0)
    assert clusters.assign_text(BUCKET, first) == clusters.assign_text(BUCKET, second)


def test_with_the_second_opinion_off_the_rule_alone_decides() -> None:
    first, second = MAKE_PHONY
    clusters = Clusters(75.0, second_opinion=False)
    assert clusters.assign_text(BUCKET, first) != clusters.assign_text(BUCKET, second)
    for on in (True, False):  # what identity already says, in other words
        identity = IdentityIndex(75.0, second_opinion=on)
        identity.add("worker", first)
        assert identity.knows("worker", second) is on


def test_curator_second_opinion_off_keeps_paraphrases_apart_in_a_database_of_its_own(
        tmp_path) -> None:
    """Two workers say the make .PHONY lesson in other words: promoted only with the second
    opinion; with it off the pass clusters by the rule alone, in its own lesson database."""
    promoted = {}
    for on in (True, False):
        state, identity = tmp_path / f"state-{on}", tmp_path / f"identity-{on}"
        state.mkdir()
        (state / "raw.md").write_text("".join(
            f"[2026-04-2{n}T10:00:00Z] worker F-00{n} TRICK: {text} (run r{n}-worker-F-00{n})\n"
            for n, text in enumerate(MAKE_PHONY, start=1)))
        settings = CuratorSettings(second_opinion=on)
        promoted[on] = curate(state, identity, "shop", settings).promoted
        assert (identity / lessondb.db_name(75.0, on)).exists()
        assert not (identity / lessondb.db_name(75.0, not on)).exists()
    assert len(promoted[True]) == 1 and promoted[False] == []


def test_a_conflicting_flag_still_keeps_near_misses_apart() -> None:
    clusters = Clusters(75.0)
    failed = clusters.assign_text(
        BUCKET, "`mix test --failed` reruns only the tests that failed on the last run")
    stale = clusters.assign_text(
        BUCKET, "`mix test --stale` reruns only the tests whose modules changed since the last run")
    assert failed != stale


def test_an_unrelated_note_is_not_joined() -> None:
    clusters = Clusters(75.0)
    first = clusters.assign_text(BUCKET, MAKE_PHONY[0])
    other = clusters.assign_text(
        BUCKET, "Godot needs --headless --import once before the GUT tests find the scenes")
    assert first != other


def test_the_model_was_fitted_on_development_corpora_only() -> None:
    fitted_on = json.loads(learned.MODEL.read_text())["fitted_on"]
    assert fitted_on == [p.name for p in development_corpora()]
    assert {p.name for p in held_out_corpora()}.isdisjoint(fitted_on)


def test_a_model_fitted_on_other_features_is_refused_with_the_fix() -> None:
    data = json.loads(learned.MODEL.read_text())
    data["features"] = data["features"][:-1]
    with pytest.raises(ValueError, match="matcher_train.py"):
        learned.PairModel.from_json(json.dumps(data))


def test_the_threshold_is_a_probability_cut() -> None:
    model = learned.PairModel([0.5], 1.0)  # one leaf: log-odds 0.5, probability 0.62
    assert model.same([0.0] * len(learned.FEATURES), threshold=0.6)
    assert not model.same([0.0] * len(learned.FEATURES), threshold=0.65)
