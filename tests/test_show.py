"""`run.sh show` and `run.sh runs` for a person, and the transcript reader under them."""

from __future__ import annotations

import json
from pathlib import Path

from report_mission import HOSTILE_SCRIPT
from test_report import fake_runs

from harness.state.sections import split_sections, template_headings
from harness.state.transcript import fold_turns, read_events


def scripted_run(invoke) -> str:
    result = invoke("worker", "F-004", "--backend", "scripted", "--script", str(HOSTILE_SCRIPT))
    assert result.exit_code == 0, result.output
    return result.output.split()[0].rstrip(":")


def test_show_tells_the_run_as_text(invoke, state: Path) -> None:
    run_id = scripted_run(invoke)
    out = invoke("show", run_id).output
    lines = out.splitlines()
    assert lines[0] == f"{run_id}  worker F-004  finished  exit 0 (awaits validation)"
    assert "prompt.md: " in out and "sections" in out and "  You are a worker" in out
    assert "turn 1\n  Looking at <b>the</b> output first.\n  > bash: $ printf" in out
    assert "  > bash: $ seq 1 200\n    1\n    2\n" in out
    assert "    ... (195 more lines)" in out  # 201 lines, 6 shown
    assert "  > note: GOTCHA: <script>" in out
    assert "outcome: finished (finish called)" in out and "cost: $0.0000" in out


def test_show_json_and_prompt(invoke, state: Path) -> None:
    run_id = scripted_run(invoke)
    manifest = json.loads(invoke("show", run_id, "--json").output)
    assert manifest["run_id"] == run_id and manifest["status"] == "finished"
    prompt = (state / "runs" / run_id / "prompt.md").read_text()
    assert invoke("show", run_id, "--prompt").output == prompt
    both = invoke("show", run_id, "--json", "--prompt")
    assert both.exit_code == 2 and "not both" in both.output


def test_runs_shows_figures_and_filters(invoke, state: Path) -> None:
    ids = fake_runs(state, 10)
    out = invoke("runs").output.splitlines()
    assert out[0].split() == ["started", "run", "time", "turns", "tokens", "cost", "exit",
                              "result"]
    assert out[1].startswith("2027-01-01T00:00:00Z") and ids[0] in out[1]
    assert out[1].split()[-2:] == ["1", "fail"]
    failed = invoke("runs", "--failed").output
    assert [i for i in ids if i in failed] == [ids[0], ids[5]]
    assert invoke("runs", "--feature", "F-002").output.count("-worker-F-002") == 2
    assert invoke("runs", "--role", "validator").output == ""
    last = invoke("runs", "-n", "3").output.splitlines()
    assert len(last) == 5 and ids[-1] in last[3] and "7 earlier runs not shown" in last[4]


def test_transcript_folds_claude_stream_json_and_codex_items(tmp_path: Path) -> None:
    events = [
        {"type": "command", "argv": ["claude"]},
        {"type": "cli_event", "event": {"type": "assistant", "message": {"content": [
            {"type": "text", "text": "looking"},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]}}},
        {"type": "cli_event", "event": {"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "t1", "is_error": True,
             "content": [{"type": "text", "text": "ls: denied"}]}]}}},
        {"type": "cli_event", "event": {"type": "item.completed", "item": {
            "type": "command_execution", "id": "c1", "command": "pytest",
            "aggregated_output": "1 passed", "exit_code": 0}}},
        {"type": "cli_event", "event": {"type": "item.completed", "item": {
            "type": "agent_message", "text": "done"}}},
    ]
    path = tmp_path / "transcript.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events) + '{"cut off')
    read, bad = read_events(path)
    assert bad == 1 and len(read) == 5
    turns = fold_turns(read)
    assert [t.number for t in turns] == [0, 1, 2]
    assert turns[0].events == [events[0]]
    call = turns[1].calls[0]
    assert (call.name, call.result, call.is_error) == ("Bash", "ls: denied", True)
    assert turns[1].calls[1].result == "1 passed" and turns[2].texts == ["done"]


def test_prompt_sections_split_at_template_headings_only() -> None:
    heads = template_headings(["# You are a {{ role }}\n## Mission memory\n{{ summary }}\n"
                               "## Your feature: {{ f.id }}\n{# c #}\n"])
    assert heads == ["## Mission memory", "## Your feature: ", "# You are a "]
    prompt = ("# You are a worker\nhi\n## Mission memory\n# Summary\n## Lessons\n- x\n"
              "## Your feature: F-001\nbody\n")
    sections = split_sections(prompt, heads)
    assert [s.title for s in sections] == ["You are a worker", "Mission memory",
                                           "Your feature: F-001"]
    assert "## Lessons" in sections[1].text and "".join(s.text for s in sections) == prompt


def test_a_run_whose_price_was_unknown_shows_unknown_never_zero() -> None:
    from harness.state.run_summary import summarize

    known = summarize({"run_id": "r1", "cost_usd": 0.25})
    unknown = summarize({"run_id": "r2", "cost_usd": None, "cost_unknown": True})
    assert known.cost_text == "$0.2500"
    assert unknown.cost_text == "unknown" and unknown.cost_usd == 0.0
