"""The server an API backend talks to: the role's `options.base_url`, else the vendor's
variable (ANTHROPIC_BASE_URL, OPENAI_BASE_URL), else the vendor's API."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

from harness.errors import UsageError


def server_url(options: dict[str, Any], variable: str, example: str) -> str | None:
    """The role's server (None: the vendor's API); a UsageError naming where it came from
    when it is no http(s) URL: `localhost:11434/v1` is, to the SDKs, a server they cannot
    reach, which a loop would wait out all night as an outage."""
    url = str(options.get("base_url") or os.environ.get(variable) or "").strip()
    try:
        parts = urlsplit(url)
        http = parts.scheme in ("http", "https") and bool(parts.netloc) and parts.port != 0
    except ValueError:  # an unclosed [ or a port that is no number
        http = False
    if url and not http:
        where = "options.base_url" if options.get("base_url") else variable
        raise UsageError(f"{where} {url!r} is no http(s) URL: give the server's address whole,"
                         f" e.g. {example}")
    return url or None
