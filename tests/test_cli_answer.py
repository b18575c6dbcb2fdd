"""A validator's verdict and notes as the agent CLI's structured final answer
(harness/backends/cli_answer.py), with the stand-in CLIs in tests/fake_clis: what is asked of
the CLI, what is recorded, which verdict wins, and what is refused."""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import UNSURE_SECOND, assert_unsure_pair_judged_one, model_mode_curator, run_sh

from harness.agent.sandbox import bwrap_problem
from harness.backends.cli_answer import answer_schema, wants_answer
from harness.backends.command import CommandBackend
from harness.errors import UsageError
from harness.state.actions import read_verdict, record_verdict
from harness.state.runs import start_run
from harness.types import FINISHED, Caps, SandboxPolicy, Session

FAKES = Path(__file__).parent / "fake_clis"
RUN_ID = "1777000000-validator-F-001"
NOTES = [{"kind": "TRICK", "text": "curl -s localhost:8000/health checks the server"}]
PASS = {"verdict": "pass", "reason": "all three criteria hold", "notes": NOTES}


def validator_session(tmp_path: Path, events: list, cli: str, answer: object) -> Session:
    """A validator run with its starting record, driving the stand-in `cli` that answers
    `answer` (JSON text for Codex's last message, an object for Claude Code)."""
    workdir, state = tmp_path / "work", tmp_path / "work" / ".harness"
    workdir.mkdir()
    start_run(state, RUN_ID, {"role": "validator", "feature": "F-001"})
    text = answer if isinstance(answer, str) else json.dumps(answer)
    return Session(
        run_id=RUN_ID, role="validator", feature_id="F-001", workdir=workdir, state=state,
        home=tmp_path / "home", model="", caps=Caps(wall_seconds=30),
        tools=["bash", "note", "verdict", "finish"], prices={}, record=events.append,
        check_budget=lambda cost: None,
        options={"preset": cli, "structured_answer": True,
                 "command": [sys.executable, str(FAKES / f"{cli}.py"), "answer", text]})


def raw_lines(state: Path) -> list[str]:
    return (state / "raw.md").read_text().splitlines()


def test_the_answer_is_asked_by_default_only_of_a_preset_role_giving_verdicts():
    validator, worker = ["bash", "note", "verdict"], ["bash", "note"]
    assert wants_answer({"preset": "codex"}, validator)
    assert wants_answer({"preset": "claude"}, validator)
    assert not wants_answer({"preset": "codex"}, worker)
    assert wants_answer({"preset": "codex", "structured_answer": True}, worker)
    assert not wants_answer({"preset": "codex", "structured_answer": False}, validator)
    # a role's own command gets no flags it did not ask for
    assert not wants_answer({"preset": "codex", "command": "my-codex"}, validator)
    with pytest.raises(UsageError, match="true or false"):
        wants_answer({"preset": "codex", "structured_answer": "yes"}, validator)
    with pytest.raises(UsageError, match="preset: claude"):
        wants_answer({"preset": "generic", "structured_answer": True}, validator)


def test_the_schema_is_strict_as_openai_demands_every_field_required_no_others():
    for tools in (["verdict"], ["note"]):
        schema = answer_schema(tools)
        objects = [schema, schema["properties"]["notes"]["items"]]
        for obj in objects:
            assert obj["additionalProperties"] is False
            assert obj["required"] == list(obj["properties"])
    assert set(answer_schema(["verdict"])["properties"]) == {"verdict", "reason", "notes"}
    assert set(answer_schema(["note"])["properties"]) == {"summary", "notes"}


