"""What the Messages API's failures mean for a run: a BackendError (exit 6) that says what
failed and what to do, with the time a limit lifts when the API told; and the one failure
that is the run's own, a prompt the API finds too long (`PromptTooLong`).
"""

from __future__ import annotations

import email.utils
import re
from datetime import datetime, timedelta, timezone
from typing import Any

import anthropic

from harness.errors import BackendError

ERRORS = (  # the first match says what failed and what to do
    (anthropic.AuthenticationError,
     "the Anthropic API rejected the API key (401): set ANTHROPIC_API_KEY to a valid key"),
    (anthropic.PermissionDeniedError, "the API key may not do this (403): check its access"),
    (anthropic.NotFoundError, "not found (404): check the role's model name"),
    (anthropic.RateLimitError, "rate limited by the Anthropic API (429) after {retries} retries"),
    (anthropic.InternalServerError,
     "the Anthropic API is overloaded or failing ({status}) after {retries} retries"),
    (anthropic.APITimeoutError, "the Anthropic API did not answer in time after {retries} retries"),
    (anthropic.APIConnectionError,
     "cannot reach the Anthropic API at {url} after {retries} retries"),
    (anthropic.APIStatusError,
     "the Anthropic API rejected the request ({status}): check the role's model, caps and prompt"),
    (anthropic.APIError, "unexpected answer from the Anthropic API"),
)


class APIFailed(BackendError):
    """The Messages API failed after retries; `reset_at` is when a limit lifts, if told."""

    def __init__(self, message: str, reset_at: str | None = None):
        super().__init__(message + (f"; the limit resets at {reset_at}" if reset_at else ""))
        self.reset_at = reset_at


class PromptTooLong(Exception):
    """The API refused the request's size: the conversation, not the service, is at fault."""


def is_prompt_too_long(e: anthropic.APIError) -> bool:
    """A 400 "prompt is too long" (past the model's window), or a 413 (past the size limit)."""
    if isinstance(e, anthropic.APIStatusError) and e.status_code == 413:
        return True
    return (isinstance(e, anthropic.BadRequestError)
            and "prompt is too long" in str(e).lower())


def backend_error(e: anthropic.APIError, retries: int, url: Any) -> APIFailed:
    """A BackendError that says what failed and what to do about it."""
    what = next(text for kind, text in ERRORS if isinstance(e, kind))
    what = what.format(retries=retries, url=url, status=getattr(e, "status_code", "?"))
    response = getattr(e, "response", None)
    return APIFailed(f"{what} ({getattr(e, 'api_message', None) or e.message})",
                     reset_time(response.headers) if response is not None else None)


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
    except (TypeError, ValueError):  # a malformed header must not hide the real error
        return None
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if when else None
