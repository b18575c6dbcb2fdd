"""An agent CLI's retries, as a person watching the run should see them: Claude Code's
`api_retry` events (stream-json) and Codex's `Reconnecting... n/m (why)` errors (--json),
each turned into one line such as `retrying 3/10 in 4.2 s: cannot connect, http://...`.
Without these lines a CLI retrying an unreachable API is silent for minutes before exit 6.
"""

from __future__ import annotations

import re
from typing import Any

_CODEX = re.compile(r"^Reconnecting\.*\s*(\d+)/(\d+)\s*(?:\((.*)\))?\s*$", re.S)


def retry_notice(event: dict[str, Any], endpoint: str = "") -> str | None:
    """The line for a CLI event that says it is retrying; None for every other event."""
    if event.get("type") == "system" and event.get("subtype") == "api_retry":
        return _claude(event, endpoint)
    if event.get("type") == "error" and isinstance(event.get("message"), str):
        m = _CODEX.match(event["message"].strip())
        if m:
            return f"retrying {m[1]}/{m[2]}: {' '.join((m[3] or 'reconnecting').split())}"
    return None


def _claude(event: dict[str, Any], endpoint: str) -> str:
    status, error = event.get("error_status"), str(event.get("error") or "")
    if status:
        why = f"{error or 'error'} (HTTP {status})"
    elif error in ("", "unknown"):
        why = "cannot connect (no HTTP answer)"
    else:
        why = error
    delay = event.get("retry_delay_ms")
    wait = f" in {delay / 1000:.1f} s" if isinstance(delay, int | float) else ""
    where = f", {endpoint}" if endpoint else ""
    attempt = f"{event.get('attempt', '?')}/{event.get('max_retries', '?')}"
    return f"retrying {attempt}{wait}: {why}{where}"
