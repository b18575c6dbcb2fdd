"""The parsers of what agent CLIs print, on literal inputs: Claude Code's result object,
Codex's JSONL events, and usage limits with their reset times."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pytest

from harness.backends.cli_results import (
    ClaudeEvents,
    CodexEvents,
    UsageLimitReached,
    check_usage_limit,
    claude_outcome,
    find_claude_result,
    parse_codex,
    reset_time,
)
from harness.types import CAPPED, FINISHED, GAVE_UP, Usage

NOW = datetime(2026, 4, 24, 10, 0, tzinfo=timezone.utc)
PRICES = {"m": {"input_tokens": 3.0, "output_tokens": 15.0, "cache_read_input_tokens": 0.3}}


# --- Claude Code stream-json events ----------------------------------------------------


def assistant(message_id: str, output: int, block: dict) -> dict:
    return {"type": "assistant", "session_id": "s", "message": {
        "id": message_id, "role": "assistant", "content": [block],
        "usage": {"input_tokens": 5, "output_tokens": output, "cache_read_input_tokens": 100}}}


def test_claude_events_count_a_turn_per_message_and_its_usage_once():
    fold = ClaudeEvents()
    fed = [fold.feed(event) for event in [
        {"type": "system", "subtype": "init", "session_id": "s"},
        assistant("msg_1", 10, {"type": "text", "text": "Listing."}),
        assistant("msg_1", 12, {"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}),
        {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1"}]}},
        assistant("msg_2", 40, {"type": "text", "text": "Done."}),
        claude_result(),
    ]]
    assert fed == [False, True, False, False, True, False]
    assert fold.turns == 2
    assert fold.usage == Usage(input_tokens=10, output_tokens=52, cache_read_input_tokens=200)


def test_codex_events_say_when_a_turn_ended():
    fold = CodexEvents()
    assert fold.feed({"type": "turn.started"}) is False
    assert fold.feed({"type": "turn.completed", "usage": {"input_tokens": 9}}) is True
    assert (fold.turns, fold.usage.input_tokens) == (1, 9)


# --- Claude Code result objects --------------------------------------------------------


def claude_result(**fields) -> dict:
    base = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "num_turns": 4,
        "result": "Done.",
        "session_id": "abc",
        "total_cost_usd": 0.5,
        "usage": {"input_tokens": 10, "output_tokens": 20, "cache_read_input_tokens": 30},
    }
    return base | fields


def test_claude_success():
    out = claude_outcome(claude_result(), "m", PRICES)
    assert (out.status, out.summary, out.turns, out.cost_usd) == (FINISHED, "Done.", 4, 0.5)
    assert (out.usage.input_tokens, out.usage.output_tokens) == (10, 20)
    assert out.usage.cache_read_input_tokens == 30 and out.usage.cache_creation_input_tokens == 0


def test_claude_is_error_or_error_subtype_gives_up():
    out = claude_outcome(claude_result(is_error=True, result="boom"), "m", PRICES)
    assert out.status == GAVE_UP and "boom" in out.detail
    out = claude_outcome(claude_result(subtype="error_during_execution", is_error=False), "m", {})
    assert out.status == GAVE_UP and out.detail.startswith("error_during_execution")


def test_claude_caps_map_to_capped():
    out = claude_outcome(claude_result(subtype="error_max_turns", is_error=True), "m", PRICES)
    assert (out.status, out.detail) == (CAPPED, "turn cap")


def test_claude_cost_falls_back_to_price_table():
    out = claude_outcome(claude_result(total_cost_usd=None), "m", PRICES)
    assert out.cost_usd == pytest.approx((10 * 3.0 + 20 * 15.0 + 30 * 0.3) / 1e6)


def test_claude_success_text_mentioning_limits_is_still_success():
    out = claude_outcome(
        claude_result(result="Added a rate limit; usage limit reached tests"), "m", {}
    )
    assert out.status == FINISHED


def test_claude_usage_limit_raises_with_reset_time():
    result = claude_result(is_error=True, result="Claude AI usage limit reached|1762952400")
    with pytest.raises(UsageLimitReached) as caught:
        claude_outcome(result, "m", PRICES)
    assert caught.value.reset_at == "2025-11-12T13:00:00Z"
    assert "2025-11-12T13:00:00Z" in str(caught.value)
    assert caught.value.exit_code == 6


def test_find_claude_result_in_object_array_or_lines():
    obj = claude_result()
    assert find_claude_result(json.dumps(obj)) == obj
    assert find_claude_result(json.dumps([{"type": "system"}, obj])) == obj
    stream = "\n".join([json.dumps({"type": "system", "subtype": "init"}), json.dumps(obj), ""])
    assert find_claude_result(stream) == obj
    assert find_claude_result(json.dumps(obj, indent=2)) == obj
    assert find_claude_result("Error: Invalid API key") is None
    assert find_claude_result('{"hello": 1}') is None


# --- Codex JSONL events ----------------------------------------------------------------


def codex_lines(*events: dict) -> list[str]:
    return [json.dumps({"type": "thread.started", "thread_id": "t"}), *map(json.dumps, events)]


def test_codex_two_turns_sum_usage_and_keep_last_message():
    lines = codex_lines(
        {"type": "item.completed", "item": {"id": "i0", "type": "agent_message", "text": "one"}},
        {"type": "turn.completed", "usage": {"input_tokens": 100, "cached_input_tokens": 60,
                                            "output_tokens": 7}},
        {"type": "item.completed", "item": {"id": "i1", "type": "agent_message", "text": "two"}},
        {"type": "turn.completed", "usage": {"input_tokens": 50, "cached_input_tokens": 0,
                                            "output_tokens": 3}},
    )  # fmt: skip
    out = parse_codex(lines, "m", PRICES)
    assert (out.status, out.summary, out.turns) == (FINISHED, "two", 2)
    assert (out.usage.input_tokens, out.usage.cache_read_input_tokens) == (90, 60)
    assert out.usage.output_tokens == 10
    assert out.cost_usd == pytest.approx((90 * 3.0 + 10 * 15.0 + 60 * 0.3) / 1e6)


def test_codex_turn_failed_gives_up_with_message():
    out = parse_codex(codex_lines({"type": "turn.failed", "error": {"message": "model gone"}}))
    assert (out.status, out.detail) == (GAVE_UP, "model gone")


def test_codex_error_outlived_by_a_completed_turn_is_not_a_failure():
    lines = codex_lines(
        {"type": "error", "message": "Reconnecting... 1/5"},
        {"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}},
    )
    assert parse_codex(lines).status == FINISHED
    assert parse_codex(codex_lines({"type": "error", "message": "fatal"})).status == GAVE_UP


def test_codex_turn_failed_with_a_plain_string_error():
    out = parse_codex(codex_lines({"type": "turn.failed", "error": "sandbox denied"}))
    assert (out.status, out.detail) == (GAVE_UP, "sandbox denied")


def test_codex_without_a_turn_end_has_no_outcome():
    assert parse_codex(codex_lines({"type": "turn.started"}, "not json")) is None


def test_codex_usage_limit_raises():
    message = "You've hit your usage limit. Try again at 3:28 PM."
    with pytest.raises(UsageLimitReached):
        parse_codex(codex_lines({"type": "turn.failed", "error": {"message": message}}))


# --- usage limits and reset times --------------------------------------------------------

BERLIN = ZoneInfo("Europe/Berlin")  # 2026-04-24 is summer time: UTC+2


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("Claude AI usage limit reached|1762952400", "2025-11-12T13:00:00Z"),
        ("You've hit your limit · resets 6:30pm (Asia/Jerusalem)", "2026-04-24T15:30:00Z"),
        ("You've hit your session limit · resets 3am (Asia/Tokyo)", "2026-04-24T18:00:00Z"),
        ("Claude usage limit reached. Your limit will reset at 9am (America/Chicago).",
         "2026-04-24T14:00:00Z"),
        ("5-hour limit reached ∙ resets 1pm", "2026-04-24T11:00:00Z"),
        ("... purchase more credits or try again at 3:28 PM.", "2026-04-24T13:28:00Z"),
        ("... or try again at 9:15 AM.", "2026-04-25T07:15:00Z"),
        ("... purchase more credits or try again at Apr 28th, 2026 10:03 PM.",
         "2026-04-28T20:03:00Z"),
        ("You've hit your usage limit. ... try again in 3 days 6 hours 57 minutes.",
         "2026-04-27T16:57:00Z"),
        ('{"type":"usage_limit_reached","resets_at":1777936568,"resets_in_seconds":13872}',
         "2026-05-04T23:16:08Z"),
    ],
)  # fmt: skip
def test_reset_time_shapes(message, expected):
    when = reset_time(message, NOW, BERLIN)
    assert when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") == expected


def test_limits_without_reset_time_still_raise_and_other_errors_do_not():
    assert reset_time("API Error: Rate limit reached", NOW, BERLIN) is None
    with pytest.raises(UsageLimitReached) as caught:
        check_usage_limit("API Error: Rate limit reached", NOW, BERLIN)
    assert caught.value.reset_at is None and "no reset time" in str(caught.value)
    check_usage_limit("unexpected status 400 Bad Request", NOW, BERLIN)
