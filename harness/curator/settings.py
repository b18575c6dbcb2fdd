"""What a curator run is given and what it gives back: settings, report, and the model hook."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from harness.config import IDENTITY_CHARS
from harness.curator.book import Bounds
from harness.curator.check import ModelResult
from harness.curator.promotion import Promotion


@dataclass
class CuratorSettings:
    """Curator knobs. `similarity` is the rapidfuzz score (0-100) at which two notes are
    one lesson: 75 merges the paraphrases of the labelled corpus and keeps every near miss
    apart (70 merges near misses, 80 loses paraphrases; tests/test_curate.py measures it).
    `topic_similarity` decides when a decision without a `topic:` prefix replaces an
    earlier one."""

    similarity: float = 75.0
    raw_keep: int = 10
    bounds: Bounds = field(default_factory=Bounds)
    topic_similarity: float = 70.0
    identity_chars: int = IDENTITY_CHARS  # each identity file's bound: what prompts show


@dataclass
class CuratorReport:
    """What a curator run did, or in a dry run would do."""

    processed: int = 0  # new raw.md lines read
    archived: int = 0  # raw.md lines moved to the archive
    unparsed: int = 0  # new lines that did not parse (moved like any other)
    promoted: list[Promotion] = field(default_factory=list)
    memory_archived: int = 0  # MEMORY.md lines moved to the archive
    identity_archived: int = 0  # identity lines moved to identity/archive/ for room
    diffs: dict[str, str] = field(default_factory=dict)  # path -> diff (summary, memory, identity)
    changes: list[str] = field(default_factory=list)
    dry_run: bool = False
    resumed: bool = False  # an interrupted run was finished first
    # pairs a judge is asked about (`judge`): (bucket, key, other), and the two texts
    questions: list[tuple[tuple, str, str]] = field(default_factory=list)
    model: str = ""  # with a model: "accepted", or why its answer was rejected
    # the rules' summary.md and MEMORY.md, keyed by file name, before any model's rewrite
    planned: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        """A few human lines on what changed."""
        verb = "would " if self.dry_run else ""
        lines = [f"curator: {self.processed} new lines, {self.unparsed} unparsed; "
                 f"{verb}archive {self.archived} raw lines and {self.memory_archived} "
                 f"MEMORY.md lines; {verb}promote {len(self.promoted)}"]
        if self.resumed:
            lines.append("finished an interrupted curator run first")
        if self.model:
            lines.append(f"model's rewrite: {self.model}")
        if self.identity_archived:
            lines.append(f"moved {self.identity_archived} identity lines to identity/archive/ "
                         "for room (the strongest lessons stay)")
        lines += self.changes
        shown = self.promoted[:PROMOTIONS_SHOWN]
        lines += [f"{verb}promote to identity/{p.role}.md: {p.kind}: {p.text}" for p in shown]
        if len(self.promoted) > len(shown):
            lines.append(f"... and {len(self.promoted) - len(shown)} more promotions")
        return "\n".join(lines)


PROMOTIONS_SHOWN = 50  # a first run over a long history may promote thousands

# shown the rules' summary.md, MEMORY.md and promotions: a rewrite, or why there is none
Refine = Callable[[str, str, list[Promotion]], ModelResult | str | None]
