"""What a run's tokens cost, from the mission's price table."""

from __future__ import annotations

from harness.types import Usage

USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                "cache_read_input_tokens")


def priced(model: str, prices: dict[str, dict[str, float]]) -> bool:
    """Whether the price table has a price for `model` (or a default)."""
    return bool(prices.get(model) or prices.get("default"))


def cost_of(usage: Usage, model: str, prices: dict[str, dict[str, float]]) -> float:
    """Dollar cost of `usage` from a price table in $ per million tokens."""
    table = prices.get(model) or prices.get("default") or {}
    return sum(getattr(usage, name) * table.get(name, 0.0) / 1_000_000 for name in USAGE_FIELDS)
