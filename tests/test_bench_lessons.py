"""bench/lessons.py at 2k entries: its notes parse, share every token, come in eight styles
or more, and its pair counts agree with counting pairs one by one."""

import importlib.util
import itertools
import random
import re
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from harness.curator.record import parse_candidate
from harness.curator.text import normalize
from harness.state.memory import parse_entry

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow  # a benchmark script's test, not the harness's
N = 2000


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_lessons", ROOT / "bench" / "lessons.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


bench = load_bench()


@pytest.fixture(scope="module")
def data():
    return bench.generate(N)


def notes_of(data) -> list:
    _, record, raw = data
    return record + [x for x in raw if isinstance(x, bench.Note)]


def test_notes_parse_as_raw_md_and_record_lines(data) -> None:
    _, record, raw = data
    assert len(raw) == N
    for x in raw:
        line = x.line() if isinstance(x, bench.Note) else x
        entry = parse_entry(line)
        assert entry is not None, line
        if isinstance(x, bench.Note):
            assert (entry.role, entry.feature, entry.kind, entry.text, entry.run) == (
                x.role, x.feature, x.kind, x.text, x.run)
        else:
            assert entry.kind == "-"
    for seq, note in enumerate(record):
        _, _, candidate = parse_candidate(note.record_line(seq))
        assert (candidate.mission, candidate.kind, candidate.text) == (
            note.mission, note.kind, note.text)
    notes = notes_of(data)
    assert {n.kind for n in notes} == {"TRICK", "FAIL", "FORGOT"}
    assert len({n.feature for n in notes}) > 300
    assert {n.mission for n in notes} == {"bench", *bench.MISSIONS}


def test_no_token_is_unique_to_one_lesson(data) -> None:
    lessons_of: dict[str, set[int]] = defaultdict(set)
    for note in notes_of(data):
        tokens = {t.strip("`,;:()").lower() for t in note.text.split()}
        norm = normalize(note.text)
        for token in tokens | set(norm.key.split()) | set(norm.anchors.split()):
            lessons_of[token].add(note.lesson)
    unique = sorted(t for t, found in lessons_of.items() if len(found) < 2)
    assert unique == []
    words = set(re.findall(r"[a-z0-9]+", " ".join(lessons_of)))
    assert len(words) > 100  # a real vocabulary, not a handful of words


def test_near_misses_differ_in_one_technical_term(data) -> None:
    lessons = data[0]
    for lesson in lessons:
        family = [x for x in lessons if x.family == lesson.family and x != lesson]
        differences = sorted(sum(a != b for a, b in zip(lesson.terms(), x.terms(), strict=True))
                             for x in family)
        assert differences == [1, 1, 2]
    assert len({lesson.terms() for lesson in lessons}) == len(lessons)


def test_eight_styles_occur_and_output_is_byte_stable(data) -> None:
    seen = {style for note in notes_of(data) for style in note.styles}
    assert len(seen) >= 8 and seen <= set(bench.STYLES)
    assert bench.generate(N) == data
    assert bench.generate(N, seed=2) != data


def brute_force(clusters: list, lessons: list) -> tuple[int, int, int]:
    pairs = list(itertools.combinations(range(len(clusters)), 2))
    same_cluster = {p for p in pairs if clusters[p[0]] == clusters[p[1]]}
    same_lesson = {p for p in pairs if lessons[p[0]] == lessons[p[1]]}
    return len(same_cluster & same_lesson), len(same_cluster), len(same_lesson)


def test_pair_counts_match_a_brute_force_count() -> None:
    clusters = ["a", "a", "a", "b", "b", "c", "c", "c", "d"]
    lessons = [1, 1, 2, 2, 2, 3, 3, 1, 4]
    pairs = bench.count_pairs(clusters, lessons)
    assert (pairs.both, pairs.clustered, pairs.related) == brute_force(clusters, lessons) == (
        3, 7, 7)
    assert pairs.precision == pytest.approx(3 / 7) and pairs.recall == pytest.approx(3 / 7)
    rng = random.Random(5)
    for _ in range(20):
        clusters = [rng.randrange(6) for _ in range(40)]
        lessons = [rng.randrange(8) for _ in range(40)]
        pairs = bench.count_pairs(clusters, lessons)
        assert (pairs.both, pairs.clustered, pairs.related) == brute_force(clusters, lessons)


def test_the_real_curator_is_scored_at_2k(data) -> None:
    figures = bench.measure(N)  # stops if the replayed clusters are not the run's
    notes = notes_of(data)
    assert (figures.notes, figures.lessons) == (len(notes), len({n.lesson for n in notes}))
    assert 0 < figures.pairs.precision <= 1 and 0 < figures.pairs.recall <= 1


def test_with_a_perfect_judge_the_run_and_its_replay_agree_and_recall_rises() -> None:
    rules, judged = bench.measure(N), bench.measure(N, judged=True)  # both replays checked
    assert judged.pairs.recall > rules.pairs.recall
