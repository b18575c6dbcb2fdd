"""The lesson database (`lessondb`, in `<identity>/.curator.db`): a pass reads what its notes
touch, agrees with a pass that clustered all history in memory, and never counts a note
twice."""

from __future__ import annotations

import random
import sqlite3
from collections import Counter
from pathlib import Path

import orjson
import pytest

from harness.curator import curatordb, lessondb, planning, promotion, record
from harness.curator.curate import CuratorSettings, curate
from harness.curator.judge import Judgments
from tests.test_curate import note
from tests.test_curator import CROWDED, crowd

NOW = "2026-05-01T00:00:00Z"
DB = curatordb.NAME
RULE = lessondb.LessonStore(CuratorSettings().similarity).rule
TOOLS = ["pnpm", "cargo", "make", "go", "pytest", "docker", "helm", "terraform"]


def lessons(identity: Path) -> Counter:
    """Each lesson the database holds, by role, kind, first text and count."""
    with sqlite3.connect(identity / DB) as conn:
        rows = [orjson.loads(r) for (r,) in conn.execute("SELECT row FROM lesson WHERE rule=?",
                                                         (RULE,))]
    return Counter((r[0], r[1], r[2], r[3]) for r in rows)


def evidence(identity: Path) -> list[bytes]:
    """Every lesson's whole evidence row, in one order."""
    with sqlite3.connect(identity / DB) as conn:
        return sorted(row for (row,) in conn.execute("SELECT row FROM lesson WHERE rule=?",
                                                     (RULE,)))


def history(state: Path, rng: random.Random, n: int, day: int) -> None:
    """`n` notes drawn from a pool of lessons, some TRICKs recurring across features."""
    for _ in range(n):
        tool, k = rng.choice(TOOLS), rng.randrange(40)
        kind = rng.choice(["TRICK", "TRICK", "FAIL", "FORGOT", "GOTCHA", "-"])
        note(state, f"{tool} step{k} --flag{k} needs the cache warmed first", kind,
             feature=f"F-{rng.randrange(30):03d}", run=f"r{rng.randrange(10**6)}",
             ts=f"2026-04-{day:02d}T{rng.randrange(24):02d}:00:00Z")


def curate_all(folder: Path, missions: list[str], forget: bool) -> list[str]:
    """One pass per mission; `forget`: remove the database first, so all history is read."""
    promoted = []
    for mission in missions:
        if forget:
            for suffix in ("", "-wal", "-shm"):
                (folder / "identity" / f"{DB}{suffix}").unlink(missing_ok=True)
        report = curate(folder / mission, folder / "identity", mission, CuratorSettings(),
                        now=NOW)
        promoted += [p.line for p in report.promoted]
    return promoted


def curated_shop(tmp_path: Path, count: int) -> tuple[Path, Path]:
    """Mission "shop" with `count` distinct TRICKs (tool{n} --opt{n}), curated once."""
    state, identity = tmp_path / "shop", tmp_path / "identity"
    state.mkdir()
    for n in range(count):
        note(state, f"tool{n} --opt{n} needs its fixtures first", "TRICK",
             feature=f"F-{n:03d}", run=f"r{n}")
    curate(state, identity, "shop", CuratorSettings(), now=NOW)
    return state, identity


def test_passes_over_the_database_agree_with_passes_over_all_history(tmp_path) -> None:
    runs = {}
    for name, forget in (("kept", False), ("rebuilt", True)):
        rng = random.Random(7)
        folder = tmp_path / name
        promoted = []
        for day in range(1, 9):  # eight cron passes of two missions
            for mission in ("shop", "blog"):
                (folder / mission).mkdir(parents=True, exist_ok=True)
                history(folder / mission, rng, 40, day)
            promoted.append(curate_all(folder, ["shop", "blog"], forget))
        runs[name] = (promoted, evidence(folder / "identity"))
    (kept, kept_rows), (rebuilt, rebuilt_rows) = runs["kept"], runs["rebuilt"]
    assert len(kept_rows) > 100 and kept_rows == rebuilt_rows
    # sixteen passes, and the database remembers one batch per mission, not one per pass
    with sqlite3.connect(tmp_path / "kept" / "identity" / DB) as conn:
        meta = {k: orjson.loads(v) for k, v in conn.execute(
            "SELECT k, v FROM lesson_meta WHERE rule=?", (RULE,))}
    assert len(meta["batches"]) == 2 and set(meta["latest"]) == {"shop", "blog"}
    assert set(meta["batches"]) == set(meta["latest"].values())
    # (later passes differ on purpose: one that reads all history has every lesson in hand
    # and promotes again what the identity bound has moved out since)
    assert kept[0] and kept[0] == rebuilt[0]


