"""Build the render context, render a role's prompt, and reconstruct a past one.

The context is plain JSON data read from disk under hard caps; templates are
rendered in a sandbox with StrictUndefined, so memory text is only ever data.
A live render goes through the same canonical JSON as the stored context, so
`reconstruct` from the stored objects gives the same bytes.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jinja2 import BaseLoader, StrictUndefined, TemplateError, TemplateNotFound
from jinja2.sandbox import SandboxedEnvironment

from harness.agent.treefile import read_in_tree
from harness.config import PromptCaps
from harness.errors import UsageError
from harness.paths import harness_home
from harness.run.export import identity_beside, without_block
from harness.state import steering
from harness.state.memory import long_note_titles, tail_entries
from harness.state.plan import Feature
from harness.state.reading import parse_json, parse_json_line, read_object, read_text
from harness.state.store import read_head, read_tail

PROJECT_DOCS = ("AGENTS.md", "CLAUDE.md")


# ---- reading what is on disk (bounded: never whole history files) ----


def read_start(path: Path, max_chars: int) -> str | None:
    """At most `max_chars` + 1 characters from the start of `path` (one more than a cap
    keeps, so that `cap_text` marks the cut), or None if it is absent."""
    return read_head(path, max_chars + 1, encoding="utf-8")


def cap_text(text: str, limit: int, keep: str = "head") -> str:
    """`text` within `limit` characters, with a visible marker where it was cut."""
    if len(text) <= limit:
        return text
    if keep == "tail":
        return "[... earlier text truncated ...]\n" + text[-limit:]
    return text[:limit] + "\n[... truncated ...]"


def whole_lines(text: str, limit: int) -> str:
    """`text` if it fits `limit`, else its whole lines that fit and a marker: identity files
    are kept within the limit by the curator, so only lines a person added can overflow."""
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit) + 1
    return text[:cut] + "[... more lines than prompts show; the curator moves promoted ones " \
        "to identity/archive/ ...]"


@dataclass
class Sources:
    """What one render reads from disk, already bounded in size."""

    identity: str = ""
    project_docs: list[dict[str, str]] = field(default_factory=list)
    summary: str = ""
    long_notes: list[dict[str, str]] = field(default_factory=list)
    ledger: list[str] = field(default_factory=list)
    steering: dict[str, Any] = field(default_factory=dict)  # a person's guidance and answers
    progress: list[str] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)
    spec: str | None = None


def read_sources(role: str, feature_id: str | None, state: Path, workdir: Path,
                 identity_dir: Path, caps: PromptCaps, skip_docs: tuple[str, ...] = ()
                 ) -> Sources:
    """Read every prompt input from disk, each within its cap; `skip_docs` are project docs
    the agent CLI reads by itself."""
    docs = []
    for name in (d for d in PROJECT_DOCS if d not in skip_docs):
        text = read_in_tree(workdir, name, caps.project_docs_chars,
                            (state, identity_dir, harness_home()))
        if text is not None and ((shown := without_block(text)) == text or shown.strip()):
            docs.append({"name": name, "text": cap_text(shown, caps.project_docs_chars)})
    ledger = []
    if feature_id:
        ledger = read_tail(state / "ledger" / f"{feature_id}.jsonl", caps.ledger_entries)
    return Sources(
        identity=identity_beside(read_start(identity_dir / f"{role}.md", caps.identity_chars)
                                 or "", workdir, skip_docs),
        project_docs=docs,
        summary=read_start(state / "summary.md", caps.summary_chars) or "",
        long_notes=long_note_titles(state, caps.note_titles),
        ledger=ledger, steering=steering.current(state, feature_id) if feature_id else {},
        progress=read_tail(state / "progress.log", caps.progress_lines),
        raw=tail_entries(state, caps.raw_entries),
        spec=read_in_tree(state, "spec.md", caps.spec_chars) if role == "planner" else None,
    )


# ---- the context: pure ----


DONE_SHOWN = 5  # settled (done or failed) features shown near the current one; others counted


def plan_view(plan: list[Feature], current: str | None, limit: int) -> dict[str, Any]:
    """The plan within `limit` characters: the current feature, then the open ones nearest
    it, then a few settled (done, failed) ones; every status counted, so a long plan stays
    small.
    """
    rows = [
        {"id": f.id, "title": f.title, "status": f.status, "attempts": f.attempts,
         "current": f.id == current}
        for f in plan
    ]
    centre = next((i for i, r in enumerate(rows) if r["current"]), 0)
    settled = ("done", "failed")
    by_priority = sorted(range(len(rows)), key=lambda i: (
        not rows[i]["current"], rows[i]["status"] in settled, abs(i - centre), i))
    kept, used, done = set(), 0, 0
    for i in by_priority:
        if rows[i]["status"] in settled and not rows[i]["current"]:
            if done == DONE_SHOWN:
                continue
            done += 1
        cost = len(rows[i]["id"]) + len(rows[i]["title"]) + 24
        if used + cost > limit and kept:
            break
        kept.add(i)
        used += cost
    counts = {s: sum(r["status"] == s for r in rows)
              for s in ("pending", "in_progress", "done", "failed", "blocked")}
    return {"features": [rows[i] for i in sorted(kept)], "omitted": len(rows) - len(kept),
            "counts": {s: n for s, n in counts.items() if n}}


def ledger_view(lines: list[str], limit: int) -> list[dict[str, Any]]:
    """Ledger verdicts, oldest first (a person's steering apart); a line that is not JSON is
    shown as its text."""
    out = []
    for line in lines:
        record = parse_json_line(line) or {"verdict": "?", "reason": line}
        if record.get("verdict") in steering.KINDS:  # shown in their own block
            continue
        record["reason"] = cap_text(str(record.get("reason", "")), limit // max(len(lines), 1))
        out.append(record)
    return out


def feature_view(feature: Feature | None, limit: int) -> dict[str, Any] | None:
    if feature is None:
        return None
    data = feature.model_dump()
    data["description"] = cap_text(data["description"], limit)
    return data


def build_context(*, role: str, feature: Feature | None, plan: list[Feature], sources: Sources,
                  caps: PromptCaps, runtime: dict[str, str],
                  extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The render context: every block capped, every key present (templates are strict)."""
    raw_text = cap_text("\n".join(sources.raw), caps.raw_chars, keep="tail")
    context: dict[str, Any] = {
        "role": role,
        "identity": whole_lines(sources.identity, caps.identity_chars),
        "project_docs": sources.project_docs,
        "plan": plan_view(plan, feature.id if feature else None, caps.plan_chars),
        "summary": cap_text(sources.summary, caps.summary_chars),
        "long_notes": sources.long_notes,
        "feature": feature_view(feature, caps.feature_chars),
        "ledger": ledger_view(sources.ledger, caps.ledger_chars),
        **steering.prompt_view(sources.steering, caps.ledger_chars),
        "progress": sources.progress,
        "raw": raw_text.splitlines() if raw_text else [],
        "spec": cap_text(sources.spec, caps.spec_chars) if sources.spec is not None else None,
        "verify": None,
        "diff": None,
        "structured_answer": False,  # verdict and notes come as the agent CLI's final answer
        "runtime": runtime,
    }
    context.update(extra or {})
    return context


def canonical(context: dict[str, Any]) -> str:
    """The one serialisation of a context that is stored and rendered from."""
    return json.dumps(context, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


# ---- rendering ----


class RecordingLoader(BaseLoader):
    """Loads templates from `dirs` in order (then `fallback`), remembering every source used."""

    def __init__(self, dirs: list[Path], fallback: dict[str, str] | None = None) -> None:
        self.dirs = dirs
        self.fallback = fallback or {}
        self.loaded: dict[str, str] = {}

    def get_source(self, environment: Any, template: str) -> tuple[str, str, Callable[[], bool]]:
        if ".." in Path(template).parts or Path(template).is_absolute():
            raise TemplateNotFound(template)
        for folder in self.dirs:
            path = folder / template
            if path.is_file():
                source = read_text(path)  # not UTF-8: a UsageError naming file and line
                self.loaded[template] = source
                return source, str(path), lambda: True
        if template in self.fallback:
            self.loaded[template] = self.fallback[template]
            return self.fallback[template], f"<recorded>/{template}", lambda: True
        raise TemplateNotFound(template)


@dataclass
class Rendered:
    text: str
    template: str
    sources: dict[str, str]  # every template the render loaded, by name


def _template_line(error: BaseException) -> str:
    """'file line N' of the innermost template frame in a render error's traceback."""
    where = ""
    tb = error.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name.endswith(".j2") or name.startswith("<recorded>"):
            where = f"{name} line {tb.tb_lineno}"
        tb = tb.tb_next
    return where or "template"


def render(template: str, context_json: str, loader: RecordingLoader) -> Rendered:
    """Render `template` strictly and sandboxed; template errors name the file and line."""
    env = SandboxedEnvironment(
        loader=loader, undefined=StrictUndefined, autoescape=False,
        keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True,
    )
    try:
        text = env.get_template(template).render(json.loads(context_json))
    except TemplateNotFound as e:
        searched = ", ".join(str(d) for d in loader.dirs) or "the recorded templates"
        raise UsageError(f"template {e.name!r} not found in {searched}") from None
    except TemplateError as e:
        lineno = getattr(e, "lineno", None)
        filename = getattr(e, "filename", None)
        where = f"{filename} line {lineno}" if filename and lineno else _template_line(e)
        raise UsageError(f"{where}: {e.message}") from None
    except (ArithmeticError, LookupError, TypeError, ValueError, RecursionError) as e:
        raise UsageError(f"{_template_line(e)}: {e}") from None  # the template's own code
    except MemoryError as e:  # [1] * 10**10: one allocation no machine gives, refused whole
        raise UsageError(f"{_template_line(e)}: asks for more memory than there is") from None
    return Rendered(text=text, template=template, sources=dict(loader.loaded))


def template_dirs(state: Path, home: Path) -> list[Path]:
    """Overrides in `<state>/templates/` win over `$HARNESS_HOME/templates/`."""
    return [state / "templates", home / "templates"]


def reconstruct(state: Path, manifest: dict[str, Any], templates: Path | None = None) -> str:
    """Re-render a recorded run from its stored objects (or `templates` first, then those)."""
    run_id = manifest.get("run_id")
    names, context_hash = manifest.get("templates"), manifest.get("context_sha256")
    if not isinstance(names, dict) or not context_hash or not manifest.get("template"):
        raise UsageError(f"run {run_id}: its manifest names no recorded template and context "
                         "(keys template, templates, context_sha256); it cannot be rebuilt")
    try:
        recorded = {n: read_object(state, h) for n, h in names.items()}
        context_json = read_object(state, context_hash)
    except FileNotFoundError as e:
        raise UsageError(f"run {run_id}: stored object missing: {e.filename}") from None
    context = parse_json(context_json, f"run {run_id}: stored context")
    if not isinstance(context, dict):
        raise UsageError(f"run {run_id}: stored context {manifest['context_sha256']} is not "
                         "a JSON object; the object store is damaged")
    loader = RecordingLoader([templates] if templates else [], fallback=recorded)
    return render(manifest["template"], context_json, loader).text


def unified_diff(old: str, new: str, old_name: str, new_name: str) -> str:
    return "".join(difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), old_name, new_name))
