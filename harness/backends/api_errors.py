"""What the Messages API's failures mean for a run: an outage, an overload or a rate limit
is a BackendError (exit 6, a loop waits), with the time a limit lifts when the API told; a
refused key, an unknown model or a refused request is the person's to fix (exit 2), naming
the variable or the role's file; and the one failure that is the run's own, a prompt the API
finds too long (`is_prompt_too_long`: the tool loop's PromptTooLong).
"""

from __future__ import annotations

import email.utils
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import anthropic

from harness.errors import BackendError, UsageError
from harness.state.envfile import user_env_file

KEY, MODEL, REQUEST = "key", "model", "request"  # a refusal the person fixes (exit 2)
ERRORS = (  # the first match says what failed; a refusal's kind says what to fix
    (anthropic.AuthenticationError, "the Anthropic API refused the key in {var} (401)", KEY),
    (anthropic.PermissionDeniedError, "the key in {var} may not do this (403)", KEY),
    (anthropic.NotFoundError, "the Anthropic API does not know model {model!r} (404)", MODEL),
    (anthropic.RateLimitError, "rate limited by the Anthropic API (429) after {retries} retries",
     None),
    (anthropic.InternalServerError,
     "the Anthropic API is overloaded or failing ({status}) after {retries} retries", None),
    (anthropic.APITimeoutError, "the Anthropic API did not answer in time after {retries} "
     "retries", None),
    (anthropic.APIConnectionError,
     "cannot reach the Anthropic API at {url} after {retries} retries", None),
    (anthropic.APIStatusError, "the Anthropic API refused the request ({status})", REQUEST),
    (anthropic.APIError, "unexpected answer from the Anthropic API", None),
)


@dataclass(frozen=True)
class Where:
    """What a fix names: the key's variable, the model, the state and the role's file."""

    var: str
    model: str
    state: Path
    role_file: Path


def role_file(state: Path, role: str) -> Path:
    """The mission's file for a role's settings (keys there override the shipped file's)."""
    return state / "roles" / f"{role}.yaml"


def key_fix(var: str, state: Path) -> str:
    """Where to put a key the harness reads, for a shell and for cron alike."""
    return (f"put a valid key in {var}: the line `{var}=...` in {state / 'env'} or "
            f"{user_env_file()} (chmod 600; cron reads these), or export it")


FIXES = {
    KEY: lambda w, url: key_fix(w.var, w.state),
    MODEL: lambda w, url: (f"set `model` in {w.role_file} to a model the API serves (e.g. "
                           f"claude-sonnet-4-5), or check the API's address ({url})"),
    REQUEST: lambda w, url: f"check the role's model and caps in {w.role_file}",
}


class APIFailed(BackendError):
    """The Messages API failed after retries; `reset_at` is when a limit lifts, if told."""

    def __init__(self, message: str, reset_at: str | None = None):
        super().__init__(message + (f"; the limit resets at {reset_at}" if reset_at else ""))
        self.reset_at = reset_at


class APIRefused(UsageError):
    """The Messages API refused the key, the model or the request: the person's to fix
    (exit 2), never an outage for a loop to wait out."""

    def __init__(self, said: str, fix: str):
        super().__init__(f"{said}: {fix}")
        self.said, self.fix = said, fix


def is_prompt_too_long(e: anthropic.APIError) -> bool:
    """A 400 "prompt is too long" (past the model's window), or a 413 (past the size limit)."""
    if isinstance(e, anthropic.APIStatusError) and e.status_code == 413:
        return True
    return (isinstance(e, anthropic.BadRequestError)
            and "prompt is too long" in str(e).lower())


def backend_error(e: anthropic.APIError, retries: int, url: Any,
                  where: Where) -> APIFailed | APIRefused:
    """What the failure means: an APIFailed (exit 6) saying what failed, or an APIRefused
    (exit 2) naming what to fix and where."""
    what, kind = next((text, kind) for cls, text, kind in ERRORS if isinstance(e, cls))
    what = what.format(retries=retries, url=url, status=getattr(e, "status_code", "?"),
                       var=where.var, model=where.model)
    said = f"{what} ({getattr(e, 'api_message', None) or e.message})"
    if kind is not None:
        return APIRefused(said, FIXES[kind](where, url))
    response = getattr(e, "response", None)
    return APIFailed(said, reset_time(response.headers) if response is not None else None)


def reset_time(headers: Any, now: datetime | None = None) -> str | None:
    """When a limit lifts (ISO-8601 UTC), from `retry-after` or the latest ratelimit reset."""
    now = now or datetime.now(timezone.utc)
    try:
        if retry_after := headers.get("retry-after"):
            try:
                when = now + timedelta(seconds=float(retry_after))
            except ValueError:
                when = email.utils.parsedate_to_datetime(retry_after)
        else:
            when = max((datetime.fromisoformat(value.replace("Z", "+00:00"))
                        for name, value in headers.items()
                        if re.fullmatch(r"anthropic-ratelimit-.+-reset", name.lower())),
                       default=None)
    except (TypeError, ValueError, OverflowError):  # a malformed header must not hide the error
        return None
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if when else None


def retry_after(headers: Any) -> float | None:
    """The seconds the API asks a client to wait before it tries again, as the SDK reads
    them (`retry-after-ms`, else `retry-after` in seconds or as a date); None: not said."""
    try:
        if ms := headers.get("retry-after-ms"):
            return float(ms) / 1000
        if said := headers.get("retry-after"):
            try:
                return float(said)
            except ValueError:
                when = email.utils.parsedate_to_datetime(said)
                return (when - datetime.now(timezone.utc)).total_seconds()
    except (TypeError, ValueError, OverflowError):
        return None
    return None
