"""What an agent CLI printed, read: Claude Code's JSON result and its stream-json events,
Codex's event stream, and the usage or rate limits either reports, with the time the limit
lifts. The event folds (`ClaudeEvents`, `CodexEvents`) give the turns and usage so far while
the CLI runs, and what a run stopped at its wall-clock cap had used.

Pure functions over text and parsed JSON; `harness.backends.command` runs the CLI and hands
its output here. A usage limit raises `UsageLimitReached`: the run did not fail, the
service refused it, and the message says when to try again when the CLI said so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from harness.backends.cli_errors import CREDIT, classify
from harness.backends.pricing import known_cost
from harness.errors import BackendError
from harness.types import CAPPED, FINISHED, GAVE_UP, Outcome, Usage


class UsageLimitReached(BackendError):
    """The CLI hit a usage or rate limit; `reset_at` is when it lifts (ISO-8601 UTC), if known."""

    def __init__(self, message: str, reset: datetime | None = None):
        utc = reset.astimezone(timezone.utc) if reset else None
        self.reset_at = utc.strftime("%Y-%m-%dT%H:%M:%SZ") if utc else None
        when = f"resets at {self.reset_at}" if utc else "no reset time given"
        super().__init__(f"agent CLI usage limit reached ({when}): {message.strip()[:300]}")


SYNTHETIC = "<synthetic>"  # the model Claude Code names in messages it made up itself
CLAUDE_CAPS = {"error_max_turns": "turn cap", "error_max_budget_usd": "dollar cap"}


def find_claude_result(text: str) -> dict[str, Any] | None:
    """The result object in Claude Code output: one object, a message array, or JSON lines."""
    for chunk in (text.strip(), *(ln for ln in reversed(text.splitlines()) if ln.strip())):
        try:
            data = json.loads(chunk)
        except ValueError:
            continue
        for item in reversed(data if isinstance(data, list) else [data]):
            if isinstance(item, dict) and (item.get("type") == "result" or "is_error" in item):
                return item
    return None


def claude_outcome(result: dict[str, Any], model: str, prices: dict) -> Outcome:
    """Map a Claude Code result object to an Outcome; a usage limit raises UsageLimitReached."""
    subtype, text = str(result.get("subtype") or ""), result.get("result")
    if text is None and isinstance(errors := result.get("errors"), list):
        text = "; ".join(map(str, errors))  # an error result says what went wrong here
    text = text if isinstance(text, str) else "" if text is None else json.dumps(text)
    raw = result.get("usage")
    usage = usage_from(raw if isinstance(raw, dict) else {})
    cost = result.get("total_cost_usd", result.get("cost_usd"))
    cost = float(cost) if isinstance(cost, int | float) else known_cost(usage, model, prices)
    if subtype in CLAUDE_CAPS:
        status, detail = CAPPED, CLAUDE_CAPS[subtype]
    elif subtype == "success" and result.get("is_error") is False:
        status, detail = FINISHED, ""
    else:
        api_status = result.get("api_error_status")
        raise_for_failure(text, api_status if isinstance(api_status, int) else None)
        status, detail = GAVE_UP, f"{subtype or 'error'}: {text[:300]}"
    turns = int(result.get("num_turns") or 0)
    return Outcome(status, summary=text, usage=usage, cost_usd=cost, turns=turns, detail=detail,
                   model=result_model(result))


def usage_from(raw: dict[str, Any]) -> Usage:
    """Our Usage from an Anthropic-shaped usage object (missing counts are 0)."""
    return Usage(**{k: int(raw.get(k) or 0) for k in Usage.__dataclass_fields__})


class ClaudeEvents:
    """Folds `claude -p --output-format stream-json --verbose` events: turns and usage so far.

    Each model call is an `assistant` event (one per content block, all with the message's id
    and usage), so a turn is a message id seen for the first time."""

    def __init__(self) -> None:
        self.by_message: dict[str, Usage] = {}
        self.model: str | None = None  # what served the first turn, as the message says

    def feed(self, event: dict[str, Any]) -> bool:
        """Take one event; True when it added a turn."""
        message = event.get("message")
        if event.get("type") != "assistant" or not isinstance(message, dict):
            return False
        if message.get("model") == SYNTHETIC:
            return False  # Claude Code's own words (an API error, a login prompt): no model call
        if not self.by_message:
            self.model = _text(message.get("model"))
        key = str(message.get("id") or len(self.by_message))
        raw = message.get("usage")
        new = key not in self.by_message
        self.by_message[key] = usage_from(raw if isinstance(raw, dict) else {})
        return new

    @property
    def turns(self) -> int:
        return len(self.by_message)

    @property
    def usage(self) -> Usage:
        total = Usage()
        for usage in self.by_message.values():
            total.add(usage)
        return total


class CodexEvents:
    """Folds `codex exec --json` events: usage summed over turns, last message, failure."""

    def __init__(self) -> None:
        self.usage, self.turns, self.summary = Usage(), 0, ""
        self.failure: str | None = None  # a turn.failed, or an error no turn.completed outlived
        self.thread: str | None = None  # the session id, which names Codex's own record of it

    def feed(self, event: dict[str, Any]) -> bool:
        """Take one event; True when it ended a turn (and so added usage)."""
        kind = event.get("type")
        if kind == "thread.started":
            self.thread = _text(event.get("thread_id"))
        if kind in ("turn.completed", "turn.failed") and isinstance(event.get("usage"), dict):
            raw = event["usage"]
            cached = int(raw.get("cached_input_tokens") or 0)
            written = int(raw.get("cache_write_input_tokens") or 0)
            # Codex counts cached and cache-written tokens inside input_tokens; Usage keeps
            # them apart, so each is priced at its own rate.
            uncached = int(raw.get("input_tokens") or 0) - cached - written
            out = int(raw.get("output_tokens") or 0)
            self.usage.add(Usage(uncached, out, cache_creation_input_tokens=written,
                                 cache_read_input_tokens=cached))
        if kind == "turn.completed":
            self.turns += 1
            self.failure = None
        elif kind == "turn.failed":
            error = event.get("error")
            message = error.get("message") if isinstance(error, dict) else error
            self.failure = str(message or "turn failed")
        elif kind == "error":
            self.failure = str(event.get("message") or "error")
        elif kind == "item.completed" and isinstance(item := event.get("item"), dict):
            if item.get("type") == "agent_message":
                self.summary = str(item.get("text") or "")
        return kind in ("turn.completed", "turn.failed")

    def outcome(self, model: str, prices: dict) -> Outcome | None:
        """The run's Outcome, or None when no turn ended; a usage limit raises."""
        if self.failure is None and not self.turns:
            return None
        if self.failure is not None:
            raise_for_failure(self.failure)
        return Outcome(
            FINISHED if self.failure is None else GAVE_UP,
            summary=self.summary,
            usage=self.usage,
            cost_usd=known_cost(self.usage, model, prices),
            turns=self.turns,
            detail=(self.failure or "")[:500],
        )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def result_model(result: dict[str, Any]) -> str | None:
    """The model a Claude Code result says did the most work (its `modelUsage`), if any."""
    used = result.get("modelUsage")
    if not isinstance(used, dict) or not used:
        return None
    return max(used, key=lambda name: (used[name] or {}).get("outputTokens", 0)
               if isinstance(used[name], dict) else 0)


