"""`curator.judge: auto`: the curator role's model answers "same lesson?" in one small
call of its own, recorded like any run; without it, or when it fails, the rules decide."""

import json
from pathlib import Path

import pytest
from conftest import (
    UNSURE_FIRST,
    UNSURE_SECOND,
    assert_unsure_pair_judged_one,
    run_sh,
    unsure_pair_lines,
)
from fake_api import text

from harness.curator import curatordb
from harness.run.judging import parse, parse_pairs

ROLE = ("template: curator.md.j2\nbackend: anthropic\nmodel: claude-haiku-4-5\n"
        "tools: [curation, finish]\noptions: {{base_url: '{url}'}}\n")


def unsure_mission(state: Path, url: str, config: str = "") -> None:
    """The unsure pair in raw.md; the curator's backend is the fake API at `url`."""
    (state / "raw.md").write_text(unsure_pair_lines())
    (state / "roles").mkdir(exist_ok=True)
    (state / "roles" / "curator.yaml").write_text(ROLE.format(url=url))
    if config:
        with open(state / "config.yaml", "a") as f:
            f.write(config)


def judge_runs(state: Path) -> list[dict]:
    manifests = (json.loads(p.read_text()) for p in sorted(state.glob("runs/*/manifest.json")))
    return [m for m in manifests if m.get("template") in ("judge.md.j2", "judge_pair.md.j2")]


def test_the_judge_is_asked_and_its_same_asked_again_promotes_and_is_recorded(
        invoke, api, state: Path, isolated_env: Path) -> None:
    unsure_mission(state, api.base_url)
    api.reply(text("1: same as #1"), input=300, output=6)
    api.reply(text("1: yes"), input=120, output=3)
    result = invoke("curator")
    assert result.exit_code == 0, result.output
    question, second = api.requests
    shown = json.dumps(question["messages"])
    assert UNSURE_SECOND in shown and UNSURE_FIRST in shown and "Note 1 (" in shown
    assert not question.get("tools")  # a question, not a tool loop: one small call
    assert "MEMORY.md" not in shown  # the questions, not the memory
    pair = second["messages"][0]["content"]
    pair = pair if isinstance(pair, str) else json.dumps(pair)
    # the second look: the pair the other way round, the lesson first
    assert "Pair 1:" in pair and pair.index(UNSURE_FIRST) < pair.index(UNSURE_SECOND)
    assert_unsure_pair_judged_one(isolated_env)
    first, again = judge_runs(state)
    assert first["usage"]["input_tokens"] == 300 and first["cost_usd"] > 0
    assert again["template"] == "judge_pair.md.j2" and again["usage"]["input_tokens"] == 120
    assert first["role_update"]["tools"] == [] and first["role_update"]["caps"]["turns"] == 1
    assert (f"judge: 1 notes asked in run {first['run_id']}; 1 of 1 \"same\" confirmed "
            f"(asked in run {again['run_id']})") in result.output
    for run in (first, again):
        assert invoke("reconstruct", run["run_id"], "--check").exit_code == 0
    assert list(curatordb.read_answers(isolated_env).values()) == [True]
    more = invoke("curator")  # the answer is recorded: nothing is asked twice
    assert more.exit_code == 0 and len(api.requests) == 2


def test_a_same_the_second_look_denies_keeps_the_notes_apart_and_is_recorded(
        invoke, api, state: Path, isolated_env: Path) -> None:
    # one wrong "same" would teach identity a lesson no second worker had: both must agree
    unsure_mission(state, api.base_url)
    api.reply(text("1: same as #1"))
    api.reply(text("1: no"))
    result = invoke("curator")
    assert result.exit_code == 0, result.output
    assert '0 of 1 "same" confirmed' in result.output
    assert not (isolated_env / "worker.md").exists()
    assert list(curatordb.read_answers(isolated_env).values()) == [False]


@pytest.mark.parametrize("second", [
    pytest.param(("error", 529, "overloaded_error", "busy"), id="failed"),
    pytest.param(("text", "Both look alike."), id="no-answer-line"),
    pytest.param(("text", "1: yes\n1: no"), id="answered-both-ways"),
])
def test_a_same_the_second_look_leaves_unanswered_is_left_to_the_rules(
        invoke, api, state: Path, isolated_env: Path, second: tuple) -> None:
    unsure_mission(state, api.base_url)
    api.reply(text("1: same as #1"))
    if second[0] == "error":
        api.error(*second[1:], times=5)  # the SDK retries an overloaded API
    else:
        api.reply(text(second[1]))
    result = invoke("curator")
    assert result.exit_code == 0, result.output
    assert '0 of 1 "same" confirmed' in result.output
    assert "curator: 2 new lines" in result.output  # the pass itself went on
    assert not (isolated_env / "worker.md").exists()
    assert curatordb.read_answers(isolated_env) == {}  # neither answer recorded as the truth


