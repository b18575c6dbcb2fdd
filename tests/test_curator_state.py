"""The curator's own state, `curator/cursor.json` and `curator/journal.json`, edited by hand
or damaged: exit 2 naming the file and the key, never a traceback, no write outside the state
directory, and the next pass works once the file is moved away (issue 31)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_sh

CURSOR_DAMAGE = {
    "next_ids": {"next_ids": "x", "processed": 0},
    "next_ids ": {"next_ids": {"L": "a", "D": -1}, "processed": 0},
    "processed": {"processed": -5},
    "processed ": {"processed": 1e400},
    "processed  ": {"processed": 10**22},
    "last_month": {"last_month": "../../../outside", "processed": 0},
}


def files(folder: Path) -> dict[Path, bytes]:
    """Every file under `folder` but the lock files (each run says in its own who holds it)."""
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file() and p.suffix != ".lock"}


# each damage through a pass; a dry run reads the cursor through the same check: two of them
@pytest.mark.parametrize(("key", "command"), [
    *((key, ["curator"]) for key in CURSOR_DAMAGE),
    *((key, ["curator", "--dry-run"]) for key in ("next_ids", "last_month"))])
def test_a_hand_edited_cursor_is_exit_2_naming_its_key(project: Path, state: Path,
                                                       key: str, command: list[str]) -> None:
    assert run_sh("curator", cwd=project).returncode == 0
    cursor = state / "curator" / "cursor.json"
    cursor.write_text(json.dumps({"version": 1, **CURSOR_DAMAGE[key]}))
    before = files(project.parent)
    result = run_sh(*command, cwd=project)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 2, result.stderr
    assert str(cursor) in result.stderr and f"'{key.strip()}'" in result.stderr
    after = files(project.parent)
    assert after == before
    cursor.unlink()
    assert run_sh("curator", cwd=project).returncode == 0


def interrupted_pass(state: Path, identity: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """A pass stopped just after its commit point; its journal."""
    from harness.curator import curate as curate_mod
    from harness.curator.settings import CuratorSettings

    with (state / "raw.md").open("a") as raw:
        raw.write("[2026-11-20T10:00:00Z] worker F-004 TRICK: cache pip downloads (run r1)\n")

    def power_cut(*args: object, **kw: object) -> None:
        raise OSError("power cut")

    with monkeypatch.context() as patch, pytest.raises(OSError, match="power cut"):
        patch.setattr(curate_mod, "apply_journal", power_cut)
        curate_mod.curate(state, identity, "shop", CuratorSettings())
    return json.loads((state / "curator" / "journal.json").read_text())


def journal_damage(journal: dict) -> dict[str, dict]:
    raw = journal["raw"]
    return {
        "files": {**journal, "files": {"../../outside.md": "written where it should not be"}},
        "archive_sizes": {**journal, "archive_sizes": {"../raw.md": 0}},
        "raw": {**journal, "raw": {**raw, "months": [[0, "../../outside"]]}},
        "candidates": {**journal, "candidates": "1"},
        "cursor": {**journal, "cursor": []},
        "identity_sizes": {k: v for k, v in journal.items() if k != "identity_sizes"},
    }


@pytest.mark.parametrize("key", ["files", "archive_sizes", "raw", "candidates", "cursor",
                                 "identity_sizes"])
def test_a_damaged_journal_is_exit_2_naming_its_key_and_writes_nowhere(
        project: Path, state: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch,
        key: str) -> None:
    journal = state / "curator" / "journal.json"
    journal.write_text(json.dumps(journal_damage(interrupted_pass(state, isolated_env,
                                                                  monkeypatch))[key]))
    raw = (state / "raw.md").read_bytes()
    result = run_sh("curator", cwd=project)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 2, result.stderr
    assert str(journal) in result.stderr and f"'{key}'" in result.stderr
    assert (state / "raw.md").read_bytes() == raw
    assert not list(project.parent.glob("outside*")) and not list(project.glob("outside*"))
    journal.unlink()  # the way out the message gives
    assert run_sh("curator", cwd=project).returncode == 0
