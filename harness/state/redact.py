"""Secret redaction: the one filter every record passes through before it is written.

Two sources of secrets: the values of secret-named environment variables, and
text that looks like a well-known key format whatever its origin.
"""

from __future__ import annotations

import os
import re

SECRET_NAME = re.compile(r"(^|_)(API_?KEY|TOKEN|SECRET|SECRET_KEY|PRIVATE_KEY|PASSPHRASE)$"
                         r"|PASSW(OR)?D$|^ANTHROPIC_|^AWS_SECRET|^HARNESS_NOTIFY_URLS$", re.I)
FROM_ENV_FILES: set[str] = set()  # names an env file set (envfile.py): secrets, whatever named
# Secret variables holding a list (space- or comma-separated): each item is masked alone too.
# HARNESS_NOTIFY_URLS: apprise URLs, whose bot tokens and webhook keys are the secret.
SECRET_LISTS = ("HARNESS_NOTIFY_URLS",)
KEY_PATTERNS = re.compile(
    r"sk-ant-[A-Za-z0-9_\-]{16,}"  # Anthropic
    r"|sk-(?:proj-)?[A-Za-z0-9_\-]{20,}"  # OpenAI
    r"|gh[pousr]_[A-Za-z0-9]{30,}"  # GitHub
    r"|github_pat_[A-Za-z0-9_]{40,}"
    r"|AKIA[0-9A-Z]{16}"  # AWS access key id
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"  # Slack
    r"|AIza[0-9A-Za-z_\-]{35}"  # Google
    r"|(?<=://)[^/\s:@]+:[^/\s@]+(?=@)"  # user:password in a URL (a gateway's, a git remote's)
)
MASK = "[REDACTED]"
_MIN_SECRET_LEN = 6  # shorter values would mask ordinary words


def is_secret_name(name: str) -> bool:
    """Whether an environment variable of this name holds a secret."""
    return name in FROM_ENV_FILES or bool(SECRET_NAME.search(name))


def secret_values(environ: dict[str, str] | None = None) -> list[str]:
    """Values of secret-named variables, longest first so overlaps mask fully."""
    env = os.environ if environ is None else environ
    values = {v for k, v in env.items() if is_secret_name(k)}
    for name in SECRET_LISTS:
        values.update(env.get(name, "").replace(",", " ").split())
    return sorted((v for v in values if len(v) >= _MIN_SECRET_LEN), key=len, reverse=True)


def redact(text: str, environ: dict[str, str] | None = None) -> str:
    """`text` with secret values and key-shaped strings replaced by a mask."""
    for value in secret_values(environ):
        if value in text:
            text = text.replace(value, MASK)
    return KEY_PATTERNS.sub(MASK, text)


def redact_data(data: object, environ: dict[str, str] | None = None) -> object:
    """A copy of JSON-like `data` with every string redacted."""
    if isinstance(data, str):
        return redact(data, environ)
    if isinstance(data, dict):
        return {k: redact_data(v, environ) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [redact_data(v, environ) for v in data]
    return data


def scrubbed_environ(environ: dict[str, str] | None = None) -> dict[str, str]:
    """A copy of the environment without secret-named variables, for agent tools."""
    env = os.environ if environ is None else environ
    return {k: v for k, v in env.items() if not is_secret_name(k)}
