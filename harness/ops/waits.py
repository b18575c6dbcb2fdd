"""What `run.sh loop` makes of a round's exit codes, how long it waits and until when it
runs: pure functions over codes and times."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from harness.errors import BLOCKED, BUSY, DONE, NOTHING_TO_DO, TASK_FAILED, UsageError
from harness.state.run_summary import format_duration

RESET_MARGIN = 5.0  # seconds past a recorded reset time, so the limit has surely lifted
MAX_RESET_WAIT = 7 * 24 * 3600.0  # the longest wait for a reset time (a week's usage limit)
RAN = (DONE, TASK_FAILED, BLOCKED)  # a run happened
KNOWN = (*RAN, BUSY, NOTHING_TO_DO)  # the codes that need no wait for a failure
RAN_KIND, NOTHING_KIND, FAILED_KIND, BUSY_KIND = "ran", "nothing", "failed", "busy"


def classify(codes: dict[str, int]) -> str:
    """What a round's exit codes ask of the loop: wait after a failure (6, a code no run
    gives, or a worker that failed yet left nothing to validate: a crash), go on after a
    run, end when neither role had anything to do, else wait while runs hold the locks."""
    worker, validator = codes.get("worker"), codes.get("validator")
    if any(c not in KNOWN for c in codes.values()) or (worker, validator) == (
            TASK_FAILED, NOTHING_TO_DO):
        return FAILED_KIND
    if any(c in RAN for c in codes.values()):
        return RAN_KIND
    if (worker, validator) == (NOTHING_TO_DO, NOTHING_TO_DO):
        return NOTHING_KIND
    return BUSY_KIND


def backoff(failures: int, first: float, cap: float) -> float:
    """The wait after `failures` waits in a row: `first`, doubled each time, at most `cap`."""
    return min(cap, first * 2 ** max(failures - 1, 0))


def until_reset(reset_at: str | None, now: datetime) -> float | None:
    """Seconds until a recorded reset time (ISO-8601 UTC) and a margin, at most a week (a
    server's clock or header may be far off); None if not known."""
    if not reset_at:
        return None
    try:
        reset = datetime.fromisoformat(reset_at.replace("Z", "+00:00"))
    except ValueError:
        return None
    if reset.tzinfo is None:
        reset = reset.replace(tzinfo=timezone.utc)
    return min(max((reset - now).total_seconds(), 0.0) + RESET_MARGIN, MAX_RESET_WAIT)


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


say_duration = format_duration  # `45s`, `12m05s`, `3h02m`
