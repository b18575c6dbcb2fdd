"""The curator's pass over raw.md: what it finds, and the reader process that runs it."""

from __future__ import annotations

import importlib.util
import random
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from harness.curator import reader as rawreader
from harness.curator import textnumbers
from harness.curator.book import Bounds, MemoryBook
from harness.curator.curate import CuratorSettings, curate
from harness.curator.reader import RawReader
from harness.curator.scan import RawPass, ScanJob
from harness.curator.text import Norm, normalize
from harness.errors import BackendError, BusyError
from harness.state.memory import append_entry, make_entry
from harness.state.store import hold_lock, lock_path

ROOT = Path(__file__).resolve().parent.parent
NOW = "2026-07-01T00:00:00Z"


def first_ref(n: Norm) -> tuple[str, ...]:
    """A lesson's ref the first time the pass hands its text over (`scan.Record`)."""
    return (n.key, n.anchors, n.strict, n.packed, n.signature)


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
            if path.name.startswith(".candidates.v"):
                continue  # names the batch tags too; checked by the run after
            out[str(path.relative_to(folder.parent))] = data
    return out


def test_a_reader_process_gives_what_the_inline_pass_gives(tmp_path) -> None:
    state, identity = bench_data(tmp_path / "a", 4000)
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    results = {}
    for name, reader in (("a", "inline"), ("b", "process")):
        folder = tmp_path / name
        report = curate(folder / "state", folder / "identity", "bench",
                        CuratorSettings(reader=reader), now=NOW)
        results[name] = outcome(folder / "state", folder / "identity")
        assert report.processed == 4000 and report.archived == 3990 and report.promoted
        assert report.unparsed > 0
    assert results["a"] == results["b"]
    # and the databases each run wrote agree: a second run of each changes nothing the same way
    for name, reader in (("a", "inline"), ("b", "process")):
        folder = tmp_path / name
        report = curate(folder / "state", folder / "identity", "bench",
                        CuratorSettings(reader=reader), now=NOW)
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
    staged = tmp_path / "staged"
    job = ScanJob(str(raw), first, 2, "unparsed", str(staged), "b1", "shop")
    raw_pass = RawPass(job)
    records = [r for batch in raw_pass.batches() for r in batch]
    scan = raw_pass.scan
    assert [r[:6] for r in records] == [
        ("2026-03-31T10:00:00Z", "worker", "F-001", "TRICK",
         "uv run pytest -x stops at the first failure", "run1"),
        ("2026-04-01T10:00:00Z", "worker", "F-002", "TRICK",
         "uv run pytest -x stops at the first failure", "run2"),
        ("2026-04-02T10:00:00Z", "worker", "F-003", "GOTCHA", "the CI cache expires after 7 days",
         "run3"),
        ("2026-04-03T10:00:00Z", "worker", "F-004", "DECISION", "db: use postgres 16", "run4")]
    norm = normalize("uv run pytest -x stops at the first failure")
    # a lesson's normalised text comes with its first sighting, then its number; decisions
    # have neither
    gotcha = normalize("the CI cache expires after 7 days")
    assert [r[6] for r in records] == [first_ref(norm), 0, first_ref(gotcha), None]
    assert (scan.processed, scan.unparsed, scan.staged) == (5, 1, 2)
    assert scan.notes == []  # the one plain note is before `start`
    # the cut keeps the last two entries (and the stray line after them)
    assert scan.cut == sum(len(line) + 1 for line in lines[:3]) and scan.cut_line == 3
    april = first + len(lines[1]) + 1
    assert scan.months == [(0, 0, "unparsed"), (0, 0, "2026-03"), (april, 2, "2026-04")]
    assert scan.end == raw.stat().st_size and scan.head == raw.read_bytes()
    assert staged.read_text().splitlines() == [
        "b1:0\t2026-03-31T10:00:00Z\tshop\tworker\tTRICK\tF-001\trun1\t"
        "uv run pytest -x stops at the first failure",
        "b1:1\t2026-04-01T10:00:00Z\tshop\tworker\tTRICK\tF-002\trun2\t"
        "uv run pytest -x stops at the first failure"]


def test_texts_are_numbered_alike_before_and_after_their_numbers_are_merged(
        tmp_path, monkeypatch) -> None:
    # RECENT 1: every number is merged into the sorted arrays as soon as it is given
    texts = ["make a", "make b", "make a", "make c", "make a", "make b"]
    results = []
    for kept in (1, 1 << 16):
        monkeypatch.setattr(textnumbers, "RECENT", kept)
        state, identity = tmp_path / str(kept) / "state", tmp_path / str(kept) / "identity"
        state.mkdir(parents=True)
        for n, text in enumerate(texts):
            append_entry(state, make_entry("worker", f"F-00{n}", "TRICK",
                                           f"`{text} --flag` needs the cache", f"r{n}", NOW))
        job = ScanJob(str(state / "raw.md"), 0, 0, "2026-07", None, "b1", "shop")
        refs = [r[6] for batch in RawPass(job).batches() for r in batch]
        curate(state, identity, "shop", CuratorSettings(), now=NOW)
        results.append(([r if type(r) is int else "new" for r in refs],
                        (state / "MEMORY.md").read_text(),
                        sorted(p.read_text() for p in identity.glob("*.md"))))
    assert results[0] == results[1]
    assert results[0][0] == ["new", "new", 0, "new", 0, 1] and "x3" in results[0][1]


