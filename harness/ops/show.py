"""`run.sh show RUN_ID` for a person: the run's header, its prompt's sections, each turn with
its tool calls and their results (truncated), the verdict, the outcome and the cost."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.ops.summary import run_commit
from harness.state import steering
from harness.state.actions import read_verdict
from harness.state.memory import estimate_tokens
from harness.state.run_summary import format_duration, format_tokens, summarize
from harness.state.runs import load_manifest, runs_dir
from harness.state.sections import run_headings, split_sections
from harness.state.transcript import ToolCall, fold_turns, read_events

RESULT_LINES = 6  # lines of a tool result shown in the terminal
LINE_CHARS = 160


def clip(text: str, chars: int = LINE_CHARS) -> str:
    """One line of at most `chars` characters, `...` marking a cut."""
    line = " ".join(str(text).split())
    return line if len(line) <= chars else line[: chars - 3] + "..."


def describe_call(call: ToolCall) -> str:
    """A tool call as a person would read it: the command, the file, the note."""
    args = call.input if isinstance(call.input, dict) else {}
    if call.name == "bash" and "command" in args:
        return f"$ {args['command']}"
    if "path" in args:
        return f"{args.get('command', '')} {args['path']}".strip()
    if call.name == "note" and "text" in args:
        return f"{args.get('kind', '-')}: {args['text']}"
    if call.name == "verdict":
        return f"{args.get('verdict', '?')}: {args.get('reason', '')}"
    return json.dumps(call.input, ensure_ascii=False, default=str)


def result_lines(text: str, keep: int = RESULT_LINES) -> list[str]:
    """The first `keep` lines of a tool result, clipped, and how many more there were."""
    lines = text.splitlines() or [""]
    shown = [line.rstrip()[:LINE_CHARS] for line in lines[:keep]]
    if len(lines) > keep:
        shown.append(f"... ({len(lines) - keep} more lines)")
    return shown


def header(manifest: dict[str, Any]) -> list[str]:
    s = summarize(manifest)
    code = "-" if s.exit_code is None else s.exit_code
    return [f"{s.run_id}  {s.role} {s.feature}  {s.status}  exit {code} ({s.result})",
            f"started {s.started_at or '?'}, {format_duration(s.seconds)}, {s.turns} turns, "
            f"backend {manifest.get('backend', '?')}, model {manifest.get('model') or 'unknown'}"]


def prompt_lines(state: Path, manifest: dict[str, Any]) -> list[str]:
    path = runs_dir(state) / manifest["run_id"] / "prompt.md"
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ["prompt.md: missing"]
    sections = split_sections(text, run_headings(state, manifest))
    out = [f"prompt.md: {len(text):,} chars (~{format_tokens(estimate_tokens(text))} tokens), "
           f"{len(sections)} sections"]
    out += [f"  {clip(s.title, 60):<60} {len(s.text):>8,} chars" for s in sections]
    return out


def turn_lines(state: Path, run_id: str) -> list[str]:
    events, bad = read_events(runs_dir(state) / run_id / "transcript.jsonl")
    out = []
    for turn in fold_turns(events):
        out.append(f"turn {turn.number}" if turn.number else "before the first turn")
        out += [f"  {clip(text)}" for text in turn.texts]
        for call in turn.calls:
            mark = " (error)" if call.is_error else ""
            out.append(f"  > {call.name}{mark}: {clip(describe_call(call))}")
            if call.result is not None:
                out += [f"    {line}" for line in result_lines(call.result)]
        out += [f"  event: {clip(json.dumps(e, ensure_ascii=False, default=str))}"
                for e in turn.events]
    if bad:
        out.append(f"({bad} transcript lines did not parse)")
    return out or ["no turns recorded"]


def footer(state: Path, manifest: dict[str, Any], workdir: Path) -> list[str]:
    s, out = summarize(manifest), []
    verdict = read_verdict(state, s.run_id)
    if verdict:
        out.append(f"verdict: {verdict.get('verdict')}: {verdict.get('reason', '')}")
    out.append(f"outcome: {manifest.get('outcome', s.status)}"
               + (f" ({clip(s.detail)})" if s.detail else ""))
    if manifest.get("summary"):
        out.append(f"summary: {clip(manifest['summary'], 400)}")
    out.append(f"tokens: input {s.input_tokens:,}, output {s.output_tokens:,}, cache read "
               f"{s.cache_read_tokens:,}, cache write {s.cache_write_tokens:,}")
    out.append(f"cost: {s.cost_text}")
    if manifest.get("commit"):
        made = run_commit(manifest, workdir)
        out.append(f"commit: {made['commit']} {made['subject']}".rstrip())
        out += [f"  {line}" for line in made["stat"]]
    if s.feature.startswith("F-"):
        guidance = steering.current(state, s.feature)["guidance"]
        out += [f"guidance on {s.feature} now: {n}. {clip(g, 300)}"
                for n, g in enumerate(guidance, 1)]
    folder = runs_dir(state) / s.run_id
    out += [f"{name}: {folder / name}" for name in ("prompt.md", "transcript.jsonl",
                                                     "verdict.json") if (folder / name).exists()]
    return out


def format_run(state: Path, run_id: str, workdir: Path) -> str:
    """The whole run as text: header, prompt sections, turns, then how it ended (its commit
    read from the repository in `workdir` once the run's own tree is gone)."""
    manifest = load_manifest(state, run_id)
    parts = [header(manifest), prompt_lines(state, manifest), turn_lines(state, run_id),
             footer(state, manifest, workdir)]
    return "\n\n".join("\n".join(part) for part in parts)