def test_a_pass_reads_only_the_lessons_its_notes_join(tmp_path, monkeypatch) -> None:
    state, identity = curated_shop(tmp_path, 400)
    asked: list[int] = []
    real = lessondb.LessonStore.lesson_row
    monkeypatch.setattr(lessondb.LessonStore, "lesson_row",
                        lambda self, cid: (cid < self.first_cluster and asked.append(cid))
                        or real(self, cid))
    note(state, "tool3 --opt3 needs the fixtures first", "TRICK", feature="F-900", run="x")
    note(state, "a lesson never seen before", "TRICK", feature="F-901", run="y")
    report = curate(state, identity, "shop", CuratorSettings(), now=NOW)
    assert [p.text for p in report.promoted] == ["tool3 --opt3 needs its fixtures first"]
    assert len(asked) == 1  # tool3's lesson: none of the other 399 was read
    assert lessons(identity)[("worker", "TRICK", "tool3 --opt3 needs its fixtures first", 2)]
    assert sum(lessons(identity).values()) == 401


def test_a_database_another_curator_wrote_meanwhile_is_left_alone(tmp_path,
                                                                   monkeypatch) -> None:
    identity = tmp_path / "identity"
    for mission in ("shop", "blog"):
        (tmp_path / mission).mkdir()
        note(tmp_path / mission, "helm lint --strict before each release", "FAIL",
             feature="F-001", run=f"{mission}-1")
    curate(tmp_path / "shop", identity, "shop", CuratorSettings(), now=NOW)
    real_plan = planning.Planner.plan
    started: list[str] = []

    def plan_then_let_blog_finish(self):
        journal = real_plan(self)
        if not started:  # shop has planned from its snapshot; blog runs to its end now
            started.append("blog")
            curate(tmp_path / "blog", identity, "blog", CuratorSettings(), now=NOW)
        return journal

    monkeypatch.setattr(planning.Planner, "plan", plan_then_let_blog_finish)
    note(tmp_path / "blog", "terraform plan -refresh=false hid the drift", "FAIL",
         feature="F-003", run="blog-3")  # a lesson that only blog's write has
    note(tmp_path / "shop", "helm lint --strict before each release", "FAIL",
         feature="F-002", run="shop-2")
    note(tmp_path / "shop", "kubectl diff needs the server-side flag", "FAIL",
         feature="F-004", run="shop-4")  # and one only shop's plan has
    curate(tmp_path / "shop", identity, "shop", CuratorSettings(), now=NOW)
    monkeypatch.setattr(planning.Planner, "plan", real_plan)
    key = ("worker", "FAIL", "helm lint --strict before each release")
    counted = {k[3] for k in lessons(identity) if k[:3] == key}
    assert counted == {2}  # shop's first and blog's: shop's second is not in it yet
    # what the next pass sees: the database, then the record after it
    tracker = promotion.load(identity, CuratorSettings().similarity, Judgments(), write=False)
    counts = {ev.text: ev.count for cid in range(tracker.count)
              if (ev := tracker.lesson(cid))}
    tracker.store.close()
    assert counts == {"helm lint --strict before each release": 3,
                      "terraform plan -refresh=false hid the drift": 1,
                      "kubectl diff needs the server-side flag": 1}