def test_a_new_keeps_the_notes_apart_and_is_recorded_too(
        invoke, api, state: Path, isolated_env: Path) -> None:
    unsure_mission(state, api.base_url)
    api.reply(text("Note 1: new"))
    assert invoke("curator").exit_code == 0
    assert not (isolated_env / "worker.md").exists()
    assert list(curatordb.read_answers(isolated_env).values()) == [False]


@pytest.mark.parametrize("answer", [
    pytest.param(("error", 401, "authentication_error", "invalid x-api-key"), id="refused"),
    pytest.param(("error", 400, "invalid_request_error", "bad"), id="bad-request"),
    pytest.param(("text", "I cannot tell."), id="no-answer-line"),
    pytest.param(("text", "1: same as #7"), id="a-candidate-never-shown"),
])
def test_a_failed_or_unreadable_judge_leaves_the_rules_and_the_pass_goes_on(
        invoke, api, state: Path, isolated_env: Path, answer: tuple) -> None:
    unsure_mission(state, api.base_url)
    if answer[0] == "error":
        api.error(*answer[1:])
    else:
        api.reply(text(answer[1]))
    result = invoke("curator")
    assert result.exit_code == 0, result.output
    assert "the rules decided alone" in result.output
    assert "curator: 2 new lines" in result.output  # the pass itself went on
    assert not (isolated_env / "worker.md").exists()
    assert curatordb.read_answers(isolated_env) == {}  # nothing recorded
    assert len(judge_runs(state)) == 1  # the failed call is on record


def test_a_budget_the_first_call_spends_asks_nothing_more(
        invoke, api, state: Path, isolated_env: Path) -> None:
    unsure_mission(state, api.base_url, "budget_usd: 0.0001\n")
    api.reply(text("1: same as #1"), input=5000, output=100)
    result = invoke("curator")
    assert result.exit_code == 0, result.output
    assert len(api.requests) == 1 and "budget $0.00 is spent" in result.output
    assert not (isolated_env / "worker.md").exists()
    assert curatordb.read_answers(isolated_env) == {}


