"""What a Chat Completions API's failures mean for a run, by the exit-code contract.

A refused key (401, 403) or a model or endpoint the server does not have (404) is the
user's to fix: a UsageError (exit 2) that names the fix. A rate limit (429), a failing
server (5xx), a timeout or no connection, after the SDK's retries, is a BackendError
(exit 6) with the time the limit lifts when the server said (`Retry-After`, or OpenAI's
`x-ratelimit-reset-*`). A request too long for the model's context is the run's own
(`is_context_too_long`): the loop clears old tool results, and ends the run as capped when
that does not help.
"""

from __future__ import annotations

import email.utils
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import openai

from harness.errors import BackendError, HarnessError, UsageError
from harness.state.envfile import user_env_file

TOO_LONG = re.compile(r"context.length|context.size|context.window|maximum context|"
                      r"too many tokens|prompt is too long|reduce the length", re.IGNORECASE)
UNKNOWN_MODEL = re.compile(r"model\b.*\b(not found|does not exist|unknown|invalid|not supported)"
                           r"|(unknown|invalid|no such|not a valid) model", re.IGNORECASE)
NO_TOOLS = re.compile(r"does not support tools|tools param requires|unsupported param: tools"
                      r"|tool choice requires|enable-auto-tool-choice", re.IGNORECASE)
TOKEN_FIELD = re.compile(r"max_(completion_)?tokens")  # a 400 naming the field of the cap
DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
RETRY_FAILURES = (  # the first match says what failed
    (openai.RateLimitError, "rate limited by {api} (429) after {retries} retries"),
    (openai.InternalServerError, "{api} is failing ({status}) after {retries} retries"),
    (openai.APITimeoutError, "{api} did not answer in time after {retries} retries"),
    (openai.APIConnectionError, "cannot reach {api} after {retries} retries"),
    (openai.APIStatusError,
     "{api} rejected the request ({status}): check the role's model, caps and options"),
    (openai.APIError, "unexpected answer from {api}"),
)


class APIFailed(BackendError):
    """The API failed after retries; `reset_at` is when a limit lifts, if told."""

    def __init__(self, message: str, reset_at: str | None = None):
        super().__init__(message + (f"; the limit resets at {reset_at}" if reset_at else ""))
        self.reset_at = reset_at


def key_fix(state: Path) -> str:
    """Where the key goes."""
    return (f"put OPENAI_API_KEY=... in {state / 'env'} or {user_env_file()} (chmod 600), "
            "or export it")


def is_context_too_long(e: openai.APIError) -> bool:
    """A 413, or a 400 that says the request passes the model's context."""
    if isinstance(e, openai.APIStatusError) and e.status_code == 413:
        return True
    code = getattr(e, "code", None)
    return isinstance(e, openai.BadRequestError) and (
        code == "context_length_exceeded" or bool(TOO_LONG.search(str(e.message))))


