"""`run.sh curator` end to end: the CLI over the curator's rules."""

import json
from pathlib import Path

from harness.memory import parse_entry
from harness.store import hold_lock, lock_path


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file's bytes, lock files aside (taking a lock is not a change)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*")
            if p.is_file() and p.parent.name != "locks"}


def test_curator_dry_run_prints_diffs_and_changes_nothing(invoke, state: Path,
                                                         isolated_env: Path) -> None:
    before, identity_before = snapshot(state), snapshot(isolated_env)
    result = invoke("curator", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "--- " in result.output and "+++ " in result.output
    assert "summary.md" in result.output and "would archive" in result.output
    assert snapshot(state) == before and snapshot(isolated_env) == identity_before


def test_curator_bounds_memory_archives_and_records_progress(invoke, state: Path) -> None:
    result = invoke("curator")
    assert result.exit_code == 0, result.output
    raw = (state / "raw.md").read_text().splitlines()
    assert sum(parse_entry(line) is not None for line in raw) == 10  # the last 10 entries
    assert any("this line was pasted by hand" in line for line in raw)  # kept, not dropped
    archived = "".join(p.read_text() for p in (state / "archive").glob("*.md")).splitlines()
    assert len(archived) + len(raw) == 36  # every line is in one place or the other
    assert len((state / "summary.md").read_text().splitlines()) <= 40
    assert (state / "progress.log").read_text().splitlines()[-1].split()[1] == "curator"
    again = invoke("curator")  # idempotent: nothing new, nothing changes
    assert again.exit_code == 0
    assert "0 new lines" in again.output


def test_second_curator_is_busy(invoke, state: Path) -> None:
    with hold_lock(lock_path(state, "curator")):
        result = invoke("curator")
    assert result.exit_code == 3 and "busy" in result.output


def test_curator_similarity_comes_from_config(invoke, state: Path) -> None:
    (state / "config.yaml").write_text("curator: {similarity: 101}\n")
    result = invoke("curator")
    assert result.exit_code == 2 and "curator.similarity" in result.output
    status = json.loads(invoke("status", "--json").output)
    assert status["memory"]["raw"]["entries"] == 36  # nothing was touched