@pytest.mark.parametrize("cli", ["codex", "claude"])
def test_a_verdict_and_notes_in_the_answer_are_recorded_as_run_sh_would(tmp_path, cli):
    events: list = []
    session = validator_session(tmp_path, events, cli, PASS)
    out = CommandBackend().run("Judge F-001.", session)
    assert (out.status, out.summary) == (FINISHED, "pass: all three criteria hold")
    assert read_verdict(session.state, RUN_ID) == {"verdict": "pass",
                                                   "reason": "all three criteria hold"}
    [line] = raw_lines(session.state)
    assert line.endswith(f"validator F-001 TRICK: {NOTES[0]['text']} (run {RUN_ID})")
    flag = "--output-schema" if cli == "codex" else "--json-schema"
    assert flag in events[0]["argv"]
    assert events[-1] == {"type": "structured_answer", "answer": PASS, "refused": []}


def test_codex_answer_in_a_code_fence_is_read(tmp_path):
    session = validator_session(tmp_path, [], "codex", f"```json\n{json.dumps(PASS)}\n```")
    CommandBackend().run("Judge F-001.", session)
    assert read_verdict(session.state, RUN_ID)["verdict"] == "pass"


def test_the_answer_replaces_a_verdict_given_earlier_with_run_sh(tmp_path):
    events: list = []
    session = validator_session(tmp_path, events, "codex", PASS)
    earlier = record_verdict(session.state, RUN_ID, "fail", "first look: tests missing")
    CommandBackend().run("Judge F-001.", session)
    assert read_verdict(session.state, RUN_ID)["verdict"] == "pass"
    assert events[-1]["replaced"] == earlier


def test_no_answer_keeps_an_earlier_verdict_and_says_so(tmp_path):
    events: list = []
    session = validator_session(tmp_path, events, "codex", "Looks fine to me.")
    record_verdict(session.state, RUN_ID, "pass", "given with run.sh verdict")
    out = CommandBackend().run("Judge F-001.", session)
    assert read_verdict(session.state, RUN_ID)["reason"] == "given with run.sh verdict"
    assert events[-1] == {"type": "structured_answer",
                          "error": "the CLI gave no structured answer"}
    assert out.summary == "Looks fine to me."


def test_a_refused_verdict_or_note_is_named_in_the_transcript_and_detail(tmp_path):
    events: list = []
    answer = {"verdict": "pass", "reason": "  ", "notes": [
        {"kind": "HUNCH", "text": "x"}, "not an object", *NOTES]}
    session = validator_session(tmp_path, events, "claude", answer)
    out = CommandBackend().run("Judge F-001.", session)
    assert read_verdict(session.state, RUN_ID) is None  # the run gave no verdict: a fail
    assert len(raw_lines(session.state)) == 1  # the good note is kept
    refused = events[-1]["refused"]
    assert refused[0] == "verdict: a verdict needs a reason"
    assert "unknown note kind 'HUNCH'" in refused[1] and "not an object" in refused[2]
    assert "refused: verdict: a verdict needs a reason" in out.detail


def test_codex_preset_argv_asks_for_the_schema_before_the_stdin_dash(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    shim = bindir / "codex"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKES / "codex.py"}" answer '
                    f"'{json.dumps(PASS)}' \"$@\"\n")
    shim.chmod(0o755)
    events: list = []
    session = validator_session(tmp_path, events, "codex", PASS)
    session = replace(session, home=bindir, options={"preset": "codex",
                                                     "sandbox": "read-only"})
    CommandBackend().run("Judge F-001.", session)
    argv = events[0]["argv"]
    assert argv[-3:-1] == ["--output-schema", argv[-2]] and argv[-1] == "-"
    assert argv[argv.index("--sandbox") + 1] == "read-only"
    assert read_verdict(session.state, RUN_ID)["verdict"] == "pass"
    assert not Path(argv[-2]).exists()  # the schema's temporary file is gone after the run


