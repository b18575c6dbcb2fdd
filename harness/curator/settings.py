"""A curator run's knobs and report, and the check a model's rewrite must pass."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from harness.config import IDENTITY_CHARS
from harness.curator.book import TEXT_MAX, Bounds, memory_ids
from harness.curator.identity import IdentityIndex
from harness.curator.matching import same_lesson
from harness.curator.promotion import Promotion
from harness.state.memory import MEMORY_SECTIONS, SUMMARY_SECTIONS, estimate_tokens, fold

PROMOTIONS_SHOWN = 50  # a first run over a long history may promote thousands
_REF = re.compile(r"MEMORY\.md ([LDC]\d+)\)$")
_ID = re.compile(r"^- \[([LDC]\d+)\]")


@dataclass
class CuratorSettings:  # `curator:` in docs/configuration.md
    similarity: float = 75.0  # rapidfuzz 0-100: 70 joins near misses, 80 splits paraphrases
    raw_keep: int = 10
    bounds: Bounds = field(default_factory=Bounds)
    topic_similarity: float = 70.0
    identity_chars: int = IDENTITY_CHARS  # each identity file's bound: what prompts show


@dataclass
class CuratorReport:
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


@dataclass
class ProposedPromotion:
    number: int  # the rules' promotion it words, 1-based as the prompt lists them
    text: str  # identity gets it on one line (`memory.fold`)


@dataclass
class ModelResult:
    summary: str
    memory: str
    promotions: list[ProposedPromotion] | None = None  # None leaves the rules' words


# shown the rules' summary.md, MEMORY.md and promotions: a rewrite, or why there is none
Refine = Callable[[str, str, list[Promotion]], ModelResult | str | None]


def check_model_result(result: ModelResult, *, rules_memory: str,
                       rules_promotions: Sequence[Promotion], identity: Mapping[str, str],
                       bounds: Bounds, similarity: float) -> list[str]:
    """Why a model's answer cannot replace the rules' (docs/curator.md); empty when it can."""
    texts = [("summary.md", result.summary), ("MEMORY.md", result.memory),
             *((f"promotion {p.number}", p.text) for p in result.promotions or ())]
    # JSON can carry a lone surrogate, which no file can hold: caught here, not mid-commit
    problems = [f"{name} is not valid UTF-8 text" for name, text in texts
                if text.encode(errors="replace").decode() != text]
    problems += _shape("summary.md", result.summary, SUMMARY_SECTIONS, bounds.summary_max_lines)
    if estimate_tokens(result.summary) > bounds.summary_max_tokens:
        problems.append(f"summary.md is over {bounds.summary_max_tokens} tokens")
    problems += _shape("MEMORY.md", result.memory, MEMORY_SECTIONS, bounds.memory_max_lines)
    proposed, expected = memory_ids(result.memory), memory_ids(rules_memory)
    problems += [f"MEMORY.md lost {ref}" if ref not in proposed else
                 f"MEMORY.md changed the count of {ref}: {count} -> {proposed[ref]}"
                 for ref, count in expected.items() if proposed.get(ref) != count]
    problems += [f"MEMORY.md invents {ref}" for ref in proposed if ref not in expected]
    kept = set(result.memory.splitlines())
    problems += [f"MEMORY.md lost the line {line!r}" for line in rules_memory.splitlines()
                 if line.strip() and not line.startswith("#") and not _ID.match(line)
                 and line not in kept]
    refs = [(line, m[1] if (m := _REF.search(line)) else None)
            for line in result.summary.splitlines() if line.startswith("- ")]
    problems += [f"summary line does not point into MEMORY.md: {line!r}" if ref is None else
                 f"summary line points to {ref}, which MEMORY.md lacks"
                 for line, ref in refs if ref not in proposed]
    if result.promotions is not None:
        problems += _promotion_problems(result.promotions, rules_promotions, identity,
                                        similarity)
    return problems


def _shape(name: str, text: str, sections: tuple[str, ...], max_lines: int) -> list[str]:
    lines = text.splitlines()
    problems = [f"{name} is over {max_lines} lines"] if len(lines) > max_lines else []
    headings = [line[3:].strip() for line in lines if line.startswith("## ")]
    if tuple(headings) != sections:
        problems.append(f"{name} sections are {headings}, expected {list(sections)}")
    return problems


def _promotion_problems(proposed: list[ProposedPromotion], rules: Sequence[Promotion],
                        identity: Mapping[str, str], similarity: float) -> list[str]:
    given = Counter(p.number for p in proposed)
    problems = [f"promotion {n} is missing (a lesson that met its rule is promoted)"
                for n in range(1, len(rules) + 1) if not given[n]]
    problems += [f"promotion {n} is given twice" for n in sorted(given) if given[n] > 1]
    known = IdentityIndex(similarity)
    for role, text in identity.items():
        known.add_text(role, text)
    for p in proposed:
        if not 1 <= p.number <= len(rules):
            problems.append(f"promotion {p.number} is not one of the rules' promotions")
            continue
        rule, text = rules[p.number - 1], fold(p.text)
        where = f"promotion {p.number} ({text[:40]!r})"
        if not text or len(text) > TEXT_MAX:
            problems.append(f"{where}: the text must be 1 to {TEXT_MAX} characters")
        elif not same_lesson(text, rule.text, similarity):
            problems.append(f"{where}: not the same lesson as {rule.text[:60]!r}")
        elif text != rule.text and known.knows(rule.role, text):
            problems.append(f"{where}: identity/{rule.role}.md already holds this lesson")
        known.add(rule.role, text)
    return problems
