"""The context budget: old tool results cleared in batches before the conversation passes it,
a prompt the API still finds too long cleared harder once and then ended as capped; first on
literal conversations, then through the tool loop against the fake API's context limit."""

from __future__ import annotations

import json

import yaml
from fake_api import count_tokens, make_session, text, tool_use

from harness.backends.anthropic import AnthropicBackend
from harness.backends.context import STUB, Conversation, estimate_tokens
from harness.types import CAPPED, FINISHED, Caps, Usage

EDITOR = "str_replace_based_edit_tool"
BIG = "".join(f"line {i:03d} " + "x" * 70 + "\n" for i in range(150))  # 12,000 characters


def turn(convo: Conversation, n: int, name: str = "bash", chars: int = 4000) -> str:
    """Add turn `n`: one call of `name` whose result is `chars` long; its id."""
    call = tool_use(name, {"command": f"step {n}"}, id=f"t{n:03d}")
    convo.add_turn(n, [text(f"turn {n}"), call],
                   [{"type": "tool_result", "tool_use_id": call["id"], "content": "r" * chars,
                     "is_error": False}])
    return call["id"]


def results(convo: Conversation) -> dict[str, str]:
    return {b["tool_use_id"]: b["content"] for m in convo.messages[2::2] for b in m["content"]}


def test_under_the_budget_nothing_is_cleared():
    convo = Conversation("the prompt", budget=100_000)
    for n in range(1, 6):
        turn(convo, n)
    assert convo.fit() is None
    assert all(content == "r" * 4000 for content in results(convo).values())


def test_past_the_budget_the_oldest_results_go_in_one_batch_down_to_half():
    convo = Conversation("the prompt", budget=10_000)
    ids = [turn(convo, n) for n in range(1, 11)]  # about 10 x 1,000 tokens
    convo.sent(Usage(input_tokens=estimate_tokens(convo.messages)))
    turn(convo, 11)
    before = convo.size()
    assert before > 10_000
    cleared = convo.fit()
    assert cleared is not None and cleared.tokens_before == before
    assert cleared.ids == ids[:len(cleared.ids)]  # oldest first
    assert cleared.tokens_after <= 5_000 < cleared.tokens_after + 1_000  # a batch, not a bite
    assert convo.size() == cleared.tokens_after
    assert results(convo)["t001"] == STUB.format(name="bash", turn=1)
    assert results(convo)["t001"] == (
        "[output of bash at turn 1 cleared; run it again if you need it]")
    assert convo.fit() is None  # the next turns have room


def test_the_prompt_the_last_turns_and_decisions_are_kept_whatever_the_size():
    convo = Conversation("P" * 80_000, budget=2_000)
    turn(convo, 1, "note")
    turn(convo, 2, "verdict")
    turn(convo, 3, "plan")
    old = turn(convo, 4, EDITOR)
    kept = [turn(convo, n) for n in (5, 6, 7)]
    cleared = convo.fit()
    assert cleared is not None and cleared.ids == [old]
    assert results(convo)[old] == (
        f"[output of {EDITOR} at turn 4 cleared; run it again if you need it]")
    assert all(results(convo)[i] == "r" * 4000 for i in ["t001", "t002", "t003", *kept])
    assert convo.messages[0]["content"][0]["text"] == "P" * 80_000
    assert convo.fit() is None  # nothing left that may go: no empty clearing is recorded
    harder = convo.clear_harder()
    assert harder is not None and harder.ids == kept[:2]  # all but the newest turn


def test_cleared_results_keep_the_cached_prefix_and_one_moving_breakpoint():
    convo = Conversation("the prompt", budget=6_000)
    for n in range(1, 9):
        turn(convo, n)
    before = json.dumps(convo.messages)
    convo.fit()
    after = json.dumps(convo.messages)
    assert after.count('"cache_control"') == before.count('"cache_control"') == 2
    assert "cache_control" in convo.messages[0]["content"][0]
    assert "cache_control" in convo.messages[-1]["content"][-1]
    first_change = next(i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b)
    assert before[:first_change].endswith('"content": "')  # up to the first cleared result


# --- through the tool loop, against the fake API's context limit -------------------------


def run(api, tmp_path, **fields):
    events: list[dict] = []
    session = make_session(tmp_path, events=events, options={"base_url": api.base_url},
                           **fields)
    return AnthropicBackend().run("Build the feature.", session), events