@pytest.mark.parametrize("damage", [b"not a database at all" * 100, b""])
def test_a_damaged_database_is_rebuilt_from_the_record(tmp_path, damage) -> None:
    state, identity = tmp_path / "shop", tmp_path / "identity"
    state.mkdir()
    for n in range(2):
        note(state, "cargo test -p core needs the db up", "TRICK", feature=f"F-00{n}",
             run=f"r{n}")
    curate(state, identity, "shop", CuratorSettings(), now=NOW)
    (identity / DB).write_bytes(damage)
    for suffix in ("-wal", "-shm"):
        (identity / f"{DB}{suffix}").unlink(missing_ok=True)
    note(state, "cargo test -p core needs the db up", "TRICK", feature="F-009", run="r9")
    report = curate(state, identity, "shop", CuratorSettings(), now=NOW)
    assert lessons(identity)[("worker", "TRICK", "cargo test -p core needs the db up", 3)] == 1
    set_aside = [c for c in report.changes if "set aside" in c]
    if damage:  # an empty file is an empty database: made as a new one, nothing to say
        assert set_aside and (identity / curatordb.DAMAGED).read_bytes() == damage
    else:
        assert not set_aside


def test_a_mission_at_another_similarity_makes_the_lessons_again(tmp_path) -> None:
    """The rows of one similarity are kept at a time: a pass at another clusters the whole
    record again by its own, in place of them, and counts every note; its generation counts
    on from theirs, so a pass that read rows of an earlier life never writes on these."""
    identity = tmp_path / "identity"
    for n, (mission, similarity) in enumerate((("shop", 75.0), ("blog", 80.0), ("shop", 75.0))):
        (tmp_path / mission).mkdir(exist_ok=True)
        note(tmp_path / mission, "pnpm test --filter web needs the db up", "FAIL",
             feature="F-001", run=f"{mission}-{n}")
        curate(tmp_path / mission, identity, mission, CuratorSettings(similarity=similarity),
               now=NOW)
        with sqlite3.connect(identity / DB) as conn:
            rows = conn.execute("SELECT rule, row FROM lesson").fetchall()
            generations = conn.execute("SELECT rule, v FROM lesson_meta WHERE k='generation'")
            assert generations.fetchall() == [(lessondb.LessonStore(similarity).rule, str(n))]
        assert [(r, orjson.loads(row)[3]) for r, row in rows] == [
            (lessondb.LessonStore(similarity).rule, n + 1)]
    assert lessondb.LessonStore(75.0).rule == "s75"


def test_lessons_of_another_version_are_made_again_from_the_record(tmp_path,
                                                                    monkeypatch) -> None:
    # a new match rule (VERSION) clusters the whole log again rather than build on what
    # the old rule clustered
    state, identity = tmp_path / "shop", tmp_path / "identity"
    state.mkdir()
    note(state, "pnpm test --filter web needs the db up", "FAIL", feature="F-001", run="r1")
    monkeypatch.setattr(lessondb, "VERSION", lessondb.VERSION - 1)
    curate(state, identity, "shop", CuratorSettings(), now=NOW)
    monkeypatch.undo()
    note(state, "pnpm test --filter web needs the db up", "FAIL", feature="F-002", run="r2")
    curate(state, identity, "shop", CuratorSettings(), now=NOW)
    assert lessons(identity) == Counter({("worker", "FAIL",
                                          "pnpm test --filter web needs the db up", 2): 1})
    with sqlite3.connect(identity / DB) as conn:
        (version,), = conn.execute("SELECT v FROM lesson_meta WHERE k='version'")
    assert orjson.loads(version) == lessondb.VERSION


def test_a_pass_over_the_database_finds_a_lesson_by_its_signature(tmp_path) -> None:
    # the crowd fills the postings window of every technical word of CROWDED (see
    # test_curator): the next pass finds it through the signature's postings on disk
    state, identity = tmp_path / "shop", tmp_path / "identity"
    state.mkdir()
    for n, text in enumerate([CROWDED, *crowd()]):
        note(state, text, "TRICK", feature=f"F-{n:03d}", run=f"r{n}")
    curate(state, identity, "shop", CuratorSettings(), now=NOW)
    assert lessons(identity)[("worker", "TRICK", CROWDED, 1)] == 1
    # its words and more, none swapped: a note the rule joins to CROWDED once it finds it
    note(state, f"{CROWDED}, every time", "TRICK", feature="F-999", run="r999")
    curate(state, identity, "shop", CuratorSettings(), now=NOW)
    assert lessons(identity)[("worker", "TRICK", CROWDED, 2)] == 1


