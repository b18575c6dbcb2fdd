"""The model backends, each behind the `Backend` Protocol of `harness.types`.

The runner builds a `Session` (who is running, where, with which caps and tools), hands
the rendered prompt to `Backend.run`, and gets an `Outcome` back. A backend never touches
feature status: verdicts and plans reach the harness through the tools (or `run.sh
verdict` / `run.sh plan`), which write to disk.
"""

from __future__ import annotations

from harness.types import Backend


def load_backend(name: str) -> Backend:
    """The backend called `name`; each is imported only when used."""
    if name == "anthropic":
        from harness.backends.anthropic import AnthropicBackend

        return AnthropicBackend()
    if name == "openai":
        from harness.backends.openai import OpenAIBackend

        return OpenAIBackend()
    if name == "command":
        from harness.backends.command import CommandBackend

        return CommandBackend()
    if name == "scripted":
        from harness.backends.scripted import ScriptedBackend

        return ScriptedBackend()
    raise ValueError(f"unknown backend {name!r}")