def api_failure(e: openai.APIError, *, model: str, url: Any, retries: int,
                state: Path) -> HarnessError:
    """The HarnessError for a failed call: exit 2 with the fix, or exit 6."""
    text = said_of(e)
    said, api = f"({text})", f"the API at {url}"
    if getattr(e, "status_code", None) == 402 or "insufficient_quota" in (
            getattr(e, "code", None), getattr(e, "type", None)):
        return UsageError(f"{api} says the account has no credit left ({e.status_code})"
                          f" {said}: add credit to it (its billing page), or use another key")
    if isinstance(e, openai.AuthenticationError | openai.PermissionDeniedError):
        return UsageError(f"{api} refused the key ({e.status_code}) {said}: {key_fix(state)}; "
                          "the key must be one this server takes")
    if getattr(e, "code", None) == "model_not_found" or (
            isinstance(e, openai.NotFoundError | openai.BadRequestError)
            and UNKNOWN_MODEL.search(text)):
        return UsageError(f"{api} has no model {model!r} ({e.status_code}) {said}: set the "
                          "role's `model` (or pass --model) to a model it serves")
    if isinstance(e, openai.APIStatusError) and NO_TOOLS.search(text):
        return UsageError(f"{api} does not take tools ({e.status_code}) {said}: the tool "
                          f"loop needs tool calling; serve a model {model!r} that supports it, "
                          "with tool calling on (llama.cpp's llama-server: --jinja; vLLM: "
                          "--enable-auto-tool-choice --tool-call-parser NAME)")
    if isinstance(e, openai.BadRequestError | openai.UnprocessableEntityError) and (
            TOKEN_FIELD.search(text)):
        return UsageError(f"{api} refused the output token cap ({e.status_code}) {said}: set "
                          "the role's options.max_tokens_field to the field this server takes "
                          "(max_tokens or max_completion_tokens), or lower caps.max_tokens")
    if isinstance(e, openai.BadRequestError | openai.UnprocessableEntityError) and (
            "stream_options" in text):
        return UsageError(f"{api} refused stream_options ({e.status_code}) {said}: set the "
                          "role's options.stream to false")
    if isinstance(e, openai.NotFoundError):
        return UsageError(f"{api} has no Chat Completions endpoint (404) {said}: check "
                          "OPENAI_BASE_URL or the role's options.base_url (most servers "
                          "want it to end in /v1)")
    what = next(text for kind, text in RETRY_FAILURES if isinstance(e, kind))
    what = what.format(api=api, retries=retries, status=getattr(e, "status_code", "?"))
    response = getattr(e, "response", None)
    return APIFailed(f"{what} {said}",
                     reset_time(response.headers) if response is not None else None)


def said_of(e: openai.APIError) -> str:
    """What the server said: the SDK's message, and the body when that is text it left out
    (a plain-text body, or `error` as a string rather than an object)."""
    body = getattr(e, "body", None)
    if isinstance(body, str) and body.strip() and body.strip() not in e.message:
        return f"{e.message} - {body.strip()[:500]}"
    return e.message


def no_reply(completion: Any, url: Any) -> APIFailed:
    """A completion with no choice in it (an error object, or nothing, with status 200), or
    a body that is no completion at all."""
    if not isinstance(completion, dict):
        return APIFailed(f"the API at {url} answered with no reply, but "
                         f"{str(completion).strip()[:500]!r}")
    error = completion.get("error")
    said = (error.get("message") if isinstance(error, dict) else error) or "no choices"
    return APIFailed(f"the API at {url} answered with no reply ({str(said)[:500]})")


def cut_stream(url: Any) -> APIFailed:
    """A streamed reply that ended before the server said why it stopped: cut off."""
    return APIFailed(f"the reply streamed from the API at {url} ended before it was finished "
                     "(no finish_reason); if this server never gives one, run without "
                     "`stream`")


def reset_time(headers: Any, now: datetime | None = None) -> str | None:
    """When a limit lifts (ISO-8601 UTC): from `retry-after-ms` or `retry-after`, else the
    latest `x-ratelimit-reset-*` (a duration such as `6m0s`, or a Unix time)."""
    now = now or datetime.now(timezone.utc)
    header = {name.lower(): value for name, value in headers.items()}
    try:
        if "retry-after-ms" in header:
            when = now + timedelta(milliseconds=float(header["retry-after-ms"]))
        elif "retry-after" in header:
            when = _after(header["retry-after"], now)
        else:
            when = max((_after(value, now) for name, value in header.items()
                        if name.startswith("x-ratelimit-reset")), default=None)
    except (TypeError, ValueError, OverflowError):  # a malformed header must not hide the error
        return None
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if when else None


def _after(value: str, now: datetime) -> datetime:
    """A reset header's time: seconds, a Unix time (s or ms), a duration, or an HTTP date."""
    value = value.strip()
    try:
        number = float(value)
    except ValueError:
        pass
    else:
        if number > 1e11:  # a Unix time in milliseconds
            return datetime.fromtimestamp(number / 1000, timezone.utc)
        if number > 1e9:  # a Unix time in seconds
            return datetime.fromtimestamp(number, timezone.utc)
        return now + timedelta(seconds=number)
    if re.fullmatch(f"(?:{DURATION.pattern})+", value):
        seconds = sum(float(n) * UNITS[unit] for n, unit in DURATION.findall(value))
        return now + timedelta(seconds=seconds)
    return email.utils.parsedate_to_datetime(value)