def codex_model(thread: str | None, codex_home: Path) -> str | None:
    """The model Codex says served session `thread`: the last `turn_context` of its rollout
    file (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*-<thread>.jsonl`); None if not found."""
    if not thread:
        return None
    model = None
    for path in sorted((codex_home / "sessions").glob(f"*/*/*/rollout-*{thread}.jsonl"))[-1:]:
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return None
        for line in lines:
            try:
                item = json.loads(line)
            except ValueError:
                continue
            payload = item.get("payload") if isinstance(item, dict) else None
            if item.get("type") == "turn_context" and isinstance(payload, dict):
                model = _text(payload.get("model")) or model
    return model


def parse_codex(
    lines: Iterable[str], model: str = "", prices: dict | None = None
) -> Outcome | None:
    """The Outcome of `codex exec --json` output lines, or None when no turn ended."""
    events = CodexEvents()
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.feed(event)
    return events.outcome(model, prices or {})


LIMIT_TEXT = re.compile(
    r"usage limit|limit reached|hit your (?:\w+ )?limit|out of extra usage|rate.?limit"
    r"|quota exceeded|too many requests|exhausted your (?:\w+ )?quota|resource_exhausted",
    re.I,
)
MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_EPOCH = re.compile(r"\|\s*(\d{10})\b|\"?resets_at\"?\s*[:=]\s*(\d{10})\b")
_CLOCK = re.compile(  # "resets 6:30pm (Asia/Jerusalem)", "try again at Apr 28th, 2026 10:03 PM"
    r"(?:resets?|try again)\s+(?:at\s+)?"
    r"(?:(?P<mon>[a-z]{3})[a-z]*\.?\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+"
    r"(?:(?P<year>\d{4})\s+)?(?:at\s+)?)?"
    r"(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*(?P<ap>[ap])\.?m\b\.?(?:\s*\((?P<tz>[^)]+)\))?",
    re.I,
)
_RELATIVE = re.compile(  # Gemini: "Please retry in 37.5s", "Your quota will reset after 2h44m"
    r"(?:try again in|retry in|reset after)((?:[\s,]*\d+(?:\.\d+)?\s*(?:day|hour|hr|min|sec"
    r"|[hms]\b|[hm](?=\d))\w*)+)", re.I)


