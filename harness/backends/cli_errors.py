"""What an agent CLI's error message means for the run, whichever CLI printed it.

An agent CLI reports a service it could not use in its own words (a Codex `turn.failed`, a
Claude Code result with `is_error` and `api_error_status`, a line on stderr). None of these
is the agent failing the task: a usage or rate limit, a server or transport error is
infrastructure (exit 6, not an attempt); a rejected key, a missing variable, an unknown
model or a refusal to run is the person's to fix (exit 2, with the fix named). The patterns
were taken from what the real CLIs print (tests/test_real_clis.py drives them).
"""

from __future__ import annotations

import re

from harness.errors import BackendError, HarnessError, UsageError

_MISSING_VAR = re.compile(r"missing environment variable:?\s*`?(\w+)`?", re.I)
_AUTH = re.compile(
    r"\b401\b|\b403\b|unauthori[sz]ed|invalid api key|incorrect api key|invalid x-api-key"
    r"|authentication_error|not logged in|please run /login|permission_error", re.I)
_MODEL = re.compile(
    r"model_not_found|issue with the selected model|model[ `:]+\S+ (?:does not exist|not found)"
    r"|does not exist or you do not have access|unknown model|invalid model", re.I)
_REFUSED = re.compile(r"not inside a trusted directory|skip-git-repo-check", re.I)
_SERVER = re.compile(
    r"\b5\d\d\b|server[- ]side issue|server_error|internal server error|overloaded"
    r"|high demand|stream disconnected|error sending request|connection (?:refused|reset)"
    r"|unable to connect|failed ?to ?open ?socket|econn(?:refused|reset)"
    r"|timed? ?out|network error|service unavailable|bad gateway", re.I)

AUTH_FIX = ("log the CLI in (`claude login`, `codex login`) or give it its key: put the key's"
            " variable in the role's `options: {pass_env: [...]}`")
MODEL_FIX = ("set the role's `model` to one this CLI's provider serves, or to \"\" to let the"
             " CLI choose")


def classify(message: str, status: int | None = None) -> HarnessError | None:
    """The error an agent CLI's failure message stands for, or None when it is not one of
    these (then the run is judged as the agent's own). Usage limits, which carry a reset
    time, are read first by `cli_results.raise_for_failure`."""
    text = f"{status or ''} {message}"
    short = " ".join(message.split())[:300]
    if m := _MISSING_VAR.search(message):
        return UsageError(f"the agent CLI needs the environment variable {m[1]}, which the"
                          f" harness does not pass unless asked: add it to the role's"
                          f" `options: {{pass_env: [{m[1]}]}}` ({short})")
    if status in (401, 403) or _AUTH.search(text):
        return UsageError(f"the agent CLI's credentials were refused: {short}; {AUTH_FIX}")
    if status == 404 or _MODEL.search(message):
        return UsageError(f"the agent CLI's model is unknown to its provider: {short};"
                          f" {MODEL_FIX}")
    if _REFUSED.search(message):
        return UsageError(f"the agent CLI refused to run here: {short}; run it in a git"
                          " repository or pass the flag it names in the role's `args`")
    if status == 429 or (status or 0) >= 500 or _SERVER.search(text):
        return BackendError(f"the agent CLI's model service failed: {short}")
    return None