def test_a_200_turn_run_with_large_outputs_stays_within_the_api_limit(api, tmp_path):
    api.context_limit, api.count_input = 60_000, True
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "big.txt").write_text(BIG)
    api.reply(tool_use("note", {"text": "TRICK: big.txt is read in full each time"}, id="n1"))
    for _ in range(198):
        api.reply(text("Reading it again."), tool_use(EDITOR, {"command": "view",
                                                               "path": "big.txt"}))
    api.reply(tool_use("finish", {"summary": "read it 198 times"}))
    outcome, events = run(api, tmp_path, caps=Caps(turns=250, context_tokens=48_000,
                                                   wall_seconds=None))
    assert (outcome.status, outcome.turns) == (FINISHED, 200)
    assert len(api.requests) == 200  # not one refused
    assert max(count_tokens(r) for r in api.requests) <= 48_000
    last = api.requests[-1]["messages"]
    answers = [b for m in last[2::2] for b in m["content"]]
    stubs = [b for b in answers if "cleared; run it again" in b["content"]]
    assert len(stubs) > 180
    assert stubs[0]["content"] == (
        f"[output of {EDITOR} at turn 2 cleared; run it again if you need it]")
    assert answers[0]["tool_use_id"] == "n1" and "cleared" not in answers[0]["content"]
    assert all(BIG.splitlines()[0] in b["content"] for b in answers[-3:])
    clearings = [e for e in events if e["event"] == "context_cleared"]
    assert 5 < len(clearings) < 50  # in batches, not a little every turn
    assert sum(e["cleared"] for e in clearings) == len(stubs)
    assert all(e["tokens_after"] <= 48_000 and e["why"] == "budget" for e in clearings)


def test_a_refused_size_is_cleared_harder_and_retried_once(api, tmp_path):
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "big.txt").write_text(BIG)
    for _ in range(4):
        api.reply(tool_use(EDITOR, {"command": "view", "path": "big.txt"}))
    api.error(400, "invalid_request_error", "prompt is too long: 14000 tokens > 12000 maximum")
    api.reply(text("done"))
    outcome, events = run(api, tmp_path, caps=Caps(context_tokens=None))
    assert (outcome.status, outcome.summary) == (FINISHED, "done")
    retry = api.requests[-1]["messages"]
    assert [("cleared" in b["content"]) for m in retry[2::2] for b in m["content"]] == [
        True, True, True, False]
    cleared = [e for e in events if e["event"] == "context_cleared"]
    assert len(cleared) == 1 and cleared[0]["why"].startswith("the API refused the size")


def test_a_size_still_refused_after_clearing_ends_the_run_as_capped(api, tmp_path):
    api.reply(tool_use("bash", {"command": "seq 1 2000"}))
    api.error(400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum")
    outcome, _ = run(api, tmp_path)  # nothing to clear: the one result is the newest
    assert outcome.status == CAPPED
    assert outcome.detail.startswith("context full: ") and "no old tool result" in outcome.detail
    api.reply(tool_use("bash", {"command": "true"}))
    api.reply(tool_use("bash", {"command": "true"}))
    api.error(413, "request_too_large", "Request exceeds the maximum allowed number of bytes",
              times=2)
    outcome, _ = run(api, tmp_path)
    assert outcome.status == CAPPED and "even with old tool results cleared" in outcome.detail


def test_a_worker_whose_prompt_is_too_long_exits_1_not_6(api, invoke, state):
    (state / "roles").mkdir()
    (state / "roles" / "worker.yaml").write_text(yaml.safe_dump({
        "template": "worker.md.j2", "backend": "anthropic", "model": "claude-test",
        "tools": ["bash", "finish"], "options": {"base_url": api.base_url, "max_retries": 0}}))
    api.context_limit = 100  # the prompt alone is past it
    result = invoke("worker", "F-004")
    assert result.exit_code == 1, result.output
    assert "context full" in result.output and "prompt is too long" in result.output
    assert len(api.requests) == 1  # no retry: there was nothing to clear
    feature = next(f for f in json.loads((state / "features.json").read_text())
                   if f["id"] == "F-004")
    assert feature["status"] == "in_progress"  # the validator judges it: the attempt counts
