"""One line's worth of a run from its manifest: when, how long, tokens, cost, how it ended.

Shared by `run.sh runs`, `run.sh show` and the HTML report, so they agree on every figure.
"""

from __future__ import annotations

import calendar
import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

DONE_STATUSES = ("finished", "dry-run")
# a result as people read it: a finished worker run is not still running
RESULT_WORDS = {"in_progress": "awaits validation"}
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", re.ASCII)


def parse_time(stamp: Any) -> float | None:
    """Seconds since the epoch of a `YYYY-MM-DDTHH:MM:SSZ` stamp, or None."""
    text = str(stamp)
    if STAMP.fullmatch(text):
        # 10x faster than strptime, which was 2 s of a 10,000-run report (2 stamps a run)
        try:
            return datetime(int(text[:4]), int(text[5:7]), int(text[8:10]), int(text[11:13]),
                            int(text[14:16]), int(text[17:19]), tzinfo=timezone.utc).timestamp()
        except ValueError:
            pass  # strptime takes what datetime does not: a leap second
    try:
        return float(calendar.timegm(time.strptime(str(stamp), "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return None


@dataclass
class RunSummary:
    """The figures of one run; tokens keep cache reads and cache writes apart."""

    run_id: str
    role: str
    feature: str
    status: str
    started_at: str
    seconds: float | None
    turns: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float  # 0.0 where unknown: see cost_unknown
    exit_code: int | None
    result: str
    detail: str
    cost_unknown: bool = False  # the price table did not know the model
    reason: str = ""  # what the harness said of how it ended (a fail's reason, an error)

    @property
    def cost_text(self) -> str:
        return "unknown" if self.cost_unknown else f"${self.cost_usd:.4f}"

    @property
    def failed(self) -> bool:
        """Ended with a non-zero exit code, or never ended (interrupted, unreadable)."""
        if self.status not in DONE_STATUSES and self.status != "started":
            return True
        return self.exit_code not in (None, 0)

    @property
    def tokens(self) -> int:
        return (self.input_tokens + self.output_tokens + self.cache_read_tokens
                + self.cache_write_tokens)

    def as_dict(self) -> dict[str, Any]:
        return {**vars(self), "failed": self.failed, "tokens": self.tokens,
                "cost_text": self.cost_text}


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def summarize(manifest: dict[str, Any]) -> RunSummary:
    """The summary of a run from its manifest (missing fields count as zero or empty)."""
    usage = manifest.get("usage") if isinstance(manifest.get("usage"), dict) else {}
    start, end = parse_time(manifest.get("started_at")), parse_time(manifest.get("finished_at"))
    code = manifest.get("exit_code")
    result = str(manifest.get("result") or manifest.get("outcome") or manifest.get("status")
                 or "?")
    try:
        cost = float(manifest.get("cost_usd") or 0.0)
    except (TypeError, ValueError):
        cost = 0.0
    return RunSummary(
        run_id=str(manifest.get("run_id", "?")),
        role=str(manifest.get("role") or "?"),
        feature=str(manifest.get("feature") or "-"),
        status=str(manifest.get("status") or "?"),
        started_at=str(manifest.get("started_at") or ""),
        seconds=end - start if start is not None and end is not None else None,
        turns=_int(manifest.get("turns")),
        input_tokens=_int(usage.get("input_tokens")),
        output_tokens=_int(usage.get("output_tokens")),
        cache_read_tokens=_int(usage.get("cache_read_input_tokens")),
        cache_write_tokens=_int(usage.get("cache_creation_input_tokens")),
        cost_usd=cost,
        exit_code=code if isinstance(code, int) else None,
        result=RESULT_WORDS.get(result, result),
        detail=" ".join(str(manifest.get("error") or manifest.get("detail") or "").split()),
        cost_unknown=bool(manifest.get("cost_unknown")),
        reason=" ".join(str(manifest.get("message") or manifest.get("blocked_reason")
                            or manifest.get("error") or manifest.get("detail") or "").split()),
    )


def format_duration(seconds: float | None) -> str:
    """`42s`, `3m05s`, `2h07m`; `-` when unknown."""
    if seconds is None:
        return "-"
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def format_tokens(n: int) -> str:
    """`950`, `12.3k`, `4.1M`."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.1f}M"
