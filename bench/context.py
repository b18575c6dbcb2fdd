"""Context benchmark: a long scripted worker run against the fake Messages API.

Each turn the model views a 12,000-character file (about 3,400 tokens of tool result), so the
conversation would grow past any window; the fake API refuses a request over its limit
(counting four characters a token). The run goes three times:
  - with the context budget: old tool results cleared in batches, down to half the budget;
  - the same clearing a little every turn (down to 95% of the budget), for comparison;
  - without it, the API's limit lifted so the run can finish at all (the old behaviour).
For each: requests refused, the largest request, total input tokens sent, and the share of
input tokens that sit in a prefix identical to the previous request's, which a prompt cache
could serve (goal >= 80%). Cache markers are left out of the comparison: the moving
breakpoint shifts each turn and is not part of the cached content. Token counts are exact
for the script (no timing in them), so one run gives the figures.

Usage: .venv/bin/python bench/context.py [--turns 200] [--budget 48000] [--limit 60000]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from fake_api import (  # noqa: E402 - tests/ is not a package
    FakeAPI,
    count_tokens,
    make_session,
    text,
    tool_use,
    without_cache_marks,
)

from harness.backends import context  # noqa: E402
from harness.backends.anthropic import AnthropicBackend  # noqa: E402
from harness.types import Caps  # noqa: E402

EDITOR = "str_replace_based_edit_tool"
FILE = "".join(f"line {i:03d} " + "x" * 70 + "\n" for i in range(150))


@dataclass
class Figures:
    """What one run sent."""

    turns: int
    status: str
    refused: int
    largest: int  # tokens of the largest request
    total: int  # input tokens over all requests
    cached_share: float  # of `total`, in a prefix identical to the previous request's


def pieces(request: dict[str, Any]) -> list[str]:
    """A request as the sequence a prompt cache reads: tools, then each message's blocks."""
    out = [json.dumps(without_cache_marks(t)) for t in request.get("tools", [])]
    for message in request["messages"]:
        for block in message["content"]:
            out.append(message["role"] + json.dumps(without_cache_marks(block)))
    return out


def cached_share(requests: list[dict[str, Any]]) -> float:
    """The share of characters in a prefix of whole blocks equal to the previous request's."""
    same = total = 0
    previous: list[str] = []
    for request in requests:
        current = pieces(request)
        total += sum(map(len, current))
        for a, b in zip(previous, current, strict=False):
            if a != b:
                break
            same += len(b)
        previous = current
    return same / total if total else 0.0


def run(turns: int, budget: int | None, limit: int | None, folder: Path) -> Figures:
    """One scripted run of `turns` model calls; what it sent."""
    api = FakeAPI()
    api.context_limit, api.count_input = limit, True
    api.start()
    try:
        for _ in range(turns - 1):
            api.reply(text("Reading it again."), tool_use(EDITOR, {"command": "view",
                                                                   "path": "big.txt"}))
        api.reply(tool_use("finish", {"summary": "done"}))
        folder.mkdir()
        session = make_session(folder, options={"base_url": api.base_url},
                               caps=Caps(turns=turns + 10, wall_seconds=None,
                                         context_tokens=budget))
        (session.workdir / "big.txt").write_text(FILE)
        outcome = AnthropicBackend().run("Read big.txt until told to stop.", session)
    finally:
        api.stop()
    counts = [count_tokens(r) for r in api.requests]
    accepted = [(r, n) for r, n in zip(api.requests, counts, strict=True)
                if limit is None or n <= limit]
    return Figures(outcome.turns, outcome.status, len(counts) - len(accepted), max(counts),
                   sum(n for _, n in accepted), cached_share([r for r, _ in accepted]))


def measure(turns: int, budget: int, limit: int) -> dict[str, Figures]:
    """The run with clearing in batches, clearing every turn, and without clearing."""
    os.environ.setdefault("ANTHROPIC_API_KEY", "bench-key")
    batch = context.LOW_WATER
    with tempfile.TemporaryDirectory(prefix="bench-context-") as tmp:
        figures = {"clearing in batches": run(turns, budget, limit, Path(tmp) / "batches")}
        context.LOW_WATER = 0.95
        try:
            figures["clearing every turn"] = run(turns, budget, limit, Path(tmp) / "every")
        finally:
            context.LOW_WATER = batch
        figures["no clearing, no limit"] = run(turns, None, None, Path(tmp) / "without")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--budget", type=int, default=48_000)
    parser.add_argument("--limit", type=int, default=60_000)
    args = parser.parse_args()
    figures = measure(args.turns, args.budget, args.limit)
    print(f"{args.turns}-turn run, 12,000-character result a turn, budget {args.budget:,}, "
          f"API limit {args.limit:,} tokens")
    for name, f in figures.items():
        print(f"  {name:<22} {f.status} after {f.turns} turns, {f.refused} refused, largest "
              f"request {f.largest:,} tokens, {f.total:,} input tokens sent, "
              f"{f.cached_share:.1%} in a prefix shared with the previous request")


if __name__ == "__main__":
    main()
