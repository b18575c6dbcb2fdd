"""The tools an agent calls: bash, the editor, note, verdict, plan and finish."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_api import make_session

from harness.agent.output import truncate
from harness.agent.tools import ToolBox
from harness.errors import UsageError
from harness.state.plan import load_plan
from harness.types import Caps


@pytest.fixture
def box(tmp_path):
    with ToolBox(make_session(tmp_path, caps=Caps(bash_timeout=10, output_chars=400))) as tb:
        yield tb


def bash(box: ToolBox, command: str) -> str:
    result = box.execute("bash", {"command": command})
    assert not result.is_error, result.text
    return result.text


def edit(box: ToolBox, **args):
    return box.execute("str_replace_based_edit_tool", args)


# --- specs and routing


def test_specs_follow_the_session_tools(tmp_path):
    box = ToolBox(make_session(tmp_path, tools=["bash", "str_replace_based_edit_tool", "note"]))
    specs = box.specs()
    assert specs[0] == {"type": "bash_20250124", "name": "bash"}
    assert specs[1] == {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"}
    assert specs[2]["name"] == "note"
    assert specs[2]["input_schema"]["properties"]["kind"]["enum"] == [
        "TRICK", "GOTCHA", "DECISION", "FAIL", "FORGOT", "-"]
    specs[2]["input_schema"] = {}  # a copy: callers may add cache_control without harm
    assert box.specs()[2]["input_schema"]["required"] == ["kind", "text"]


def test_unknown_tool_in_the_role_config_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="unknown tool.*bsh"):
        ToolBox(make_session(tmp_path, tools=["bash", "bsh"]))


def test_tools_outside_the_session_or_unknown_are_error_results(tmp_path):
    box = ToolBox(make_session(tmp_path, tools=["note"]))
    for name in ("bash", "verdict", "telnet"):
        result = box.execute(name, {"command": "true"})
        assert result.is_error and "no tool" in result.text and "note" in result.text
    assert box.execute("note", "not a dict").is_error


# --- bash


def test_bash_runs_in_the_workdir_and_reports_the_exit_code(box):
    assert bash(box, "pwd") == f"{box.session.workdir}\n[exit code 0]"
    assert bash(box, "echo oops >&2; exit_code() { return 3; }; exit_code").startswith("oops\n")
    assert bash(box, "false").endswith("[exit code 1]")


def test_bash_keeps_cd_and_export_across_calls(box):
    (box.session.workdir / "sub").mkdir()
    bash(box, "cd sub && export GREETING=hello")
    assert bash(box, "pwd; echo $GREETING") == f"{box.session.workdir}/sub\nhello\n[exit code 0]"


def test_bash_output_without_trailing_newline_and_awkward_commands(box):
    assert bash(box, "printf abc") == "abc\n[exit code 0]"
    # unbalanced quote: a syntax error, and the shell carries on
    assert "[exit code 2]" in bash(box, 'echo "unterminated')
    assert bash(box, "cat") == "[exit code 0]"  # reads /dev/null, not the harness's pipe
    assert bash(box, "cat <<'EOF'\nline\nEOF") == "line\n[exit code 0]"


def test_bash_environment_has_no_secrets(box, monkeypatch):
    monkeypatch.setenv("FOO_API_KEY", "canary-value-123")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://example")
    monkeypatch.setenv("PLAIN_SETTING", "visible")
    box.execute("bash", {"restart": True})
    out = bash(box, "env")
    assert "PLAIN_SETTING=visible" in out
    assert "canary-value-123" not in out and "FOO_API_KEY" not in out
    assert "ANTHROPIC_" not in out


def test_bash_timeout_kills_the_process_group_and_restarts(tmp_path):
    box = ToolBox(make_session(tmp_path, caps=Caps(bash_timeout=1)))
    try:
        bash(box, f"cd {tmp_path}")
        start = time.monotonic()
        result = box.execute("bash", {"command": "sleep 60 & echo $! > bg.pid; echo started; "
                                                 "sleep 60"})
        assert time.monotonic() - start < 10
        assert result.is_error
        assert result.text.startswith("started\n") and "timed out after 1s" in result.text
        background = int((tmp_path / "bg.pid").read_text())
        assert _gone(background)
        assert bash(box, "pwd") == f"{box.session.workdir}\n[exit code 0]"  # a fresh shell
    finally:
        box.close()


def _gone(pid: int) -> bool:
    """Whether `pid` is dead: no such process, or a zombie its new parent has not reaped yet."""
    for _ in range(50):
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def test_bash_restart_and_exit(box):
    bash(box, "export KEEP=1")
    assert "restarted" in box.execute("bash", {"restart": True}).text
    assert bash(box, "echo ${KEEP:-unset}") == "unset\n[exit code 0]"
    result = box.execute("bash", {"command": "exit 4"})
    assert result.is_error and "exited with code 4" in result.text
    assert bash(box, "echo back") == "back\n[exit code 0]"
    assert box.execute("bash", {}).is_error


def test_bash_output_is_capped_with_a_marker(box):
    out = bash(box, "for i in $(seq 1 2000); do echo line$i; done")
    assert out.startswith("line1\nline2\n")
    assert out.endswith("line2000\n[exit code 0]")
    assert "characters truncated ...]" in out
    assert len(out) < 400 + 100


def test_bash_huge_output_keeps_memory_bounded_and_counts_what_was_cut(box):
    out = bash(box, "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo tail-end")
    cut = int(out.split("[... ")[1].split(" characters")[0])
    assert cut == 3000000 + len("\ntail-end\n") - 400
    assert out.endswith("tail-end\n[exit code 0]")


def test_truncate_keeps_head_and_tail():
    assert truncate("short", 10) == "short"
    assert truncate("a" * 10 + "b" * 10, 10) == "aaaaa\n[... 10 characters truncated ...]\nbbbbb"


def test_close_kills_background_processes(tmp_path):
    box = ToolBox(make_session(tmp_path))
    pid = int(bash(box, "sleep 60 & echo $!").splitlines()[0])
    box.close()
    assert _gone(pid)


def test_a_killed_run_leaves_no_files_behind(tmp_path):
    """The shell's command goes through an unlinked file: a SIGKILLed harness cannot
    leave a scratch folder in the temp dir, as it once did once per killed run."""
    temp = tmp_path / "temp"
    temp.mkdir()
    code = (
        "import os, signal, sys; from pathlib import Path\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from fake_api import make_session\n"
        "from harness.agent.tools import ToolBox\n"
        "box = ToolBox(make_session(Path(sys.argv[2])))\n"
        "assert box.execute('bash', {'command': 'echo hi'}).text.startswith('hi')\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.run([sys.executable, "-c", code, str(Path(__file__).parent), str(work)],
                          env={**os.environ, "TMPDIR": str(temp)}, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert list(temp.iterdir()) == []


# --- the editor


def test_editor_create_and_view_with_ranges(box):
    assert edit(box, command="create", path="src/a.py", file_text="one\ntwo\nthree\n").text == (
        "created src/a.py")
    assert (box.session.workdir / "src/a.py").read_text() == "one\ntwo\nthree\n"
    assert edit(box, command="view", path="src/a.py").text == (
        "     1\tone\n     2\ttwo\n     3\tthree")
    assert edit(box, command="view", path="src/a.py", view_range=[2, 3]).text == (
        "     2\ttwo\n     3\tthree")
    assert edit(box, command="view", path="src/a.py", view_range=[3, -1]).text == "     3\tthree"
    for bad in ([0, 2], [2, 9], [3, 2], "1-2"):
        assert edit(box, command="view", path="src/a.py", view_range=bad).is_error
    absolute = str(box.session.workdir / "src/a.py")
    assert "overwrote" in edit(box, command="create", path=absolute, file_text="new").text
    assert edit(box, command="view", path="missing.txt").is_error


def test_editor_lists_a_directory_two_levels_deep_without_hidden(box):
    root = box.session.workdir
    (root / "a/b/c").mkdir(parents=True)
    (root / "a/b/c/deep.txt").write_text("x")
    (root / "a/top.txt").write_text("x")
    (root / ".git").mkdir()
    (root / "a/.hidden").write_text("x")
    listing = edit(box, command="view", path=".").text.splitlines()[1:]
    assert listing == ["a/", "a/b/", "a/top.txt"]


def test_str_replace_must_match_exactly_once(box):
    path = box.session.workdir / "f.txt"
    path.write_text("alpha\nbeta\nbeta\n")
    none = edit(box, command="str_replace", path="f.txt", old_str="gamma", new_str="x")
    assert none.is_error and "matches 0 times" in none.text
    many = edit(box, command="str_replace", path="f.txt", old_str="beta", new_str="x")
    assert many.is_error and "matches 2 times" in many.text and "lines 2, 3" in many.text
    assert path.read_text() == "alpha\nbeta\nbeta\n"
    one = edit(box, command="str_replace", path="f.txt", old_str="alpha\nbeta", new_str="A")
    assert not one.is_error and "     1\tA" in one.text
    assert path.read_text() == "A\nbeta\n"
    assert edit(box, command="str_replace", path="f.txt", old_str="", new_str="x").is_error


def test_insert_after_a_line_or_at_the_top(box):
    path = box.session.workdir / "f.txt"
    path.write_text("one\ntwo")  # no trailing newline
    for line, text in ((0, "zero"), (3, "end\n"), (1, "half\n")):
        assert not edit(box, command="insert", path="f.txt", insert_line=line,
                        insert_text=text).is_error
    assert path.read_text() == "zero\nhalf\none\ntwo\nend\n"
    assert edit(box, command="insert", path="f.txt", insert_line=9, insert_text="x").is_error
    assert edit(box, command="insert", path="f.txt", insert_text="x").is_error


def test_editor_refuses_paths_outside_the_workdir(box, tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("keep out")
    (box.session.workdir / "link").symlink_to(outside)
    (box.session.workdir / "dirlink").symlink_to(tmp_path)
    attempts = [
        dict(command="view", path=str(outside)),
        dict(command="view", path="../secret.txt"),
        dict(command="view", path="link"),
        dict(command="create", path="dirlink/new.txt", file_text="x"),
        dict(command="str_replace", path="link", old_str="keep", new_str="x"),
        dict(command="insert", path="dirlink/secret.txt", insert_line=0, insert_text="x"),
    ]
    for args in attempts:
        result = edit(box, **args)
        assert result.is_error and "outside the working directory" in result.text, args
    assert outside.read_text() == "keep out"
    assert not (tmp_path / "new.txt").exists()


def test_editor_follows_symlinks_that_stay_inside(box):
    root = box.session.workdir
    (root / "real.txt").write_text("x = 1\n")
    (root / "alias.txt").symlink_to(root / "real.txt")
    assert not edit(box, command="str_replace", path="alias.txt", old_str="1", new_str="2").is_error
    assert (root / "alias.txt").is_symlink() and (root / "real.txt").read_text() == "x = 2\n"


def test_editor_bad_commands_are_error_results(box):
    assert "unknown command" in edit(box, command="undo_edit", path="f").text
    assert edit(box, command="view").is_error
    assert edit(box, command="create", path="x.txt").is_error
    (box.session.workdir / "bin").write_bytes(b"\xff\xfe\x00")
    assert edit(box, command="view", path="bin").is_error
    assert edit(box, command="view", path="nul\x00byte").is_error


# --- note, verdict, plan, finish


def test_note_appends_to_raw_log(tmp_path):
    box = ToolBox(make_session(tmp_path))
    result = box.execute("note", {"kind": "TRICK", "text": "use  make\ntest"})
    assert not result.is_error
    line = (tmp_path / "state/raw.md").read_text()
    assert line.endswith("] worker F-001 TRICK: use make test (run 1700000000-worker-F-001)\n")
    bad = box.execute("note", {"kind": "IDEA", "text": "x"})
    assert bad.is_error and "unknown note kind" in bad.text


def test_verdict_is_recorded_for_the_run(tmp_path):
    session = make_session(tmp_path, role="validator", run_id="1700000001-validator-F-001")
    run_dir = session.state / "runs" / session.run_id
    run_dir.mkdir(parents=True)
    (run_dir / "manifest.json").write_text('{"role": "validator"}')
    box = ToolBox(session)
    orphan = ToolBox(make_session(tmp_path, run_id="1700000002-validator-F-001"))
    assert "no run" in orphan.execute("verdict", {"verdict": "pass", "reason": "ok"}).text
    assert box.execute("verdict", {"verdict": "maybe", "reason": "x"}).is_error
    assert box.execute("verdict", {"verdict": "pass", "reason": " "}).is_error
    assert not box.execute("verdict", {"verdict": "fail", "reason": "tests fail"}).is_error
    assert json.loads((run_dir / "verdict.json").read_text()) == {
        "verdict": "fail", "reason": "tests fail"}


def test_plan_is_validated_and_merged(tmp_path):
    box = ToolBox(make_session(tmp_path, role="planner", feature_id=None))
    feature = {"id": "F-001", "title": "t", "description": "d", "acceptance_criteria": ["a"]}
    bad = box.execute("plan", {"features": [{**feature, "id": "X1"}]})
    assert bad.is_error and "X1" in bad.text
    assert not (tmp_path / "state/features.json").exists()
    assert box.execute("plan", {}).is_error
    ok = box.execute("plan", {"features": [feature, {**feature, "id": "F-002"}]})
    assert not ok.is_error and "F-002 [pending] t" in ok.text
    assert [f.id for f in load_plan(tmp_path / "state")] == ["F-001", "F-002"]


def test_finish_records_the_summary(box):
    assert box.finished is None
    assert box.execute("finish", {"summary": "all done", "status": "later"}).is_error
    assert not box.execute("finish", {"summary": "all done"}).is_error
    assert (box.finished, box.finish_status) == ("all done", "done")
    box.execute("finish", {"summary": "stuck", "status": "gave_up"})
    assert box.finish_status == "gave_up"
