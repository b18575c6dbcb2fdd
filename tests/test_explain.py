"""`run.sh curator --explain TEXT`: why a lesson was promoted, or why not, changing nothing."""

from pathlib import Path

import pytest

UNITTEST = "python3 -m unittest from the project root imports the package without installing it"
ECHO = "run the formatter before the tests or the diff check fails on whitespace"
FAIL = "the CLI printed a traceback on a missing file instead of exit 1"

RAW = f"""\
[2026-11-18T09:12:45Z] worker F-001 TRICK: {UNITTEST} (run R1-worker-F-001)
[2026-11-18T12:07:44Z] worker F-002 TRICK: {UNITTEST} (run R2-worker-F-002)
[2026-11-18T13:00:00Z] worker F-003 TRICK: {ECHO} (run R3-worker-F-003)
[2026-11-18T14:00:00Z] worker F-003 TRICK: {ECHO} (run R4-worker-F-003)
[2026-11-18T15:00:00Z] validator F-003 FAIL: {FAIL} (run R5-validator-F-003)
[2026-11-19T09:00:00Z] validator F-004 FAIL: {FAIL} (run R6-validator-F-004)
[2026-11-19T10:00:00Z] worker F-004 GOTCHA: the fixture folder is read-only (run R7-worker-F-004)
"""


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file's bytes, lock files aside (taking a lock is not a change)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*")
            if p.is_file() and p.parent.name != "locks"}


@pytest.fixture
def curated(invoke, state: Path) -> Path:
    """The example mission with RAW as its raw.md, after one curator pass."""
    (state / "raw.md").write_text(RAW)
    result = invoke("curator")
    assert result.exit_code == 0, result.output
    return state


def explain(invoke, *args: str) -> str:
    result = invoke("curator", "--explain", *args)
    assert result.exit_code == 0, result.output
    return result.output


def test_a_promoted_trick_is_explained_as_met_and_found_in_identity(
        invoke, curated: Path, isolated_env: Path) -> None:
    out = explain(invoke, "running python3 -m unittest from the project root imports the "
                          "package without installing it")
    assert f"worker TRICK, first noted as: {UNITTEST}" in out
    assert ("evidence: 2 notes, 2026-11-18; missions: textstats; features: F-001, F-002; "
            "runs: R1-worker-F-001, R2-worker-F-002") in out
    assert "Met: it was noted for features F-001, F-002." in out
    assert f"now: in identity/worker.md: - TRICK: {UNITTEST} [promoted " in out
    assert "has not read yet" not in out


def test_an_echo_on_the_same_feature_is_explained_as_missed(invoke, curated: Path) -> None:
    out = explain(invoke, ECHO, "--role", "worker", "--kind", "trick")
    assert "evidence: 2 notes, 2026-11-18; missions: textstats; features: F-003" in out
    assert "Missed: both notes came from feature F-003 of mission textstats" in out
    assert "its repeats are echoes, not a second worker" in out
    assert "now: not in identity/worker.md; the rule is not met yet." in out


def test_a_fail_seen_in_one_mission_needs_a_second(invoke, curated: Path) -> None:
    out = explain(invoke, FAIL)
    assert f"validator FAIL, first noted as: {FAIL}" in out
    assert "features: F-003, F-004" in out
    assert ("Missed: it was seen only in mission textstats (2 notes); it needs a second "
            "mission.") in out


def test_text_that_matches_no_lesson_says_so(invoke, curated: Path) -> None:
    out = explain(invoke, "bananas are yellow")
    assert "No lesson in the candidate record says this: bananas are yellow" in out
    assert "GOTCHA, DECISION and plain notes are never promoted" in out


def test_the_role_and_kind_narrow_the_search(invoke, curated: Path) -> None:
    assert "No lesson" in explain(invoke, UNITTEST, "--role", "validator")
    assert "No lesson" in explain(invoke, UNITTEST, "--kind", "FAIL")
    out = explain(invoke, "the fixture folder is read-only", "--kind", "GOTCHA")
    assert "GOTCHA notes are never promoted to identity" in out
    result = invoke("curator", "--explain", UNITTEST, "--kind", "LESSON")
    assert result.exit_code == 2 and "LESSON" in result.output
    result = invoke("curator", "--role", "worker")
    assert result.exit_code == 2 and "--explain" in result.output


def test_a_deleted_or_archived_line_is_told_apart(invoke, curated: Path,
                                                  isolated_env: Path) -> None:
    role_file = isolated_env / "worker.md"
    line = next(x for x in role_file.read_text().splitlines() if UNITTEST in x)
    role_file.write_text(role_file.read_text().replace(line + "\n", ""))
    out = explain(invoke, UNITTEST)
    assert "though due: a person deleted the line" in out
    (isolated_env / "archive").mkdir()
    (isolated_env / "archive" / "worker.md").write_text(line + "\n")
    assert "now: in identity/archive/worker.md, moved out of identity/worker.md" in explain(
        invoke, UNITTEST)


def test_unread_raw_lines_are_mentioned(invoke, curated: Path) -> None:
    with open(curated / "raw.md", "a") as f:
        f.write(f"[2026-11-20T09:00:00Z] worker F-005 TRICK: {ECHO} (run R8-worker-F-005)\n")
        f.write("[2026-11-20T09:01:00Z] worker F-005 -: done (run R8-worker-F-005)\n")
    out = explain(invoke, ECHO)
    assert "Missed: both notes came from feature F-003" in out  # not counted yet
    assert "raw.md has 2 lines the curator has not read yet" in out
    assert f"Of those, 1 says this:\n  [2026-11-20T09:00:00Z] worker F-005 TRICK: {ECHO}" in out


def test_explain_writes_nothing(invoke, curated: Path, isolated_env: Path) -> None:
    with open(curated / "raw.md", "a") as f:
        f.write(f"[2026-11-20T09:00:00Z] worker F-005 TRICK: {ECHO} (run R8-worker-F-005)\n")
    made = list(isolated_env.glob(".curator.db*"))
    assert made
    for path in made:  # explain must not make the curator database again either
        path.unlink()
    before, identity_before = snapshot(curated), snapshot(isolated_env)
    for text in (UNITTEST, ECHO, FAIL, "bananas are yellow"):
        explain(invoke, text)
    assert snapshot(curated) == before and snapshot(isolated_env) == identity_before


def test_forgot_needs_a_second_occasion_not_a_restatement() -> None:
    from harness.curator.explain import rule
    from harness.curator.promotion import Evidence

    ev = Evidence("worker", "FORGOT", "the verify command runs one test file only")
    ev.note("2026-11-18", "textstats", "F-001", "R1")
    ev.note("2026-11-18", "textstats", "F-001", "R1")
    assert "Missed: both notes came from one occasion (R1)" in rule(ev)
    ev.note("2026-11-19", "textstats", "F-002", "R2")
    assert rule(ev).endswith("Met: it was forgotten in runs R1, R2.")