@pytest.mark.skipif(bwrap_problem() is not None, reason=f"no bwrap here: {bwrap_problem()}")
def test_codex_in_bwrap_reads_its_schema_though_its_tmp_is_private(tmp_path):
    # a shell stand-in: the venv's python lies under $HOME, which bwrap hides
    events = [{"type": "item.completed", "item": {"type": "agent_message",
                                                  "text": json.dumps(PASS)}},
              {"type": "turn.completed", "usage": {}}]
    script = ('cat >/dev/null; grep -q \'"required"\' "$2" || exit 3; printf "%s\\n" '
              + " ".join(shlex.quote(json.dumps(e)) for e in events))
    session = validator_session(tmp_path, [], "codex", PASS)
    session = replace(session, sandbox=SandboxPolicy("bwrap", state=session.state),
                      options={**session.options, "command": ["sh", "-c", script, "codex"]})
    CommandBackend().run("Judge F-001.", session)
    assert read_verdict(session.state, RUN_ID)["verdict"] == "pass"


def test_a_validator_run_through_run_sh_takes_its_verdict_from_the_answer(project):
    state = project / ".harness"
    plan = json.loads((state / "features.json").read_text())
    for f in plan:
        if f["id"] == "F-004":
            f.update(status="in_progress", verify=None)
    (state / "features.json").write_text(json.dumps(plan))
    fail = {"verdict": "fail", "reason": "--json prints nothing", "notes": NOTES}
    (state / "roles").mkdir(exist_ok=True)
    (state / "roles" / "validator.yaml").write_text(
        "template: validator.md.j2\nbackend: command\n"
        "tools: [bash, note, verdict, finish]\noptions: " + json.dumps({
            "preset": "codex", "structured_answer": True, "command": [
                sys.executable, str(FAKES / "codex.py"), "answer", json.dumps(fail)]}) + "\n")
    result = run_sh("validator", "F-004", cwd=project)
    assert result.returncode == 1, result.stdout + result.stderr
    ledger = (state / "ledger" / "F-004.jsonl").read_text().splitlines()
    assert json.loads(ledger[-1])["reason"] == "--json prints nothing"
    assert NOTES[0]["text"] in (state / "raw.md").read_text()
    run = sorted((state / "runs").iterdir())[-1]
    prompt = (run / "prompt.md").read_text()
    assert "as your final answer" in prompt and "run.sh verdict pass|fail" not in prompt


def test_the_curators_answer_is_its_curation_with_the_schema_of_the_curation_tool():
    schema = answer_schema(["curation", "finish"])
    assert schema["required"] == ["summary", "memory", "promotions", "same"]
    items = schema["properties"]["promotions"]["items"]
    assert schema["additionalProperties"] is items["additionalProperties"] is False
    assert items["required"] == list(items["properties"])
    assert wants_answer({"preset": "claude"}, ["curation", "finish"])


@pytest.mark.parametrize("cli", ["codex", "claude"])
def test_a_model_mode_curator_on_an_agent_cli_judges_same_lesson_in_its_answer(
        project, isolated_env, cli):
    state = project / ".harness"
    answer = {"summary": "s", "memory": "m", "promotions": [], "same": [1]}
    model_mode_curator(
        state, "template: curator.md.j2\nbackend: command\ntools: [curation, finish]\noptions: "
        + json.dumps({"preset": cli, "structured_answer": True, "command": [
            sys.executable, str(FAKES / f"{cli}.py"), "answer", json.dumps(answer)]}) + "\n")
    result = run_sh("curator", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    run = sorted((state / "runs").iterdir())[-1]
    prompt = (run / "prompt.md").read_text()
    assert "your final answer" in prompt and "1. A worker note: " + UNSURE_SECOND in prompt
    assert_unsure_pair_judged_one(isolated_env)


def test_a_note_in_the_answer_refused_as_busy_is_named_and_the_verdict_stands(
        tmp_path, monkeypatch):
    import fcntl

    events: list = []
    session = validator_session(tmp_path, events, "claude", PASS)
    (session.state / "locks").mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HARNESS_LOCK_WAIT", "0.2")
    with open(session.state / "locks" / "raw.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another process's note, stuck
        CommandBackend().run("Judge F-001.", session)
    assert read_verdict(session.state, RUN_ID)["verdict"] == "pass"
    assert "busy: raw.lock is locked" in events[-1]["refused"][0]
    assert not (session.state / "raw.md").exists()
