"""Nothing wedges: lines the curator cannot use, deleted lock folders, held locks, full disks
and read-only folders, hand edits of raw.md, and a `verify` that prints without end."""

from __future__ import annotations

import collections
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import RUN_SH, run_sh

BAD_DATES = ["2026-02-30T10:00:00Z", "2026-13-01T10:00:00Z", "0000-01-01T10:00:00Z"]


def lesson_lines(n: int, day: str = "2026-04-2", kind: str = "TRICK") -> list[str]:
    return [f"[{day}{m % 9 + 1}T10:00:0{m % 10}Z] worker F-00{m % 9 + 1} {kind}: lesson {m} "
            f"uses pytest -k case{m} (run r{m}-worker-F-00{m % 9 + 1})" for m in range(n)]


def raw_and_archive(state: Path) -> collections.Counter:
    lines: list[str] = []
    for path in [state / "raw.md", *sorted((state / "archive").glob("*.md"))]:
        if path.name != "memory-history.md" and path.exists():
            lines += path.read_text().splitlines()
    return collections.Counter(lines)


def test_a_line_with_an_impossible_date_is_archived_untouched_and_the_pass_goes_on(
        project: Path, state: Path) -> None:
    raw = state / "raw.md"
    bad = [f"[{ts}] worker F-001 TRICK: the day that never was" for ts in BAD_DATES]
    bad.append("[2026-04-20T10:00:00Z] worker F-001 TRICK: an escape \x1b[2J in the text")
    lines = raw.read_text().splitlines()[:3] + bad + lesson_lines(14)
    raw.write_text("\n".join(lines) + "\n")
    for _ in range(2):
        result = run_sh("curator", cwd=project)
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
    assert raw_and_archive(state) == collections.Counter(lines)  # nothing lost, nothing new
    archived = "".join(p.read_text() for p in (state / "archive").glob("*.md"))
    assert all(line in archived for line in bad)
    assert "\x1b" not in (state / "summary.md").read_text() + (state / "MEMORY.md").read_text()
    later = run_sh("note", "TRICK", "one more", cwd=project)
    assert later.returncode == 0 and run_sh("curator", cwd=project).returncode == 0


# A process that holds a lock through the harness (so the lock file says who), then sleeps.
HOLD = """
import sys, time
from pathlib import Path
from harness.state.locks import hold_lock
with hold_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def hold(path: Path, seconds: float = 60) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(path), str(seconds)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "held\n"
    return proc


def test_a_held_raw_lock_makes_note_give_up_naming_the_holder(project: Path,
                                                               state: Path) -> None:
    holder = hold(state / "locks" / "raw.lock")
    try:
        started = time.monotonic()
        result = run_sh("note", "TRICK", "waits", cwd=project, env={"HARNESS_LOCK_WAIT": "1"},
                        timeout=30)
        waited = time.monotonic() - started
    finally:
        holder.kill()
        holder.wait()
    assert result.returncode == 3, result.stderr
    assert f"pid {holder.pid} (-c " in result.stderr and " since 20" in result.stderr
    assert "raw.lock" in result.stderr and "HARNESS_LOCK_WAIT" in result.stderr
    assert 1 <= waited < 15
    assert "waits" not in (state / "raw.md").read_text()
    assert run_sh("note", "TRICK", "goes in", cwd=project).returncode == 0


def test_a_lock_held_by_a_stranger_names_it_from_the_kernel(project: Path,
                                                              state: Path) -> None:
    (state / "locks").mkdir(exist_ok=True)
    stranger = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys, time; f = open(sys.argv[1], 'w'); "
         "fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)",
         str(state / "locks" / "raw.lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert stranger.stdout.readline() == "held\n"
        result = run_sh("note", "TRICK", "waits", cwd=project, env={"HARNESS_LOCK_WAIT": "0.5"})
    finally:
        stranger.kill()
        stranger.wait()
    assert result.returncode == 3, result.stderr
    assert f"by pid {stranger.pid} (" in result.stderr and "fcntl" in result.stderr


def test_a_bad_lock_wait_is_a_usage_error(project: Path) -> None:
    result = run_sh("note", "TRICK", "x", cwd=project, env={"HARNESS_LOCK_WAIT": "soon"})
    assert result.returncode == 2 and "HARNESS_LOCK_WAIT" in result.stderr


def test_a_worker_noting_under_a_held_raw_lock_is_told_and_goes_on(
        project: Path, state: Path, tmp_path: Path) -> None:
    script = tmp_path / "note.yaml"
    script.write_text("- tools: [{name: note, input: {kind: TRICK, text: under a held lock}}]\n"
                      "- tools: [{name: finish, input: {summary: done}}]\n")
    holder = hold(state / "locks" / "raw.lock")
    try:
        result = run_sh("worker", "F-004", "--backend", "scripted", "--script", str(script),
                        cwd=project, env={"HARNESS_LOCK_WAIT": "1"}, timeout=60)
    finally:
        holder.kill()
        holder.wait()
    assert result.returncode == 0, result.stderr
    transcript = next((state / "runs").glob("*/transcript.jsonl")).read_text()
    assert "busy: raw.md's lock" in transcript or "raw.lock" in transcript
    assert "under a held lock" not in (state / "raw.md").read_text()


# A curator that takes its time: its model hook (called while it plans) sleeps.
SLOW_CURATOR = """
import sys, time
from pathlib import Path
from harness.curator.curate import curate
from harness.curator.settings import CuratorSettings
def refine(*args):
    print("planning", flush=True)
    time.sleep(float(sys.argv[3]))
    return "slow on purpose"
