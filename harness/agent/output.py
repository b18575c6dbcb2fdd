"""Tool output cut to the size the model is shown: the head and the tail, with a marker
that says how much of the middle went."""

from __future__ import annotations


def truncate(text: str, limit: int, dropped: int = 0) -> str:
    """`text` cut to `limit` characters around a visible marker, keeping head and tail."""
    if len(text) <= limit and not dropped:
        return text
    head, tail = limit // 2, limit - limit // 2
    cut = len(text) - head - tail + dropped
    return f"{text[:head]}\n[... {cut} characters truncated ...]\n{text[len(text) - tail:]}"