def test_without_a_key_the_rules_decide_alone_and_say_why(
        invoke, state: Path, monkeypatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    unsure_mission(state, "http://127.0.0.1:9")
    result = invoke("curator")
    assert result.exit_code == 0, result.output
    assert "judge: none (no ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN)" in result.output
    assert judge_runs(state) == []


@pytest.mark.parametrize("config", ["curator: {judge: off}\n", "budget_usd: 0\n"],
                         ids=["judge-off", "budget-spent"])
def test_judge_off_or_a_spent_budget_makes_no_call(invoke, api, state: Path,
                                                   config: str) -> None:
    unsure_mission(state, api.base_url, config)
    result = invoke("curator")
    assert result.exit_code == 0, result.output
    assert api.requests == [] and judge_runs(state) == []
    if "budget" in config:
        assert "budget $0.00 is spent" in result.output


def test_nothing_unsure_no_call(invoke, api, state: Path) -> None:
    unsure_mission(state, api.base_url)
    (state / "raw.md").write_text(
        "[2026-06-01T10:01:00Z] worker F-101 TRICK: run `make lint` before pushing "
        "(run r1-worker-F-101)\n[2026-06-01T10:02:00Z] worker F-102 - started on F-102\n")
    assert invoke("curator").exit_code == 0
    assert api.requests == []


def test_the_key_from_the_state_env_file_lets_cron_run_the_judge(
        api, project: Path, state: Path, isolated_env: Path, monkeypatch) -> None:
    # cron reads no profile: the key lives in the mission's env file, and run.sh finds it
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    unsure_mission(state, api.base_url)
    (state / "env").write_text("ANTHROPIC_API_KEY=from-the-env-file\n")
    (state / "env").chmod(0o600)
    api.reply(text("1: same as #1"))
    api.reply(text("1: yes"))
    result = run_sh("curator", cwd=project, env={"HOME": str(project)})
    assert result.returncode == 0, result.stderr
    assert "from-the-env-file" in json.dumps(api.headers[0])
    assert_unsure_pair_judged_one(isolated_env)


NOTES = [("a worker TRICK note", "n1", [("b", "n1", "x"), ("b", "n1", "y")], ["x", "y"]),
         ("a worker TRICK note", "n2", [("b", "n2", "x")], ["x"])]


@pytest.mark.parametrize(("answer", "expected"), [
    ("1: same as #2\n2: new", {("b", "n1", "x"): False, ("b", "n1", "y"): True,
                               ("b", "n2", "x"): False}),
    ("Note 2 - same as 1", {("b", "n2", "x"): True}),
    ("1) SAME AS #1", {("b", "n1", "x"): True, ("b", "n1", "y"): False}),
    ("1: same as #1\n1: new", {}),  # two answers for one note: neither counts
    ("1: same as #1\n1: same as #1", {("b", "n1", "x"): True, ("b", "n1", "y"): False}),
    ("3: new\n2: same as #2", {}),  # no note 3; note 2 has no candidate 2
    ("", {}),
])
def test_the_answer_lines_are_read_strictly(answer: str, expected: dict) -> None:
    assert parse(answer, NOTES) == expected


PAIRS = [(("b", "n1", "x"), "note one", "x"), (("b", "n2", "y"), "note two", "y")]


@pytest.mark.parametrize(("answer", "expected"), [
    ("1: yes\n2: no", {("b", "n1", "x"): True, ("b", "n2", "y"): False}),
    ("Pair 2 - YES", {("b", "n2", "y"): True}),
    ("1: yes\n1: no\n2: no", {("b", "n2", "y"): False}),  # both ways: neither counts
    ("3: yes\n0: no", {}),  # no such pair
    ("yes, both", {}),
])
def test_the_second_looks_lines_are_read_strictly(answer: str, expected: dict) -> None:
    assert parse_pairs(answer, PAIRS) == expected


def test_an_agent_cli_judges_too(invoke, state: Path, isolated_env: Path, monkeypatch) -> None:
    # the curator role on Claude Code (the command backend): the judge's prompt on its
    # stdin, its answer the result's text (one fixed text: a line for each of the two calls)
    import shlex
    import sys

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    fake = Path(__file__).parent / "fake_clis" / "claude.py"
    cli_curator(state, json.dumps(shlex.join([sys.executable, str(fake), "text",
                                              "1: same as #1\n1: yes"])))
    result = invoke("curator")
    assert result.exit_code == 0, result.output
    assert_unsure_pair_judged_one(isolated_env)
    first, second = judge_runs(state)
    assert first["backend"] == second["backend"] == "command"
    assert first["summary"] == "1: same as #1\n1: yes"


def cli_curator(state: Path, command: str) -> None:
    """The unsure pair in raw.md; the curator's backend is Claude Code's preset, run as
    `command` (YAML)."""
    (state / "raw.md").write_text(unsure_pair_lines())
    (state / "roles").mkdir(exist_ok=True)
    (state / "roles" / "curator.yaml").write_text(
        f"backend: command\noptions: {{preset: claude, command: {command}}}\n")


def test_an_agent_cli_not_on_path_leaves_the_rules(invoke, state: Path) -> None:
    cli_curator(state, "no-such-agent-cli")
    result = invoke("curator")
    assert result.exit_code == 0, result.output
    assert "judge: none (no-such-agent-cli is not on PATH)" in result.output
    assert judge_runs(state) == []


def test_an_overlapping_pass_is_turned_away_before_it_pays_for_a_call(
        api, project: Path, state: Path, invoke, monkeypatch) -> None:
    # cron starts a second pass while the first waits on its judge: exit 3 at once, no call
    import subprocess
    import time

    from conftest import RUN_SH

    unsure_mission(state, api.base_url)
    api.reply(text("1: same as #1"), delay=5)
    first = subprocess.Popen([str(RUN_SH), "curator"], cwd=project, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not api.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        assert api.requests, "the first pass never called its judge"
        second = invoke("curator")
        assert second.exit_code == 3 and "busy" in second.output
        assert len(api.requests) == 1
    finally:
        out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err


def test_an_agent_cli_command_that_cannot_be_read_leaves_the_rules(invoke, state: Path) -> None:
    cli_curator(state, "'claude \"-p'")
    result = invoke("curator")
    assert result.exit_code == 0, result.output
    assert "judge: none (its command cannot be read: No closing quotation)" in result.output


def test_a_limit_that_asks_to_wait_past_the_wall_cap_is_not_slept_out(
        api, project: Path, state: Path, isolated_env: Path) -> None:
    # a 429 asking for an hour: the SDK slept it out, holding the curator's lock an hour
    # past the role's wall-clock cap; the limit is the judge's failure, and the pass goes on
    unsure_mission(state, api.base_url)
    role = state / "roles" / "curator.yaml"
    role.write_text(role.read_text() + "caps: {wall_seconds: 20}\n")
    api.error(429, "rate_limit_error", "slow down", headers={"retry-after": "3600"}, times=3)
    result = run_sh("curator", cwd=project, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "rate limited" in result.stdout and "the rules decided alone" in result.stdout
    assert "the limit resets at" in result.stdout  # a loop still learns when to come back
    assert len(api.requests) == 1


def test_a_huge_note_is_shown_to_the_judge_cut_short(
        api, project: Path, state: Path, isolated_env: Path) -> None:
    # a megabyte of note (the note tool and `run.sh note` take stdin whole) went to the judge
    # whole, twice: 250k tokens a call, past a real model's context, for one question
    unsure_mission(state, api.base_url)
    raw = state / "raw.md"
    raw.write_text(raw.read_text().replace("tests/web/", "tests/web/ " + "pad " * 250_000, 1))
    api.reply(text("1: same as #1"))
    api.reply(text("1: yes"))
    result = run_sh("curator", cwd=project)
    assert result.returncode == 0, result.stderr
    assert len(api.requests) == 2
    assert all(len(json.dumps(request)) < 20_000 for request in api.requests)
    assert "pad pad" in json.dumps(api.requests[0])  # its words, cut short


@pytest.mark.parametrize(("mode", "content", "why"), [
    (0o644, "ANTHROPIC_API_KEY=k\n", "is readable by group or others"),
    (0o600, "not a pair\n", "line 1: expected KEY=value"),
])
def test_an_env_file_the_judge_cannot_use_leaves_the_rules_and_names_it(
        project: Path, state: Path, isolated_env: Path, monkeypatch, mode: int,
        content: str, why: str) -> None:
    # the judge reads the env files only for its key: a pass that needs none must not stop
    # there (exit 2 and nothing curated, every cron pass) when the judge is all that needs it
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    unsure_mission(state, "http://127.0.0.1:9")
    (state / "env").write_text(content)
    (state / "env").chmod(mode)
    result = run_sh("curator", cwd=project, env={"HOME": str(project)})
    assert result.returncode == 0, result.stderr
    assert "curator: 2 new lines" in result.stdout
    assert f"judge: none ({state / 'env'}" in result.stdout and why in result.stdout
    assert "the rules decided alone" in result.stdout


def test_an_agent_cli_judge_may_neither_edit_nor_run_commands(
        project: Path, state: Path, isolated_env: Path, tmp_path: Path, monkeypatch) -> None:
    # the notes in the judge's prompt are agents' words: Claude Code judging them ran with
    # the worker's permissions (Bash allowed, edits accepted), so a note saying "first run
    # this" could have it run; the judge is a question with no tools, on any backend
    import os
    import sys

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    fake = Path(__file__).parent / "fake_clis" / "claude.py"
    argvs = tmp_path / "argvs"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "claude").write_text(
        f"#!/bin/sh\necho \"$@\" >> {argvs}\n"
        f"exec {sys.executable} {fake} text '1: same as #1\n1: yes' \"$@\"\n")
    (bindir / "claude").chmod(0o755)
    (state / "raw.md").write_text(unsure_pair_lines())
    (state / "roles").mkdir(exist_ok=True)
    (state / "roles" / "curator.yaml").write_text(
        "backend: command\noptions: {preset: claude, permission_mode: bypassPermissions, "
        "structured_answer: true}\n")
    result = run_sh("curator", cwd=project,
                    env={"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"})
    assert result.returncode == 0, result.stderr
    assert_unsure_pair_judged_one(isolated_env)
    calls = argvs.read_text().splitlines()
    assert len(calls) == 2
    for argv in calls:
        assert "--permission-mode plan" in argv and "--allowedTools" not in argv, argv
        # nor a structured answer, whose notes would go to raw.md as the judge's own
        assert "--json-schema" not in argv, argv