curate(Path(sys.argv[1]), Path(sys.argv[2]), "shop", CuratorSettings(), refine=refine)
"""


def test_a_deleted_locks_folder_lets_no_second_curator_in(project: Path, state: Path,
                                                          isolated_env: Path) -> None:
    raw = state / "raw.md"
    lines = raw.read_text().splitlines() + lesson_lines(14)
    raw.write_text("\n".join(lines) + "\n")
    first = subprocess.Popen([sys.executable, "-c", SLOW_CURATOR, str(state), str(isolated_env),
                              "3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert first.stdout.readline() == "planning\n"
        shutil.rmtree(state / "locks")
        second = run_sh("curator", cwd=project)
        assert second.returncode == 3, second.stdout + second.stderr
        assert "busy" in second.stderr and "curator" in second.stderr
    finally:
        assert first.wait(timeout=60) == 0, first.stderr.read()
    for _ in range(2):
        later = run_sh("curator", cwd=project)
        assert later.returncode == 0, later.stderr
    assert not (state / "curator" / "journal.json").exists()
    assert raw_and_archive(state) == collections.Counter(lines)


def test_a_journal_whose_staged_files_are_gone_is_carried_out_without_them(
        project: Path, state: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.curator import curate as curate_mod
    from harness.curator.settings import CuratorSettings

    raw = state / "raw.md"
    lines = raw.read_text().splitlines() + lesson_lines(14)
    raw.write_text("\n".join(lines) + "\n")

    def power_cut(*args: object, **kw: object) -> None:
        raise OSError("simulated power cut just after the commit point")

    with monkeypatch.context() as patch, pytest.raises(OSError, match="power cut"):
        patch.setattr(curate_mod, "apply_journal", power_cut)
        curate_mod.curate(state, isolated_env, "shop", CuratorSettings())
    assert (state / "curator" / "journal.json").exists()
    (state / "curator" / "candidates.pending").unlink()
    result = run_sh("curator", cwd=project)
    assert result.returncode == 0, result.stderr
    assert "candidates.pending" in result.stdout and "were gone" in result.stdout
    assert not (state / "curator" / "journal.json").exists()
    assert raw_and_archive(state) == collections.Counter(lines)
    assert run_sh("curator", cwd=project).returncode == 0


def candidate_lines(identity: Path) -> list[str]:
    record = identity / ".candidates.log"
    return record.read_text().splitlines() if record.exists() else []


def test_a_hand_edit_of_raw_md_counts_no_note_twice(project: Path, state: Path,
                                                   isolated_env: Path) -> None:
    raw = state / "raw.md"
    lesson = "pytest -p no:cacheprovider keeps the tree clean"
    lines = [f"[2026-04-2{m}T10:00:00Z] worker F-00{m} TRICK: {lesson} "
             f"(run r{m}-worker-F-00{m})" for m in range(1, 4)]
    raw.write_text("\n".join(raw.read_text().splitlines() + lines) + "\n")
    assert run_sh("curator", cwd=project).returncode == 0
    counted = candidate_lines(isolated_env)
    before = run_sh("curator", "--explain", lesson, cwd=project).stdout
    assert len(counted) >= 3 and "3 notes" in before, before
    kept = raw.read_text().splitlines()
    # one character, far from the lessons; then one lesson's words, then its header
    at = kept[0].index(": ") + 2
    kept[0] = kept[0][:at] + kept[0][at].swapcase() + kept[0][at + 1:]
    raw.write_text("\n".join(kept) + "\n")
    assert run_sh("curator", "--explain", lesson, cwd=project).stdout == before
    assert run_sh("curator", cwd=project).returncode == 0
    assert candidate_lines(isolated_env) == counted
    kept = raw.read_text().splitlines()
    kept[-1] = kept[-1].replace("keeps", "keeps the", 1)
    kept[-2] = kept[-2].replace("worker F-002", "worker F-012", 1)
    raw.write_text("\n".join(kept) + "\n")
    result = run_sh("curator", cwd=project)
    assert result.returncode == 0 and "not counted again" in result.stdout, result.stdout
    assert candidate_lines(isolated_env) == counted
    assert run_sh("curator", "--explain", lesson, cwd=project).stdout == before
    run_sh("note", "--role", "worker", "--feature", "F-009", "TRICK", lesson, cwd=project)
    assert run_sh("curator", cwd=project).returncode == 0
    assert len(candidate_lines(isolated_env)) == len(counted) + 1  # a new note still counts


# run.sh as the only child of a fresh interpreter: its peak memory is that child's
PEAK = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
sys.stderr.write(done.stderr)
print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def test_verify_output_is_streamed_into_a_tail_and_a_capped_log(project: Path, state: Path,
                                                                tmp_path: Path) -> None:
    plan = json.loads((state / "features.json").read_text())
    for f in plan:
        if f["id"] == "F-004":
            # 200 MB of output, its last line a marker the prompt must show
            f["verify"] = "yes 'line of verify output' | head -c 200000000; echo LAST-LINE"
            f["status"] = "in_progress"
    (state / "features.json").write_text(json.dumps(plan))
    script = tmp_path / "v.yaml"
    script.write_text("- tools: [{name: verdict, input: {verdict: pass, reason: ok}}, "
                      "{name: finish, input: {summary: judged}}]\n")
    peak = subprocess.run([sys.executable, "-c", PEAK, str(RUN_SH), "validator", "F-004",
                           "--backend", "scripted", "--script", str(script)],
                          cwd=project, capture_output=True, text=True, timeout=300)
    code, kib = map(int, peak.stdout.split())
    assert code == 0, peak.stderr
    print(f"peak RSS of run.sh validator with 200 MB of verify output: {kib / 1024:.0f} MiB")
    assert kib < 150 * 1024  # was about 3 x the output (held as bytes, then as text)
    run = next((state / "runs").glob("*-validator-F-004"))
    prompt = (run / "prompt.md").read_text()
    assert "LAST-LINE" in prompt and "earlier text truncated" in prompt
    log = run / "verify.log"
    assert log.stat().st_size < 9 << 20 and "more bytes of output not kept" in log.read_text()
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["verify"]["log"] == "verify.log"
    assert not list((state / "runs").glob(".verify-*"))


def test_control_bytes_written_into_raw_md_by_hand_never_reach_a_terminal_or_summary(
        project: Path, state: Path) -> None:
    raw = state / "raw.md"
    hostile = ["[2026-04-20T10:00:00Z] worker F-001 TRICK: clear \x1b[2J the screen",
               "stray \x1b]0;title\x07 output with NUL \x00 in it"]
    lines = hostile + raw.read_text().splitlines() + lesson_lines(14)
    raw.write_text("\n".join(lines) + "\n")
    dry = run_sh("curator", "--dry-run", cwd=project)
    assert dry.returncode == 0, dry.stderr
    assert not any(c in dry.stdout + dry.stderr for c in "\x1b\x07\x00")
    assert run_sh("curator", cwd=project).returncode == 0
    for name in ("summary.md", "MEMORY.md"):
        assert "\x1b" not in (state / name).read_text()
    assert raw_and_archive(state) == collections.Counter(lines)  # archived untouched


def test_a_stream_record_redacts_across_chunks_and_keeps_its_cap(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.state.store import StreamRecord

    monkeypatch.setenv("SHOP_API_KEY", "canary-secret-4242")
    record = StreamRecord(tmp_path / "verify.log", 1000)
    for chunk in (b"ok 1\nkey is canary-se", b"cret-4242 here\n", b"x" * 5000, b"\nlast\n"):
        record.write(chunk)
    record.close()
    text = (tmp_path / "verify.log").read_text()
    assert "canary-secret-4242" not in text and "key is [REDACTED] here" in text
    kept = text.split("\n[... ")[0]
    assert len(kept.encode()) <= 1000 and "more bytes of output not kept" in text
