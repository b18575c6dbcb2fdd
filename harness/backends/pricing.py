"""What a run's tokens cost: the mission's price table, then the built-in one below.

A model priced in neither has an unknown cost: backends report it as None, never as $0, so
a budget is not taken to be untouched (`run.sh doctor` warns before such a run)."""

from __future__ import annotations

from harness.types import Usage

USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                "cache_read_input_tokens")


def _rates(input: float, output: float, write: float, read: float) -> dict[str, float]:
    return dict(zip(USAGE_FIELDS, (input, output, write, read), strict=True))


# $ per million tokens, list prices, for the models the presets run. OpenAI bills no cache
# writes apart from input, so theirs are the input price.
DEFAULT_PRICES: dict[str, dict[str, float]] = {
    "claude-sonnet-4-5": _rates(3.0, 15.0, 3.75, 0.3),
    "claude-haiku-4-5": _rates(1.0, 5.0, 1.25, 0.1),
    "claude-opus-4-1": _rates(15.0, 75.0, 18.75, 1.5),
    "gpt-5": _rates(1.25, 10.0, 1.25, 0.125),
    "gpt-5-codex": _rates(1.25, 10.0, 1.25, 0.125),
    "gpt-5-mini": _rates(0.25, 2.0, 0.25, 0.025),
    # Gemini's paid tier (prompts up to 200k tokens); cached input at a tenth of the input
    # price, no separate cache writes
    "gemini-2.5-pro": _rates(1.25, 10.0, 1.25, 0.125),
    "gemini-2.5-flash": _rates(0.3, 2.5, 0.3, 0.03),
    "gemini-2.5-flash-lite": _rates(0.1, 0.4, 0.1, 0.01),
}


def price_table(model: str, prices: dict[str, dict[str, float]]) -> dict[str, float] | None:
    """The rates for `model`: the mission's, the built-in, then the mission's `default`."""
    return prices.get(model) or DEFAULT_PRICES.get(model) or prices.get("default") or None


def priced(model: str, prices: dict[str, dict[str, float]]) -> bool:
    """Whether `model` has a price (the mission's table, the built-in one, or a default)."""
    return price_table(model, prices) is not None


def cost_of(usage: Usage, model: str, prices: dict[str, dict[str, float]]) -> float:
    """Dollar cost of `usage` from a price table in $ per million tokens (0 if unpriced)."""
    table = price_table(model, prices) or {}
    return sum(getattr(usage, name) * table.get(name, 0.0) / 1_000_000 for name in USAGE_FIELDS)


def known_cost(usage: Usage, model: str, prices: dict[str, dict[str, float]]) -> float | None:
    """Dollar cost of `usage`, or None when no table prices `model`."""
    return cost_of(usage, model, prices) if priced(model, prices) else None
