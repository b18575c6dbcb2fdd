"""The curator database (`<identity>/.curator.db`): named migrations applied once, in
order; the files of earlier versions imported or dropped, never silently lost; the
judge's answers keyed again when the normaliser changes; a damaged database set aside."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.curator import curatordb, lessondb, promotion
from harness.curator.curate import CuratorSettings, curate
from harness.curator.judge import Judgments
from harness.curator.text import NORMALISER_VERSION, normalize
from harness.errors import UsageError
from tests.test_curate import note

NOW = "2026-05-01T00:00:00Z"
BUCKET = ("worker", "TRICK")
FIRST = "pnpm test --filter web needs the db up"
SECOND = "cargo build --release strips the debug symbols"


def table(identity: Path, query: str) -> list[tuple]:
    with sqlite3.connect(identity / curatordb.NAME) as conn:
        return conn.execute(query).fetchall()


def forget(identity: Path) -> None:
    """Drop every lesson row: the next pass clusters the whole record again."""
    for name in curatordb.CACHES:
        table(identity, f"DELETE FROM {name}")


def after_one_pass(tmp_path: Path) -> tuple[Path, Path]:
    """A state and an identity folder after one curator pass over one lesson note."""
    state, identity = tmp_path / "shop", tmp_path / "identity"
    state.mkdir()
    note(state, FIRST, "TRICK", feature="F-001", run="r1")
    curate(state, identity, "shop", CuratorSettings(), now=NOW)
    return state, identity


def test_the_migrations_run_once_in_order_and_are_recorded(tmp_path) -> None:
    conn = curatordb.connect(tmp_path)
    assert conn is not None
    conn.close()
    names = [name for name, _ in curatordb.MIGRATIONS]
    assert names == ["1-tables", "2-import-judgments-db", "3-drop-old-caches",
                     "4-drop-archive-index"]
    assert table(tmp_path, "SELECT name FROM sqlite_master WHERE name LIKE 'archive%'") == []
    assert [n for (n,) in table(tmp_path, "SELECT name FROM migration ORDER BY rowid")] == names
    assert table(tmp_path, "PRAGMA user_version") == [(curatordb.SCHEMA_VERSION,)]
    assert table(tmp_path, "SELECT v FROM setting WHERE k='normaliser'") == [
        (str(NORMALISER_VERSION),)]
    before = (tmp_path / curatordb.NAME).stat().st_mtime_ns
    curatordb.connect(tmp_path).close()  # current: nothing runs again
    assert len(table(tmp_path, "SELECT name FROM migration")) == len(names)
    assert (tmp_path / curatordb.NAME).stat().st_mtime_ns == before


def test_a_database_of_the_version_before_loses_its_archive_index(tmp_path) -> None:
    curatordb.connect(tmp_path).close()
    with sqlite3.connect(tmp_path / curatordb.NAME) as conn:  # as harness 2026-11 left it
        conn.execute("CREATE TABLE archive_words(role TEXT, word TEXT, lines INTEGER)")
        conn.execute("CREATE TABLE archive_read(role TEXT PRIMARY KEY, bytes INTEGER)")
        conn.execute("INSERT INTO answer VALUES ('worker', 'TRICK', 'a b', 'c d', 1, "
                     "'2026-01-01T00:00:00Z', 'shop', NULL, NULL)")
        conn.execute("DELETE FROM migration WHERE name = '4-drop-archive-index'")
        conn.execute("PRAGMA user_version = 3")
    conn.close()
    curatordb.connect(tmp_path).close()
    assert table(tmp_path, "SELECT name FROM sqlite_master WHERE name LIKE 'archive%'") == []
    assert table(tmp_path, "SELECT key, other, same FROM answer") == [("a b", "c d", 1)]
    assert table(tmp_path, "PRAGMA user_version") == [(curatordb.SCHEMA_VERSION,)]


def test_a_dry_run_makes_no_database(tmp_path) -> None:
    assert curatordb.connect(tmp_path, write=False) is None
    assert not (tmp_path / curatordb.NAME).exists()


def old_judgments(identity: Path) -> None:
    """A `.judgments.db` as the harness wrote it before the curator database."""
    identity.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(identity / ".judgments.db") as conn:
        conn.execute("""CREATE TABLE answer(role TEXT, kind TEXT, key TEXT, other TEXT,
            same INTEGER, ts TEXT, mission TEXT, PRIMARY KEY(role, kind, key, other))
            WITHOUT ROWID""")
        conn.execute("INSERT INTO answer VALUES ('worker', 'TRICK', 'a b', 'c d', 1, "
                     "'2026-01-01T00:00:00Z', 'shop')")
    conn.close()


def test_the_files_of_earlier_versions_are_imported_or_dropped(tmp_path) -> None:
    state, identity = tmp_path / "shop", tmp_path / "identity"
    state.mkdir()
    old_judgments(identity)
    caches = [".candidates.v4-s75.db", ".candidates.v4-s75.db-wal", ".archive.db",
              ".candidates.digest"]
    for name in caches:
        (identity / name).write_bytes(b"an old cache")
    for n in range(2):
        note(state, FIRST, "TRICK", feature=f"F-00{n}", run=f"r{n}")
    report = curate(state, identity, "shop", CuratorSettings(), now=NOW)
    assert [p.text for p in report.promoted] == [FIRST]  # the lessons: made from the record
    assert curatordb.read_answers(identity) == {(BUCKET, "a b", "c d"): True}
    assert not [name for name in [*caches, ".judgments.db"] if (identity / name).exists()]


def test_answers_are_recorded_with_the_texts_they_are_about(tmp_path) -> None:
    state, identity = tmp_path / "shop", tmp_path / "identity"
    state.mkdir()
    note(state, SECOND, "TRICK", feature="F-001", run="r1")
    curate(state, identity, "shop", CuratorSettings(), now=NOW)
    # the other side was normalised by an earlier pass: its text is the database's
    note(state, FIRST, "TRICK", feature="F-002", run="r2")
    pair = (BUCKET, normalize(FIRST).key, normalize(SECOND).key)
    curate(state, identity, "shop", CuratorSettings(), now=NOW,
           judge=Judgments({pair: False}))
    assert table(identity, "SELECT key, other, same, text, other_text FROM answer") == [
        (pair[1], pair[2], 0, FIRST, SECOND)]


def test_a_new_normaliser_keys_the_answers_again_from_their_texts(tmp_path,
                                                                  monkeypatch) -> None:
    identity = tmp_path / "identity"
    curatordb.append_answers(identity, curatordb.answer_rows(
        {(BUCKET, "first text", "second text"): True, (BUCKET, "x", "y"): False},
        NOW, "shop", lambda bucket, key: {"first text": "the First text",
                                          "second text": "the Second text"}.get(key)))
    with sqlite3.connect(identity / curatordb.NAME) as conn:
        conn.execute("INSERT INTO lesson_meta VALUES ('s75', 'version', '5')")
    conn.close()
    monkeypatch.setattr(curatordb, "NORMALISER_VERSION", NORMALISER_VERSION + 1)
    monkeypatch.setattr(curatordb, "normalize", lambda text: SimpleNamespace(key=text.upper()))
    said: list[str] = []
    curatordb.connect(identity, said=said).close()
    assert curatordb.read_answers(identity) == {(BUCKET, "THE FIRST TEXT", "THE SECOND TEXT"): True,
                                           (BUCKET, "x", "y"): False}
    # the answer without its texts is kept under its old keys, and said so
    assert said == ["1 recorded answers have no texts to key again by the new normaliser: "
                    "kept under their old keys"]
    assert (f"rekey-normaliser-{NORMALISER_VERSION}-to-{NORMALISER_VERSION + 1}",) in table(
        identity, "SELECT name FROM migration")
    assert table(identity, "SELECT count(*) FROM lesson_meta") == [(0,)]  # made again


def test_a_folder_in_place_of_the_database_is_set_aside_with_a_message(tmp_path) -> None:
    state, identity = tmp_path / "shop", tmp_path / "identity"
    state.mkdir()
    (identity / curatordb.NAME).mkdir(parents=True)
    for n in range(2):
        note(state, FIRST, "TRICK", feature=f"F-00{n}", run=f"r{n}")
    report = curate(state, identity, "shop", CuratorSettings(), now=NOW)
    assert [p.text for p in report.promoted] == [FIRST]
    assert any("set aside as .curator.db.damaged" in c for c in report.changes)
    assert (identity / curatordb.DAMAGED).is_dir() and (identity / curatordb.NAME).is_file()


def test_forgetting_the_lessons_makes_the_next_pass_read_the_whole_record(tmp_path) -> None:
    state, identity = after_one_pass(tmp_path)
    forget(identity)
    assert table(identity, "SELECT count(*) FROM lesson") == [(0,)]
    note(state, FIRST, "TRICK", feature="F-002", run="r2")
    report = curate(state, identity, "shop", CuratorSettings(), now=NOW)
    assert [p.text for p in report.promoted] == [FIRST]


def test_an_answer_about_identity_is_recorded_with_its_texts(tmp_path) -> None:
    state, identity = tmp_path / "shop", tmp_path / "identity"
    state.mkdir()
    identity.mkdir()
    (identity / "worker.md").write_text(
        f"- TRICK: {SECOND} [promoted 2026-04-01; seen 2x 2026-04-01; missions: blog]\n")
    for n in range(2):
        note(state, FIRST, "TRICK", feature=f"F-00{n}", run=f"r{n}")
    pair = ("worker", normalize(FIRST).key, normalize(SECOND).key)
    curate(state, identity, "shop", CuratorSettings(), now=NOW, judge=Judgments({pair: True}))
    assert table(identity, "SELECT role, kind, text, other_text FROM answer") == [
        ("worker", "-", FIRST, SECOND)]


def test_an_old_answers_file_that_cannot_be_read_is_left_and_said(tmp_path) -> None:
    (tmp_path / ".judgments.db").write_bytes(b"not a database at all" * 100)
    said: list[str] = []
    curatordb.connect(tmp_path, said=said).close()
    assert (tmp_path / ".judgments.db").read_bytes() == b"not a database at all" * 100
    assert len(said) == 1 and "its answers were not imported" in said[0]
    assert curatordb.read_answers(tmp_path) == {}


def test_a_lesson_database_locked_past_its_timeout_is_left_for_the_next_pass(
        tmp_path, monkeypatch) -> None:
    state, identity = after_one_pass(tmp_path)

    def locked(*args: object) -> None:
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(lessondb, "_write", locked)
    note(state, FIRST, "TRICK", feature="F-002", run="r2")
    report = curate(state, identity, "shop", CuratorSettings(), now=NOW)
    assert [p.text for p in report.promoted] == [FIRST]
    assert not (state / "curator" / "journal.json").exists()  # the pass finished
    monkeypatch.undo()
    # the rows stayed as they were: the next pass reads the record on from the older offset
    note(state, FIRST, "TRICK", feature="F-003", run="r3")
    curate(state, identity, "shop", CuratorSettings(), now=NOW)
    rows = table(identity, "SELECT row FROM lesson")
    assert len(rows) == 1 and b'"F-003"' in rows[0][0] and b'"F-002"' in rows[0][0]


@pytest.mark.parametrize("rebuild", [False, True])
def test_a_database_found_damaged_at_the_write_is_set_aside_and_made_again(
        tmp_path, monkeypatch, rebuild) -> None:
    state, identity = after_one_pass(tmp_path)
    if rebuild:
        forget(identity)

    def damaged(self: object) -> None:
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(promotion.Evidence, "row", damaged)
    note(state, FIRST, "TRICK", feature="F-002", run="r2")
    report = curate(state, identity, "shop", CuratorSettings(), now=NOW)
    assert [p.text for p in report.promoted] == [FIRST]
    assert any("set aside as .curator.db.damaged" in c for c in report.changes)
    monkeypatch.undo()
    note(state, FIRST, "TRICK", feature="F-003", run="r3")
    curate(state, identity, "shop", CuratorSettings(), now=NOW)
    [(row,)] = table(identity, "SELECT row FROM lesson")
    assert b'"F-001"' in row and b'"F-003"' in row


def test_answers_met_by_a_damaged_database_go_to_a_new_one(tmp_path) -> None:
    curatordb.append_answers(tmp_path,
                             curatordb.answer_rows({(BUCKET, "a b", "c d"): True}, NOW, "shop"))
    path = tmp_path / curatordb.NAME
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = bytearray(path.read_bytes())
    data[4096:] = b"\xff" * (len(data) - 4096)  # every page past the first is garbage
    path.write_bytes(bytes(data))
    said: list[str] = []
    curatordb.append_answers(tmp_path,
                             curatordb.answer_rows({(BUCKET, "e f", "g h"): False}, NOW, "shop"),
                             said)
    assert curatordb.read_answers(tmp_path) == {(BUCKET, "e f", "g h"): False}
    assert "set aside" in said[0] and (tmp_path / curatordb.DAMAGED).exists()


def test_a_pass_with_recorded_answers_leaves_no_wal_file_behind(tmp_path) -> None:
    """Every connection of a pass is closed by then; the last one, read-only, could not
    checkpoint the WAL and remove it, and every later open would read it through."""
    state, identity = tmp_path / "shop", tmp_path / "identity"
    state.mkdir()
    curatordb.append_answers(identity,
                             curatordb.answer_rows({(BUCKET, "a b", "c d"): True}, NOW, "shop"))
    for n in range(2):
        note(state, FIRST, "TRICK", feature=f"F-00{n}", run=f"r{n}")
    curate(state, identity, "shop", CuratorSettings(), now=NOW)
    assert not (identity / f"{curatordb.NAME}-wal").exists()


def test_a_database_found_damaged_while_planning_stops_the_run_with_a_message(
        tmp_path, monkeypatch) -> None:
    state, identity = after_one_pass(tmp_path)

    def damaged(*args: object) -> None:
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(lessondb.LessonStore, "fault", damaged)
    note(state, FIRST, "TRICK", feature="F-002", run="r2")
    raw = (state / "raw.md").read_bytes()
    with pytest.raises(UsageError, match="without --dry-run sets it aside"):
        curate(state, identity, "shop", CuratorSettings(), now=NOW, dry_run=True)
    assert (identity / curatordb.NAME).exists()
    with pytest.raises(UsageError, match="was damaged .* set aside as .curator.db.damaged"):
        curate(state, identity, "shop", CuratorSettings(), now=NOW)
    assert (state / "raw.md").read_bytes() == raw  # nothing changed
    monkeypatch.undo()
    report = curate(state, identity, "shop", CuratorSettings(), now=NOW)
    assert [p.text for p in report.promoted] == [FIRST]  # made anew from the record


def test_a_dry_run_before_the_first_pass_of_this_version_changes_no_file(tmp_path) -> None:
    state, identity = tmp_path / "shop", tmp_path / "identity"
    state.mkdir()
    old_judgments(identity)
    (identity / ".archive.db").write_bytes(b"an old cache")
    before = sorted(p.name for p in identity.iterdir())
    for n in range(2):
        note(state, FIRST, "TRICK", feature=f"F-00{n}", run=f"r{n}")
    report = curate(state, identity, "shop", CuratorSettings(), now=NOW, dry_run=True)
    assert [p.text for p in report.promoted] == [FIRST]  # clustered from the files alone
    assert sorted(p.name for p in identity.iterdir()) == before
    curate(state, identity, "shop", CuratorSettings(), now=NOW)
    assert curatordb.read_answers(identity) == {(BUCKET, "a b", "c d"): True}
