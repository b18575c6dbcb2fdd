"""A person answers and steers (harness/state/steering.py), through real run.sh subprocesses:
`answer` unblocks a blocked feature with the answer in its next prompt; `guide` adds guidance
to its prompts until removed; both in its ledger. End to end with a hook and a notification.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import run_sh
from test_notify import Sink

BLOCKED = ("- tools: [{name: finish, input: {summary: stuck, status: blocked, "
           "needs: 'which database should the JSON go to?'}}]\n")
FINISH = "- tools: [{name: finish, input: {summary: done}}]\n"


@pytest.fixture(name="sink")
def sink_fixture() -> Iterator[Sink]:
    sink = Sink()
    yield sink
    sink.server.shutdown()


def worker(project: Path, tmp_path: Path, turns: str) -> tuple[int, str]:
    """Exit code and the run's prompt."""
    script = tmp_path / "script.yaml"
    script.write_text(turns)
    result = run_sh("worker", "F-004", "--backend", "scripted", "--script", str(script),
                    cwd=project)
    run = sorted((project / ".harness" / "runs").iterdir())[-1]
    return result.returncode, (run / "prompt.md").read_text()


def plan_status(project: Path) -> dict:
    plan = json.loads((project / ".harness" / "features.json").read_text())
    return next(f for f in plan if f["id"] == "F-004")


def ledger(project: Path) -> list[dict]:
    path = project / ".harness" / "ledger" / "F-004.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_blocked_feature_tells_the_person_and_their_answer_reaches_the_next_prompt(
        project: Path, tmp_path: Path, sink: Sink) -> None:
    hooked = tmp_path / "hooked.jsonl"
    with (project / ".harness" / "config.yaml").open("a") as config:
        config.write(f"hooks: {{feature.blocked: 'cat >> {hooked}'}}\n"
                     f"notify: {{urls: ['{sink.url('json')}']}}\n")
    code, _ = worker(project, tmp_path, BLOCKED)
    assert code == 7 and plan_status(project)["status"] == "blocked"
    told = json.loads(hooked.read_text())
    assert told["event"] == "feature.blocked" and told["feature"] == "F-004"
    assert told["needs"] == "which database should the JSON go to?"
    (message,) = sink.json_messages()
    assert message["title"] == "[textstats] feature.blocked F-004"
    assert "Needs: which database should the JSON go to?" in message["message"]
    assert "run.sh answer F-004" in message["message"]

    result = run_sh("answer", "F-004", "use", "the", "sqlite", "file", "data/app.db",
                    cwd=project)
    assert result.returncode == 0, result.stderr
    assert plan_status(project)["status"] == "pending"
    record = ledger(project)[-1]
    assert record["verdict"] == "answer" and record["reason"] == "use the sqlite file data/app.db"
    assert "which database" in record["question"]

    code, prompt = worker(project, tmp_path, FINISH)
    assert code == 0
    assert "A person answered this feature's question" in prompt
    assert "answer: use the sqlite file data/app.db" in prompt


def test_answer_takes_only_a_blocked_feature(project: Path) -> None:
    result = run_sh("answer", "F-004", "yes", cwd=project)
    assert result.returncode == 2
    assert "F-004 is pending, not blocked" in result.stderr and "guide" in result.stderr


def test_guidance_is_in_each_next_prompt_until_removed(project: Path, tmp_path: Path) -> None:
    for text in ("keep the CLI flags backwards compatible", "use orjson for --json"):
        result = run_sh("guide", "F-004", text, cwd=project)
        assert result.returncode == 0, result.stderr
    listed = run_sh("guide", "F-004", cwd=project)
    assert "1. keep the CLI flags backwards compatible" in listed.stdout
    assert "2. use orjson for --json" in listed.stdout

    for _ in range(2):
        _, prompt = worker(project, tmp_path, "- tools: [{name: finish, input: {summary: x, "
                                              "status: gave_up}}]\n")
        assert "Guidance from a person for this feature" in prompt
        assert "2. use orjson for --json" in prompt
    run_id = sorted((project / ".harness" / "runs").iterdir())[-1].name
    shown = run_sh("show", run_id, cwd=project)
    assert "guidance on F-004 now: 1. keep the CLI flags backwards compatible" in shown.stdout

    assert run_sh("report", cwd=project).returncode == 0
    board = (project / ".harness" / "report" / "index.html").read_text()
    assert "<li>use orjson for --json</li>" in board

    removed = run_sh("guide", "F-004", "--remove", "1", cwd=project)
    assert removed.returncode == 0 and "keep the CLI flags" in removed.stdout
    _, prompt = worker(project, tmp_path, FINISH)
    assert "1. use orjson for --json" in prompt and "backwards compatible" not in prompt
    assert run_sh("guide", "F-004", "--remove", "all", cwd=project).returncode == 0
    _, prompt = worker(project, tmp_path, FINISH)
    assert "Guidance from a person" not in prompt
    kinds = [r["verdict"] for r in ledger(project)]
    assert kinds.count("guide") == 2 and kinds.count("unguide") == 2


