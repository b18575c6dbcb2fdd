"""How long `run.sh loop` waits, and until when it runs: pure functions over times."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from harness.errors import UsageError

RESET_MARGIN = 5.0  # seconds past a recorded reset time, so the limit has surely lifted


def backoff(failures: int, first: float, cap: float) -> float:
    """The wait after `failures` waits in a row: `first`, doubled each time, at most `cap`."""
    return min(cap, first * 2 ** max(failures - 1, 0))


def until_reset(reset_at: str | None, now: datetime) -> float | None:
    """Seconds until a recorded reset time (ISO-8601 UTC) and a margin; None if not known."""
    if not reset_at:
        return None
    try:
        reset = datetime.fromisoformat(reset_at.replace("Z", "+00:00"))
    except ValueError:
        return None
    if reset.tzinfo is None:
        reset = reset.replace(tzinfo=timezone.utc)
    return max((reset - now).total_seconds(), 0.0) + RESET_MARGIN


def parse_until(text: str, now: datetime) -> datetime:
    """`--until`: HH:MM (local time, the next one to come) or an ISO-8601 date and time (local
    unless it names its zone); `now` is aware. UsageError names the forms."""
    clock = re.fullmatch(r"(\d{1,2}):(\d{2})", text.strip())
    if clock:
        hour, minute = int(clock[1]), int(clock[2])
        if hour > 23 or minute > 59:
            raise UsageError(f"--until {text}: not a time of day (HH:MM, 00:00 to 23:59)")
        local = now.astimezone()
        when = local.replace(hour=hour, minute=minute, second=0, microsecond=0)
        return when if when > local else when + timedelta(days=1)
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"--until {text!r}: give HH:MM or an ISO-8601 time such as "
                         "2026-05-01T06:30 (or ...T06:30Z for UTC)") from None
    return when if when.tzinfo else when.astimezone()


def say_duration(seconds: float) -> str:
    """`45s`, `12m05s`, `3h02m`."""
    total = int(round(seconds))
    if total < 60:
        return f"{total}s"
    if total < 3600:
        return f"{total // 60}m{total % 60:02d}s"
    return f"{total // 3600}h{total % 3600 // 60:02d}m"
