"""A recorded prompt cut into the sections its templates wrote.

A heading counts only if a template line starts with it (the fixed text before any `{{`),
so a `## Lessons` inside summary.md stays inside the memory section. The run's own
template sources come from the object store by the hashes in its manifest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from harness.state.store import get_object


class Section(NamedTuple):
    title: str
    text: str


def template_headings(sources: list[str]) -> list[str]:
    """The fixed start of every markdown heading in template sources, longest first."""
    heads = set()
    for source in sources:
        for line in source.splitlines():
            if line.startswith("#"):
                head = line.split("{{")[0].split("{%")[0]
                if head.strip("# "):
                    heads.add(head)
    return sorted(heads, key=lambda h: (-len(h), h))


def run_headings(state: Path, manifest: dict[str, Any]) -> list[str]:
    """The headings of the templates a run rendered from; [] when they are not stored."""
    sources = []
    for digest in (manifest.get("templates") or {}).values():
        try:
            sources.append(get_object(state, str(digest)).decode("utf-8", errors="replace"))
        except (OSError, ValueError):
            continue
    return template_headings(sources)


def split_sections(prompt: str, headings: list[str]) -> list[Section]:
    """`prompt` as consecutive sections, each starting at a template heading."""
    sections: list[Section] = []
    title, lines = "(start)", []
    for line in prompt.splitlines(keepends=True):
        if any(line.startswith(h) for h in headings):
            if lines:
                sections.append(Section(title, "".join(lines)))
            title, lines = line.strip().lstrip("#").strip(), []
        lines.append(line)
    if lines:
        sections.append(Section(title, "".join(lines)))
    return sections
