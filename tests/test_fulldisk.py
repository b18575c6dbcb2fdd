"""A full disk and a read-only folder: exit 2 (6 for a run under way) naming the file, every
record left whole, the run marked interrupted, and the next run goes on once there is room.

The disk is a small tmpfs mounted for the test (root only: skipped, with the reason, where
mounting is not allowed), filled up by a file that is deleted to give the room back.
"""

from __future__ import annotations

import collections
import errno
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import EXAMPLE, run_sh, unwritable

from harness.curator.record import parse_candidate
from harness.state.memory import parse_entry


@contextmanager
def small_disk(folder: Path, size: str = "4m") -> Iterator[Path]:
    """`folder` as a tmpfs of `size`, unmounted after."""
    folder.mkdir()
    try:
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                                  str(folder)], capture_output=True, text=True)
    except FileNotFoundError:
        pytest.skip("no mount command: a full disk cannot be made here")
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs (root and mount rights needed): {mounted.stderr}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(folder: Path, leave: int = 0) -> Path:
    """Fill the disk of `folder` but for about `leave` bytes; the filler file, to delete."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)
    if leave:
        os.truncate(filler, max(0, filler.stat().st_size - leave))
    return filler


def mission(disk: Path) -> tuple[Path, Path, list[str]]:
    """A project with a backlog of notes on `disk`, and its identity folder there too."""
    project = disk / "project"
    shutil.copytree(EXAMPLE, project / ".harness")
    with open(project / ".harness" / "config.yaml", "a") as config:
        config.write("commit: false\n")  # not a repository: what is tested is the disk
    raw = project / ".harness" / "raw.md"
    lines = raw.read_text().splitlines() + [
        f"[2026-04-2{m % 9 + 1}T10:00:0{m % 10}Z] worker F-00{m % 9 + 1} TRICK: lesson {m % 7} "
        f"runs pytest -k case{m % 7} (run r{m}-worker-F-00{m % 9 + 1})" for m in range(40)]
    raw.write_text("\n".join(lines) + "\n")
    (disk / "identity").mkdir()
    return project, disk / "identity", lines


def kept_and_archived(state: Path) -> collections.Counter:
    lines: list[str] = []
    for path in [state / "raw.md", *sorted((state / "archive").glob("*.md"))]:
        if path.name != "memory-history.md" and path.exists():
            lines += path.read_text().splitlines()
    return collections.Counter(lines)


def assert_whole(state: Path) -> None:
    """Every JSON record parses; raw.md and every transcript are whole lines."""
    for path in state.rglob("*.json"):
        json.loads(path.read_text())
    for path in state.rglob("*.jsonl"):
        text = path.read_text()
        assert not text or text.endswith("\n"), path
        for line in text.splitlines():
            json.loads(line)
    assert (state / "raw.md").read_text().endswith("\n")


@pytest.mark.parametrize("leave", [0, 4096, 16384, 65536, 262144])
def test_the_curator_on_a_full_disk_exits_2_and_goes_on_once_there_is_room(
        tmp_path: Path, leave: int) -> None:
    with small_disk(tmp_path / "disk") as disk:
        project, identity, lines = mission(disk)
        env = {"HARNESS_IDENTITY_DIR": str(identity)}
        filler = fill(disk, leave)
        for args in (["curator", "--dry-run"], ["curator"]):
            full = run_sh(*args, cwd=project, env=env)
            assert full.returncode in (0, 2), full.stderr
            assert "Traceback" not in full.stderr
            if full.returncode == 2:
                assert "cannot write" in full.stderr or "No space left" in full.stderr
        state = project / ".harness"
        assert_whole(state)
        filler.unlink()
        for _ in range(2):
            again = run_sh("curator", cwd=project, env=env)
            assert again.returncode == 0, again.stderr
        assert not (state / "curator" / "journal.json").exists()
        assert kept_and_archived(state) == collections.Counter(lines)
        assert_whole(state)
        # no candidate line was left cut short: each one is a whole note's text
        texts = {e.text for e in map(parse_entry, lines) if e is not None}
        record = (identity / ".candidates.log").read_text().splitlines()
        assert record and all(parse_candidate(line)[2].text in texts for line in record)


def test_note_on_a_full_disk_exits_2_naming_the_file_and_writes_no_half_line(
        tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", "1m") as disk:
        project, identity, _ = mission(disk)
        raw = project / ".harness" / "raw.md"
        before = raw.read_bytes()
        filler = fill(disk)
        long = "word " * 4000  # more than a page: a write that cannot fit
        result = run_sh("note", "TRICK", long, cwd=project)
        assert result.returncode == 2 and str(raw) in result.stderr, result.stderr
        assert raw.read_bytes() == before
        result = run_sh("note", "--file", "full", cwd=project, input=long)
        assert result.returncode == 2 and "No space left" in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
        assert not list((project / ".harness" / "memory").glob("*full*"))
        filler.unlink()
        assert run_sh("note", "TRICK", "room again", cwd=project).returncode == 0
        assert parse_entry(raw.read_text().splitlines()[-1]).text == "room again"


def test_a_worker_run_on_a_full_disk_exits_6_interrupted_with_whole_records(
        tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", "2m") as disk:
        project, identity, _ = mission(disk)
        state = project / ".harness"
        script = disk / "w.yaml"
        # the agent's command fills the disk: the transcript's next event cannot be written
        script.write_text("- tools: [{name: bash, input: {command: 'head -c 9000000 /dev/zero "
                          "> big; yes output | head -c 20000'}}]\n"
                          "- tools: [{name: finish, input: {summary: done}}]\n")
        filler = fill(disk, 262144)
        result = run_sh("worker", "F-004", "--backend", "scripted", "--script", str(script),
                        cwd=project)
        assert result.returncode == 6, result.stdout + result.stderr
        assert "Traceback" not in result.stderr and "cannot write" in result.stderr
        assert_whole(state)
        run = next((state / "runs").glob("*-worker-F-004"))
        manifest = json.loads((run / "manifest.json").read_text())
        assert manifest["status"] in ("interrupted", "started")
        status = run_sh("status", cwd=project).stdout
        assert "interrupted" in status, status
        filler.unlink()
        (project / "big").unlink()
        plan = json.loads((state / "features.json").read_text())
        assert next(f for f in plan if f["id"] == "F-004")["attempts"] == 0
        script.write_text("- tools: [{name: finish, input: {summary: done}}]\n")
        again = run_sh("worker", "F-004", "--backend", "scripted", "--script", str(script),
                       cwd=project)
        assert again.returncode == 0, again.stderr


def test_a_read_only_archive_is_exit_2_naming_it_and_the_next_run_goes_on(
        project: Path, state: Path) -> None:
    raw = state / "raw.md"
    lines = raw.read_text().splitlines() + [
        f"[2026-04-2{m % 9 + 1}T10:00:00Z] worker F-001 TRICK: note {m} (run r{m})"
        for m in range(20)]
    raw.write_text("\n".join(lines) + "\n")
    (state / "archive").mkdir(exist_ok=True)
    with unwritable(state / "archive"):
        result = run_sh("curator", cwd=project)
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr and str(state / "archive") in result.stderr
    assert_whole(state)
    again = run_sh("curator", cwd=project)
    assert again.returncode == 0, again.stderr
    assert kept_and_archived(state) == collections.Counter(lines)


@pytest.mark.parametrize("writer", ["raw.md", "candidate record"])
def test_an_append_the_disk_cuts_short_is_taken_back_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writer: str) -> None:
    from harness.curator import record
    from harness.state import memory

    path = tmp_path / ("raw.md" if writer == "raw.md" else record.RECORD)
    path.write_text("a whole line\n")
    real_write = os.write

    def half_then_full(fd: int, data: bytes) -> int:
        if len(data) > 8:  # writes the first half, then the disk is full
            real_write(fd, bytes(data[: len(data) // 2]))
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(OSError) as e:
        if writer == "raw.md":
            memory.append_entry(tmp_path, memory.make_entry("worker", "F-001", "TRICK",
                                                            "a note the disk cuts in half"))
        else:
            staged = tmp_path / "staged"
            staged.write_bytes(b"b:0\tts\tm\tworker\tTRICK\tF-001\t-\ta long text\n")
            record.append_locked(tmp_path, staged)
    monkeypatch.undo()
    assert e.value.errno == errno.ENOSPC and e.value.filename == str(path)
    assert path.read_text() == "a whole line\n"


def test_a_promotion_the_disk_cuts_short_leaves_no_half_line_in_identity(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.curator import commit
    from harness.curator.curate import CuratorSettings, curate
    from harness.curator.identity import provenance

    with small_disk(tmp_path / "disk") as disk:
        state, identity = disk / "shop", disk / "identity"
        state.mkdir()
        identity.mkdir()
        role_file = identity / "worker.md"
        # a person's lines, 100 bytes short of a tmpfs page and half as many characters as
        # the bound: a promoted line overflows the page and stays in the file
        lines = ["# worker", ""] + [f"- gardez les données de la suite {n:03d} é é é é é"
                                    for n in range(100)]
        data = ("\n".join(lines) + "\n").encode()[: 4096 - 100]
        text = data[: data.rindex(b"\n") + 1].decode()
        role_file.write_text(text)
        (state / "raw.md").write_text("".join(
            f"[2026-04-2{m}T10:00:00Z] worker F-00{m} TRICK: `pytest -x --lf` reruns only what "
            f"failed, not the whole suite (run r{m}-worker-F-00{m})\n" for m in (1, 2)))
        real_promote, filled = commit._promote, []

        def promote_on_a_full_disk(*args: object) -> set[int]:
            filled.append(fill(disk))  # the disk fills up just before the promotion
            return real_promote(*args)

        monkeypatch.setattr(commit, "_promote", promote_on_a_full_disk)
        with pytest.raises(OSError) as e:
            curate(state, identity, "shop", CuratorSettings(), now="2026-04-30T00:00:00Z")
        assert e.value.errno == errno.ENOSPC and e.value.filename == str(role_file)
        assert role_file.read_text() == text  # the whole promotion taken back
        monkeypatch.undo()
        filled[0].unlink()
        report = curate(state, identity, "shop", CuratorSettings(), now="2026-04-30T00:00:00Z")
        assert report.resumed
        added = role_file.read_text().removeprefix(text).splitlines()
        assert len(added) == 1 and provenance(added[0]) is not None  # one whole promoted line