def raise_for_failure(message: str, status: int | None = None) -> None:
    """Raise what a CLI's failure message stands for: a usage limit (with its reset time),
    a service error (exit 6) or something for the person to fix (exit 2); return when it is
    none of these."""
    check_usage_limit(message)
    if (error := classify(message, status)) is not None:
        raise error


def check_usage_limit(
    message: str, now: datetime | None = None, local: tzinfo | None = None
) -> None:
    """Raise UsageLimitReached when `message` reports a usage or rate limit (not an account
    out of credit: no wait lifts that)."""
    if LIMIT_TEXT.search(message) and not CREDIT.search(message):
        try:
            reset = reset_time(message, now, local)
        except (ValueError, OverflowError):  # a date no calendar has: the limit still holds
            reset = None
        raise UsageLimitReached(message, reset)


def reset_time(
    message: str, now: datetime | None = None, local: tzinfo | None = None
) -> datetime | None:
    """When a reported limit lifts, from the shapes Claude Code and Codex print; else None."""
    now = now or datetime.now(timezone.utc)
    local = local or datetime.now().astimezone().tzinfo  # Codex prints the machine's local time
    if m := _EPOCH.search(message):
        return datetime.fromtimestamp(int(m[1] or m[2]), timezone.utc)
    if m := _CLOCK.search(message):
        try:
            tz = ZoneInfo(m["tz"].strip()) if m["tz"] else local
        except (ZoneInfoNotFoundError, ValueError):
            tz = local
        hour, minute = int(m["h"]) % 12 + (12 if m["ap"] in "pP" else 0), int(m["m"] or 0)
        today = now.astimezone(tz)
        if m["mon"] and m["mon"].lower() in MONTHS:
            month, year = MONTHS.index(m["mon"].lower()) + 1, int(m["year"] or today.year)
            when = datetime(year, month, int(m["day"]), hour, minute, tzinfo=tz)
            if not m["year"] and when < now - timedelta(days=1):
                when = when.replace(year=year + 1)
            return when
        when = today.replace(hour=hour, minute=minute, second=0, microsecond=0)
        return when if when > now else when + timedelta(days=1)
    if m := _RELATIVE.search(message):
        units = {"d": "days", "h": "hours", "m": "minutes", "s": "seconds"}
        parts = re.findall(r"(\d+)(?:\.\d+)?\s*([dhms])", m[1].lower())
        return now + timedelta(**{units[u]: int(n) for n, u in parts})
    return None