def test_guide_refuses_a_feature_not_in_the_plan_and_a_bad_number(project: Path) -> None:
    missing = run_sh("guide", "F-999", "hello", cwd=project)
    assert missing.returncode == 2 and "no feature F-999" in missing.stderr
    bad = run_sh("guide", "F-004", "--remove", "3", cwd=project)
    assert bad.returncode == 2 and "--remove takes a number" in bad.stderr
    assert run_sh("guide", "F-004", "keep it small", cwd=project).returncode == 0
    for number in ("\u00b2", "1" * 5000, "\u0661"):  # a digit int() refuses; too many; not 0-9
        bad = run_sh("guide", "F-004", "--remove", number, cwd=project)
        assert bad.returncode == 2 and "--remove takes a number" in bad.stderr, bad.stderr[-300:]
    assert "1. keep it small" in run_sh("guide", "F-004", cwd=project).stdout


def test_an_answer_that_cannot_be_kept_leaves_the_feature_blocked(project: Path,
                                                                  tmp_path: Path) -> None:
    assert worker(project, tmp_path, BLOCKED)[0] == 7
    ledger = project / ".harness" / "ledger" / "F-004.jsonl"
    ledger.mkdir(parents=True)  # the ledger cannot be written
    refused = run_sh("answer", "F-004", "use postgres", cwd=project)
    assert refused.returncode == 2 and "F-004.jsonl" in refused.stderr
    assert plan_status(project)["status"] == "blocked"  # not pending with its answer lost
    ledger.rmdir()
    again = run_sh("answer", "F-004", "use postgres", cwd=project)
    assert again.returncode == 0, again.stderr
    assert plan_status(project)["status"] == "pending" and "use postgres" in ledger.read_text()


PERSON_BLOCKS = ("- tools: [{name: bash, input: {command: \"env -u HARNESS_RUN_ID -u FEATURE_ID "
                 "run.sh block --feature F-004 'wait: I am rewriting the spec'\"}}]\n")


@pytest.mark.parametrize("role, turns", [
    ("worker", PERSON_BLOCKS + FINISH),
    ("validator", PERSON_BLOCKS + "- tools: [{name: verdict, input: {verdict: fail, "
                                  "reason: no tests}}]\n" + FINISH)])
def test_a_feature_a_person_blocks_while_a_run_works_on_it_stays_blocked(
        project: Path, tmp_path: Path, role: str, turns: str) -> None:
    """`run.sh block --feature` during a run (here run by the scripted agent's shell, as
    the person would from theirs): the run's end set the feature in_progress (or pending),
    the block silently gone and the next run free to take it."""
    if role == "validator":
        plan = json.loads((project / ".harness" / "features.json").read_text())
        for f in plan:
            f.pop("verify", None)
            f["status"] = "in_progress" if f["id"] == "F-004" else f["status"]
        (project / ".harness" / "features.json").write_text(json.dumps(plan))
    script = tmp_path / "script.yaml"
    script.write_text(turns)
    result = run_sh(role, "F-004", "--backend", "scripted", "--script", str(script),
                    cwd=project)
    assert result.returncode == 7, result.stdout + result.stderr
    assert "F-004 is now blocked: wait: I am rewriting the spec" in result.stdout + result.stderr
    feature = plan_status(project)
    assert feature["status"] == "blocked"
    assert feature["blocked_reason"] == "wait: I am rewriting the spec"
    assert feature["attempts"] == (1 if role == "validator" else 0)  # the fail still counts
    nxt = run_sh("worker", "F-004", "--backend", "scripted", "--script", str(script),
                 cwd=project)
    assert nxt.returncode == 7 and "F-004 is blocked" in nxt.stderr


def test_thousands_of_guidance_keep_the_prompt_within_its_cap(project: Path) -> None:
    """Each guidance was given limit // count characters: 5,000 of them (a script guiding on
    every failure) put 5,000 lines of ' [...]' in every prompt, 70 KB past a 3,000 cap."""
    with (project / ".harness" / "ledger" / "F-004.jsonl").open("a") as ledger_file:
        for n in range(1, 5001):
            ledger_file.write(json.dumps({"time": "2026-01-01T00:00:00Z", "run_id": "guide",
                                          "verdict": "guide", "reason": f"guidance {n}"}) + "\n")
    assert run_sh("worker", "F-004", "--dry-run", cwd=project).returncode == 0
    prompt = next((project / ".harness" / "runs").glob("*/prompt.md")).read_text()
    block = prompt.split("## Guidance from a person")[1].split("\n## ")[0]
    assert len(block) < 3000 + 500
    assert "5000. guidance 5000" in block and "earlier guidance not shown" in block
    assert "guidance 1\n" not in block