def test_a_note_of_more_words_than_one_query_takes_is_matched(tmp_path) -> None:
    state, identity = tmp_path / "shop", tmp_path / "identity"
    state.mkdir()
    long = " ".join(f"w{n}" for n in range(1007))  # more than a statement's parameters
    for n in range(2):
        note(state, f"make check {long}", "TRICK", feature=f"F-00{n}", run=f"r{n}")
        report = curate(state, identity, "shop", CuratorSettings(), now=NOW)
    assert [p.text for p in report.promoted] == [f"make check {long}"]


def traced(monkeypatch) -> list[str]:
    """The statements the passes from now on run on the lesson database."""
    statements: list[str] = []
    real = lessondb.open_store

    def open_traced(identity: Path, similarity: float, **kwargs) -> lessondb.LessonStore:
        store = real(identity, similarity, **kwargs)
        if store.conn is not None:
            store.conn.set_trace_callback(statements.append)
        return store

    monkeypatch.setattr(lessondb, "open_store", open_traced)
    return statements


def test_a_phrasing_the_database_knows_is_matched_without_its_words(tmp_path,
                                                                     monkeypatch) -> None:
    state, identity = curated_shop(tmp_path, 3)
    statements = traced(monkeypatch)
    note(state, "tool1 --opt1 needs its fixtures first", "TRICK", feature="F-900", run="x")
    report = curate(state, identity, "shop", CuratorSettings(), now=NOW)
    assert [p.text for p in report.promoted] == ["tool1 --opt1 needs its fixtures first"]
    # MEMORY.md's three lessons and the new note are phrasings the database holds
    assert statements and not [s for s in statements if "FROM word" in s]
    statements.clear()
    note(state, "tool2 --opt2 always needs its fixtures first", "TRICK", feature="F-901", run="y")
    curate(state, identity, "shop", CuratorSettings(), now=NOW)
    assert [s for s in statements if "FROM word" in s]  # new words: looked up to match


def test_memory_md_lessons_are_looked_up_once_each(tmp_path, monkeypatch) -> None:
    state, identity = curated_shop(tmp_path, 30)
    assert (state / "MEMORY.md").read_text().count(" TRICK ") == 30
    statements = traced(monkeypatch)
    note(state, "tool1 --opt1 needs its fixtures first", "TRICK", feature="F-900", run="x")
    report = curate(state, identity, "shop", CuratorSettings(), now=NOW)
    assert [p.text for p in report.promoted] == ["tool1 --opt1 needs its fixtures first"]
    # the 30 MEMORY.md lessons and the new note (a phrasing of one of them): one seek each
    assert len([s for s in statements if "FROM variant WHERE rule=" in s and "key=" in s]) == 30


def test_a_first_pass_asks_its_empty_store_nothing(tmp_path, monkeypatch) -> None:
    def asked(*args: object) -> None:
        raise AssertionError("a store with no rows was asked for some")

    monkeypatch.setattr(lessondb.LessonStore, "_rows", asked)
    state, identity = curated_shop(tmp_path, 3)  # no database before: an empty store
    note(state, "tool1 --opt1 needs its fixtures first", "TRICK", feature="F-900", run="x")
    for suffix in ("", "-wal", "-shm"):  # and none again: the whole record, read once more
        (identity / f"{DB}{suffix}").unlink(missing_ok=True)
    report = curate(state, identity, "shop", CuratorSettings(), now=NOW)
    assert [p.text for p in report.promoted] == ["tool1 --opt1 needs its fixtures first"]
    assert lessons(identity)[("worker", "TRICK", "tool1 --opt1 needs its fixtures first", 2)]


def test_a_reader_forgets_a_missions_earlier_batch_only() -> None:
    """A mission redoes its pending batch before it appends another, so its earlier batch
    never comes again; other missions' batches are kept."""
    read = record.RecordRead()
    read.saw("a1", 4, "shop")
    read.saw("b1", 2, "blog")
    read.saw("a1", 5, "shop")
    assert read.batches == {"a1": 5, "b1": 2}
    read.saw("a2", 0, "shop")
    assert read.batches == {"b1": 2, "a2": 0}
    assert read.latest == {"shop": "a2", "blog": "b1"}
