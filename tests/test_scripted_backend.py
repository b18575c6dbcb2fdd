"""The scripted backend: replayed turns run real tools and are recorded like model turns."""

from __future__ import annotations

import pytest
from conftest import run_sh
from fake_api import make_session

from harness.backends.scripted import ScriptedBackend
from harness.errors import BudgetError, UsageError
from harness.types import CAPPED, FINISHED, GAVE_UP, Caps, Usage

SCRIPT = """\
- text: Creating the file.
  tools:
    - name: str_replace_based_edit_tool
      input: {command: create, path: hello.txt, file_text: "hello\\n"}
  usage: {input_tokens: 1000, output_tokens: 100, cache_read_input_tokens: 2000}
- tools:
    - name: bash
      input: {command: "wc -l < hello.txt"}
    - name: note
      input: {kind: TRICK, text: wc counts lines}
- text: Done.
  tools: [{name: finish, input: {summary: wrote hello.txt}}]
  usage: {input_tokens: 10, output_tokens: 5}
- text: never replayed
"""


def replay(tmp_path, script: str, **fields):
    (tmp_path / "state").mkdir(exist_ok=True)
    (tmp_path / "state/script.yaml").write_text(script)
    events: list[dict] = []
    options = fields.pop("options", {"script": "script.yaml"})
    session = make_session(tmp_path, events=events, options=options, **fields)
    return ScriptedBackend().run("the prompt", session), session, events


def test_replays_turns_through_the_tools_until_finish(tmp_path):
    outcome, session, events = replay(tmp_path, SCRIPT)
    assert (session.workdir / "hello.txt").read_text() == "hello\n"
    assert (outcome.status, outcome.summary, outcome.turns) == (FINISHED, "wrote hello.txt", 3)
    assert outcome.usage == Usage(1010, 105, 0, 2000)
    # no model served it: its tokens are recorded as given, and cost nothing
    assert outcome.cost_usd == 0
    assert [e["event"] for e in events] == [
        "model_turn", "tool_call", "model_turn", "tool_call", "tool_call", "model_turn",
        "tool_call"]
    assert events[0]["content"][0] == {"type": "text", "text": "Creating the file."}
    assert events[0]["stop_reason"] == "tool_use"
    assert events[3]["result"] == "1\n[exit code 0]"
    assert "TRICK: wc counts lines" in (tmp_path / "state/raw.md").read_text()


def test_the_end_of_the_script_finishes_with_the_last_text(tmp_path):
    outcome, _, events = replay(tmp_path, "- text: first\n- text: second\n")
    assert (outcome.status, outcome.summary, outcome.turns) == (FINISHED, "second", 2)
    assert events[1]["stop_reason"] == "end_turn"


def test_gave_up_and_tool_errors(tmp_path):
    script = ("- tools: [{name: bash, input: {command: ls}}]\n"
              "- tools: [{name: finish, input: {summary: stuck, status: gave_up}}]\n")
    outcome, _, events = replay(tmp_path, script, tools=["finish"])
    assert (outcome.status, outcome.summary) == (GAVE_UP, "stuck")
    assert events[1]["is_error"] and "no tool 'bash'" in events[1]["result"]


def test_turns_cap(tmp_path):
    outcome, _, events = replay(tmp_path, SCRIPT, caps=Caps(turns=1))
    assert (outcome.status, outcome.turns) == (CAPPED, 1)
    assert "turns cap" in outcome.detail
    assert [e["event"] for e in events] == ["model_turn", "tool_call"]


def test_a_script_gives_its_own_cost(tmp_path):
    script = ("- {text: one, usage: {input_tokens: 100}, cost_usd: 0.25}\n"
              "- {text: two, cost_usd: 0.5}\n- text: three\n")
    outcome, _, _ = replay(tmp_path, script)
    assert outcome.cost_usd == pytest.approx(0.75)
    assert outcome.usage == Usage(100, 0, 0, 0)


def test_dollar_cap_and_mission_budget(tmp_path):
    priced = SCRIPT.replace("  usage: {input_tokens: 10, output_tokens: 5}",
                            "  usage: {input_tokens: 10, output_tokens: 5}\n  cost_usd: 1")
    priced = priced.replace("cache_read_input_tokens: 2000}",
                            "cache_read_input_tokens: 2000}\n  cost_usd: 0.002")
    outcome, _, _ = replay(tmp_path, priced, caps=Caps(dollars=0.001))
    assert (outcome.status, outcome.turns) == (CAPPED, 1)
    assert outcome.cost_usd == pytest.approx(0.002)

    def spent(cost: float) -> None:
        if cost > 0:
            raise BudgetError("mission budget spent")

    with pytest.raises(BudgetError):
        replay(tmp_path, priced, check_budget=spent)
    outcome, _, _ = replay(tmp_path, SCRIPT, check_budget=spent)  # costs nothing: never stops
    assert outcome.status == FINISHED


@pytest.mark.parametrize(("script", "message"), [
    ("- text: [unclosed\n", "bad YAML"),
    ("text: not a list\n", "expected a list of turns"),
    ("- text: ok\n- txt: typo\n", "turn [1] key 'txt'"),
    ("- tools: [{name: bash, args: {}}]\n", "turn [0] key 'tools.0.args'"),
    ("- usage: {input_tokens: many}\n", "turn [0] key 'usage.input_tokens'"),
    ("- cost_usd: -1\n", "turn [0] key 'cost_usd'"),
    ("[" * 100_000, "nested too deeply"),
    ("- cost_usd: " + "9" * 5000 + "\n", "digits"),
])
def test_script_errors_name_the_file_and_turn(tmp_path, script, message):
    with pytest.raises(UsageError, match="script.yaml") as caught:
        replay(tmp_path, script)
    assert message in str(caught.value)
    assert not list((tmp_path / "work").iterdir())


def test_missing_script(tmp_path):
    with pytest.raises(UsageError, match="needs a `script` option"):
        replay(tmp_path, "", options={})
    with pytest.raises(UsageError, match="script file gone.yaml not found"):
        replay(tmp_path, "", options={"script": "gone.yaml"})


def test_script_path_is_absolute_or_relative_to_home(tmp_path):
    (tmp_path / "home.yaml").write_text("- text: from home\n")
    outcome, _, _ = replay(tmp_path, "", options={"script": "home.yaml"})
    assert outcome.summary == "from home"
    outcome, _, _ = replay(tmp_path, "", options={"script": str(tmp_path / "home.yaml")})
    assert outcome.summary == "from home"


def test_a_script_nested_too_deeply_is_exit_2_through_run_sh(project, tmp_path):
    script = tmp_path / "deep.yaml"
    script.write_text("[" * 100_000)
    result = run_sh("worker", "F-004", "--backend", "scripted", "--script", str(script),
                    cwd=project)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 2, result.stderr
    assert f"{script}: YAML nested too deeply" in result.stderr


def test_a_script_holding_an_alias_loop_is_exit_2_through_run_sh(project, tmp_path):
    """A tool input inside its own anchor was a ValueError traceback (a circular reference)
    as the run recorded it, exit 1; an alias bomb a MemoryError."""
    script = tmp_path / "loop.yaml"
    script.write_text("- tools: [{name: note, input: &i {kind: TRICK, text: x, self: *i}}]\n")
    result = run_sh("worker", "F-004", "--backend", "scripted", "--script", str(script),
                    cwd=project)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 2, result.stderr
    assert f"{script}: more than 100,000 values once its aliases" in result.stderr
