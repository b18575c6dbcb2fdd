"""The curator's pass over raw.md: what it finds and hands over."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import pytest

from harness.curator.book import Bounds, MemoryBook
from harness.curator.curate import CuratorSettings, curate
from harness.curator.record import RawPass, RecordRead, read_record
from harness.state.memory import append_entry, make_entry

ROOT = Path(__file__).resolve().parent.parent
NOW = "2026-07-01T00:00:00Z"


def bench_data(folder: Path, n: int) -> tuple[Path, Path]:
    """The curator benchmark's raw.md of `n` lines and its candidate record."""
    spec = importlib.util.spec_from_file_location("bench_curator", ROOT / "bench" / "curator.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.generate(folder / "state", n)
    bench.seed_candidates(folder / "identity", n)
    return folder / "state", folder / "identity"


def outcome(state: Path, identity: Path) -> dict[str, bytes]:
    """Every file a run leaves, with the random batch tags of the candidate record cut off."""
    out = {}
    for folder in (state, identity):
        for path in sorted(folder.rglob("*")):
            if not path.is_file() or path.name.endswith(".lock") or "locks" in path.parts:
                continue
            data = path.read_bytes()
            if path.name == ".candidates.log":
                data = b"\n".join(line.partition(b"\t")[2] for line in data.split(b"\n"))
            out[str(path.relative_to(folder.parent))] = data
    return out


def test_a_pass_over_a_big_log_then_another_that_changes_nothing(tmp_path) -> None:
    state, identity = bench_data(tmp_path, 4000)
    report = curate(state, identity, "bench", CuratorSettings(), now=NOW)
    assert report.processed == 4000 and report.archived == 3990 and report.promoted
    assert report.unparsed > 0
    report = curate(state, identity, "bench", CuratorSettings(), now=NOW)
    assert report.promoted == [] and report.archived == 0 and report.diffs == {}


def write_notes(state: Path) -> list[str]:
    lines = []
    for n, (kind, text, ts) in enumerate([
            ("-", "started", "2026-03-30T10:00:00Z"),
            ("TRICK", "uv run pytest -x stops at the first failure", "2026-03-31T10:00:00Z"),
            ("TRICK", "uv run pytest -x stops at the first failure", "2026-04-01T10:00:00Z"),
            ("GOTCHA", "the CI cache expires after 7 days", "2026-04-02T10:00:00Z"),
            ("DECISION", "db: use postgres 16", "2026-04-03T10:00:00Z")]):
        entry = make_entry("worker", f"F-00{n}", kind, text, f"run{n}", ts)
        append_entry(state, entry)
        lines.append(entry.line())
    return lines


def test_the_pass_finds_the_cut_the_months_and_the_new_entries(tmp_path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    lines = write_notes(state)
    raw = state / "raw.md"
    with open(raw, "a") as f:
        f.write("stray output\n")
    first = len(lines[0]) + 1
    raw_pass = RawPass(raw, first, raw_keep=2, month="unparsed")
    records = list(raw_pass.entries())
    scan = raw_pass
    assert records == [
        ("2026-03-31T10:00:00Z", "worker", "F-001", "TRICK",
         "uv run pytest -x stops at the first failure", "run1"),
        ("2026-04-01T10:00:00Z", "worker", "F-002", "TRICK",
         "uv run pytest -x stops at the first failure", "run2"),
        ("2026-04-02T10:00:00Z", "worker", "F-003", "GOTCHA", "the CI cache expires after 7 days",
         "run3"),
        ("2026-04-03T10:00:00Z", "worker", "F-004", "DECISION", "db: use postgres 16", "run4")]
    assert (scan.processed, scan.unparsed) == (5, 1)
    # the cut keeps the last two entries (and the stray line after them)
    assert scan.cut == sum(len(line) + 1 for line in lines[:3]) and scan.cut_line == 3
    april = first + len(lines[1]) + 1
    # the months of the archived entries: the first entry's overrides the one carried over
    assert scan.months == [(0, "2026-03"), (april, "2026-04")]
    assert scan.end == raw.stat().st_size and scan.head == raw.read_bytes()


def test_a_pass_records_each_promotable_entry_as_a_candidate_line(tmp_path) -> None:
    state, identity = tmp_path / "state", tmp_path / "identity"
    state.mkdir()
    write_notes(state)
    curate(state, identity, "shop", CuratorSettings(), now=NOW)
    lines = (identity / ".candidates.log").read_text().splitlines()
    batch = lines[0].split(":")[0]
    assert lines == [
        f"{batch}:0\t2026-03-31T10:00:00Z\tshop\tworker\tTRICK\tF-001\trun1\t"
        "uv run pytest -x stops at the first failure",
        f"{batch}:1\t2026-04-01T10:00:00Z\tshop\tworker\tTRICK\tF-002\trun2\t"
        "uv run pytest -x stops at the first failure"]


def test_a_text_repeated_word_for_word_joins_its_lesson(tmp_path) -> None:
    state, identity = tmp_path / "state", tmp_path / "identity"
    state.mkdir()
    for n, text in enumerate(["make a", "make b", "make a", "make c", "make a", "make b"]):
        append_entry(state, make_entry("worker", f"F-00{n}", "TRICK",
                                       f"`{text} --flag` needs the cache", f"r{n}", NOW))
    curate(state, identity, "shop", CuratorSettings(), now=NOW)
    memory = (state / "MEMORY.md").read_text()
    assert "`make a --flag` needs the cache" in memory and "x3" in memory
    assert memory.count("--flag") == 3


def test_plain_notes_are_handed_over_in_order_with_the_rest(tmp_path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    kinds = ["-", "-", "TRICK", "-", "DECISION", "-", "-", "-"]
    for n, kind in enumerate(kinds):
        append_entry(state, make_entry("worker", f"F-00{n}", kind, f"note {n}", f"r{n}",
                                       f"2026-04-0{n + 1}T10:00:00Z"))
    raw_pass = RawPass(state / "raw.md", raw_keep=2, month="unparsed")
    assert [(r[3], r[4]) for r in raw_pass.entries()] == [
        (kind, f"note {n}") for n, kind in enumerate(kinds)]
    assert raw_pass.processed == 8 and raw_pass.months == [(0, "2026-04")]


@pytest.mark.parametrize("kinds, tools", [(["-", "-", "-", "TRICK", "FAIL", "DECISION"], 30),
                                          (["-", "-", "TRICK"], 3)])  # notes fill History
def test_the_curator_keeps_the_plain_notes_a_book_fed_entry_by_entry_keeps(tmp_path, kinds,
                                                                          tools) -> None:
    """MEMORY.md must come out as if every entry went through MemoryBook.add, in order."""
    rng = random.Random(3)
    entries = []
    for n in range(400):
        kind = rng.choice(kinds)
        text = f"note {n}" if kind == "-" else f"tool{rng.randrange(tools)} --opt needs care"
        if kind == "DECISION":
            text = f"topic{rng.randrange(8)}: choice {n}"
        entries.append(make_entry("worker", f"F-{n % 17:03d}", kind, text, f"r{n}",
                                  f"2026-04-{1 + n % 28:02d}T10:00:{n % 60:02d}Z"))
    settings = CuratorSettings(bounds=Bounds(memory_max_lines=60, summary_max_lines=12))
    book = MemoryBook("", settings.bounds, similarity=settings.similarity,
                      topic_similarity=settings.topic_similarity)
    for e in entries:
        book.add(e)
    expected = book.compact().memory
    state = tmp_path / "state"
    state.mkdir(parents=True)
    for e in entries:
        append_entry(state, e)
    curate(state, tmp_path / "identity", "shop", settings, now=NOW)
    assert (state / "MEMORY.md").read_text() == expected


def test_the_pass_reads_the_record_on_from_where_the_database_stops(tmp_path) -> None:
    identity = tmp_path / "identity"
    identity.mkdir()
    lines = ["old:0\t2026-01-01T00:00:00Z\tblog\tworker\tTRICK\tF-1\tr1\tmake -n shows the plan\n",
             "old:1\t2026-01-02T00:00:00Z\tblog\tworker\tTRICK\tF-2\tr2\tmake -n shows the plan\n",
             "new:0\t2026-01-03T00:00:00Z\tblog\tworker\tFAIL\tF-3\tr3\tthe seed step times out\n"]
    unfinished = "new:1\t2026-01-04T00:00:00Z\tblog\tworker\tFAIL\tF-4\tr4\tan append in prog"
    (identity / ".candidates.log").write_text("".join([*lines, lines[2], unfinished]))
    # as a database covering the first line would say
    read = RecordRead(len(lines[0]), "", {"old": 0})
    texts = [c.text for c in read_record(identity, read)]
    # the line the database covers, the batch line given twice and the unfinished one are left
    assert texts == ["make -n shows the plan", "the seed step times out"]
    # blog's batch "old" came before its batch "new": it never comes again, so it is forgotten
    assert read.batches == {"new": 0} and read.latest == {"blog": "new"}
    assert read.end == len("".join([*lines, lines[2]]))


def test_a_pass_that_cannot_write_its_staged_file_changes_nothing(tmp_path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    write_notes(state)
    identity = tmp_path / "identity"
    (state / "curator" / "candidates.pending").mkdir(parents=True)
    before = (state / "raw.md").read_bytes()
    with pytest.raises(OSError):
        curate(state, identity, "shop", CuratorSettings(), now=NOW)
    assert (state / "raw.md").read_bytes() == before
    assert not (state / "summary.md").exists() and not (state / "archive").exists()
    assert not (state / "curator" / "journal.json").exists()


def test_a_dry_run_over_a_big_log_writes_nothing(tmp_path) -> None:
    state, identity = bench_data(tmp_path, 2000)
    before = outcome(state, identity)
    report = curate(state, identity, "bench", CuratorSettings(), now=NOW, dry_run=True)
    assert report.processed == 2000 and report.archived == 1990 and report.diffs
    assert outcome(state, identity) == before
    assert not (state / "curator").exists() or not any((state / "curator").iterdir())


def test_a_pass_over_a_missing_raw_md_finds_nothing(tmp_path) -> None:
    raw_pass = RawPass(tmp_path / "raw.md", raw_keep=10, month="2026-04")
    assert list(raw_pass.entries()) == []
    assert raw_pass.end == 0 and raw_pass.months == []