def test_text_numbers_answer_as_a_dict_does(monkeypatch) -> None:
    monkeypatch.setattr(textnumbers, "RECENT", 7)  # merged every 7, into arrays of any size
    rng = random.Random(3)
    numbers, expected = textnumbers.TextNumbers(), {}
    for n in range(500):
        h = rng.randrange(-(1 << 63), 1 << 63)
        numbers.add(h, n)
        expected[h] = n
        probe = rng.choice(list(expected)) if rng.random() < 0.7 else rng.getrandbits(63)
        assert numbers.get(probe) == expected.get(probe)
    assert len(numbers) == 500
    assert all(numbers.get(h) == n for h, n in expected.items())


def test_plain_notes_go_by_number_and_the_newest_come_at_the_end(tmp_path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    kinds = ["-", "-", "TRICK", "-", "DECISION", "-", "-", "-"]
    for n, kind in enumerate(kinds):
        append_entry(state, make_entry("worker", f"F-00{n}", kind, f"note {n}", f"r{n}",
                                       f"2026-04-0{n + 1}T10:00:00Z"))
    job = ScanJob(str(state / "raw.md"), 0, 2, "unparsed", None, "b1", "shop", notes_kept=2)
    raw_pass = RawPass(job)
    records = [r for batch in raw_pass.batches() for r in batch]
    # runs of plain notes as counts; the lesson and the decision as records
    assert [r if type(r) is int else r[3] for r in records] == [2, "TRICK", 1, "DECISION", 3]
    # the newest two, each numbered by its place among the entries (from 1)
    assert raw_pass.scan.notes == [
        (7, "2026-04-07T10:00:00Z", "worker", "F-006", "note 6", "r6"),
        (8, "2026-04-08T10:00:00Z", "worker", "F-007", "note 7", "r7")]


@pytest.mark.parametrize("kinds, tools", [(["-", "-", "-", "TRICK", "FAIL", "DECISION"], 30),
                                          (["-", "-", "TRICK"], 3)])  # notes fill History
def test_the_curator_keeps_the_plain_notes_a_book_fed_entry_by_entry_keeps(tmp_path, kinds,
                                                                          tools) -> None:
    """The pass hands plain notes over by number only, the newest at the end; MEMORY.md must
    come out as if every entry went through MemoryBook.add, in order."""
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
    for reader in ("inline", "process"):
        state = tmp_path / reader / "state"
        state.mkdir(parents=True)
        for e in entries:
            append_entry(state, e)
        curate(state, tmp_path / reader / "identity", "shop", replace(settings, reader=reader),
               now=NOW)
        assert (state / "MEMORY.md").read_text() == expected, reader


def test_the_reader_process_sends_what_the_pass_finds(tmp_path) -> None:
    state, identity = tmp_path / "state", tmp_path / "identity"
    state.mkdir()
    identity.mkdir()
    write_notes(state)
    lines = ["old:0\t2026-01-01T00:00:00Z\tblog\tworker\tTRICK\tF-1\tr1\tmake -n shows the plan\n",
             "old:1\t2026-01-02T00:00:00Z\tblog\tworker\tTRICK\tF-2\tr2\tmake -n shows the plan\n",
             "new:0\t2026-01-03T00:00:00Z\tblog\tworker\tFAIL\tF-3\tr3\tthe seed step times out\n"]
    unfinished = "new:1\t2026-01-04T00:00:00Z\tblog\tworker\tFAIL\tF-4\tr4\tan append in prog"
    (identity / ".candidates.log").write_text("".join([*lines, lines[2], unfinished]))
    # as a digest covering the first line would say
    job = ScanJob(str(state / "raw.md"), 0, 2, "unparsed", None, "b1", "shop", str(identity),
                  len(lines[0]), {"old": 0})
    with RawReader(job, process=False) as inline:
        expected_candidates = [list(batch) for batch in inline.candidates()]
        expected = [list(batch) for batch in inline]
    with RawReader(job, process=True) as reader:
        got_candidates = [list(batch) for batch in reader.candidates()]
        got = [list(batch) for batch in reader]
    assert got == expected and reader.scan == inline.scan
    assert got_candidates == expected_candidates
    assert reader.record == inline.record
    # the line the digest covers, the batch line given twice and the unfinished one are left
    texts = [record[6] for batch in got_candidates for record in batch]
    assert texts == ["make -n shows the plan", "the seed step times out"]
    norm = normalize("make -n shows the plan")
    assert expected_candidates[0][0][7] == first_ref(norm)
    # blog's batch "old" came before its batch "new": it never comes again, so it is forgotten
    assert reader.record.batches == {"new": 0} and reader.record.latest == {"blog": "new"}
    assert reader.record.end == len("".join([*lines, lines[2]]))


def test_raw_md_entries_come_after_the_record_candidates(tmp_path) -> None:
    state, identity = tmp_path / "state", tmp_path / "identity"
    state.mkdir()
    identity.mkdir()
    write_notes(state)
    (identity / ".candidates.log").write_text(
        "b0:0\t2026-01-01T00:00:00Z\tblog\tworker\tTRICK\tF-1\tr1\tmake -n shows the plan\n")
    job = ScanJob(str(state / "raw.md"), 0, 2, "unparsed", None, "b1", "shop", str(identity))
    for process in (False, True):
        with RawReader(job, process=process) as reader, pytest.raises(RuntimeError):
            list(reader)


def test_a_failing_reader_process_is_a_backend_error_and_changes_nothing(tmp_path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    write_notes(state)
    identity = tmp_path / "identity"
    # the staged candidate file cannot be written: the reader process fails
    (state / "curator" / "candidates.pending").mkdir(parents=True)
    before = (state / "raw.md").read_bytes()
    with pytest.raises(BackendError, match="reader process failed: .*candidates.pending"):
        curate(state, identity, "shop", CuratorSettings(reader="process"), now=NOW)
    assert (state / "raw.md").read_bytes() == before
    assert not (state / "summary.md").exists() and not (state / "archive").exists()
    assert not (state / "curator" / "journal.json").exists()


def test_a_reader_process_that_dies_is_a_backend_error(tmp_path) -> None:
    state, _ = bench_data(tmp_path, 20000)
    job = ScanJob(str(state / "raw.md"), 0, 10, "unparsed", None, "b1", "shop")
    with pytest.raises(BackendError, match="ended early"), RawReader(job, process=True) as reader:
        for n, _batch in enumerate(reader):
            if n == 0:
                reader._proc.kill()


def test_a_reader_process_holds_the_curators_lock_while_it_lives(tmp_path) -> None:
    state, _ = bench_data(tmp_path, 20000)
    job = ScanJob(str(state / "raw.md"), 0, 10, "unparsed", None, "b1", "shop")
    lock = hold_lock(lock_path(state, "curator"), wait=False)
    with lock:
        reader = RawReader(job, process=True, lock_fds=(lock.fd,))
    # the curator's own hold is gone, as when it dies: the reader process keeps the lock
    with reader:
        with pytest.raises(BusyError):
            hold_lock(lock_path(state, "curator"), wait=False).__enter__()
        assert sum(1 for _ in reader) > 0
    with hold_lock(lock_path(state, "curator"), wait=False):
        pass


def test_a_second_process_only_for_a_big_log_on_two_cores(tmp_path, monkeypatch) -> None:
    raw = tmp_path / "raw.md"
    raw.write_bytes(b"x" * 1000 + b"\n")
    job = ScanJob(str(raw), 0, 10, "unparsed", None, "b1", "shop")
    monkeypatch.setattr(rawreader, "PROCESS_MIN_BYTES", 1000)
    monkeypatch.setattr(rawreader.os, "cpu_count", lambda: 2)
    assert rawreader.use_process(job)
    assert not rawreader.use_process(ScanJob(**{**vars(job), "start": 500}))
    monkeypatch.setattr(rawreader.os, "cpu_count", lambda: 1)
    assert not rawreader.use_process(job)
    assert not rawreader.use_process(ScanJob(**{**vars(job), "raw": str(tmp_path / "none")}))


def test_a_dry_run_with_a_reader_process_writes_nothing(tmp_path) -> None:
    state, identity = bench_data(tmp_path, 2000)
    before = outcome(state, identity)
    report = curate(state, identity, "bench", CuratorSettings(reader="process"), now=NOW,
                    dry_run=True)
    assert report.processed == 2000 and report.archived == 1990 and report.diffs
    assert outcome(state, identity) == before
    assert not (state / "curator").exists() or not any((state / "curator").iterdir())


def test_a_reader_process_over_a_missing_raw_md_finds_nothing(tmp_path) -> None:
    job = ScanJob(str(tmp_path / "raw.md"), 0, 10, "2026-04", None, "b1", "shop")
    with RawReader(job, process=True) as reader:
        assert [batch for batch in reader] == []
    assert reader.scan.end == 0 and reader.scan.months == [(0, 0, "2026-04")]


def test_the_reader_process_takes_a_job_bigger_than_one_argument_may_be(tmp_path) -> None:
    """A long-lived record remembers many batches; the job crosses on stdin, not argv (an
    argument over 128 KiB fails to start the process)."""
    state, identity = tmp_path / "state", tmp_path / "identity"
    state.mkdir()
    identity.mkdir()
    write_notes(state)
    batches = {f"{n:012x}": 3 for n in range(20_000)}
    job = ScanJob(str(state / "raw.md"), 0, 2, "unparsed", None, "b1", "shop", str(identity),
                  0, batches)
    with RawReader(job, process=False) as inline:
        list(inline.candidates())
        expected = [list(batch) for batch in inline]
    with RawReader(job, process=True) as reader:
        list(reader.candidates())
        assert [list(batch) for batch in reader] == expected
    assert reader.record == inline.record
