import json
import re
from pathlib import Path

import pytest
from conftest import run_sh

import harness.state.store
from harness.errors import UsageError
from harness.paths import resolve_paths
from harness.run.runner import run_role
from harness.state.memory import append_entry, make_entry
from harness.state.runs import load_manifest

ORDER = [
    "# You are a worker",
    "## What you have learned in earlier missions",
    "## Project conventions (AGENTS.md)",
    "## Project conventions (CLAUDE.md)",
    "## The plan",
    "## Mission memory",
    "## Long-form notes",
    "## Your feature: F-004",
    "## Earlier verdicts on this feature",
    "## Recent runs (progress.log)",
    "## Latest notes (raw.md)",
    "## This run",
]


def dry_run(project: Path, role: str = "worker", target: str | None = "F-004") -> tuple[str, dict]:
    paths = resolve_paths(str(project / ".harness"), str(project))
    result = run_role(paths, role, target, dry_run=True)
    assert result.exit_code == 0
    manifest = load_manifest(paths.state, result.run_id)
    prompt = (paths.state / "runs" / result.run_id / "prompt.md").read_text()
    return prompt, manifest


def test_blocks_appear_in_order_of_stability(project: Path, state: Path,
                                             isolated_env: Path) -> None:
    (isolated_env / "worker.md").write_text("- TRICK: always run the tests first\n")
    (project / "AGENTS.md").write_text("Use tabs.\n")
    (project / "CLAUDE.md").write_text("Be brief.\n")
    (state / "ledger" / "F-004.jsonl").write_text(
        json.dumps({"time": "t", "run_id": "r1", "verdict": "fail", "reason": "no JSON"}) + "\n")
    prompt, manifest = dry_run(project)
    positions = [prompt.index(heading) for heading in ORDER]
    assert positions == sorted(positions)
    assert "- TRICK: always run the tests first" in prompt
    assert "FEATURE_ID: F-004" in prompt and f"run id: {manifest['run_id']}" in prompt
    assert "**→ F-004 [pending] --json output ← current**" in prompt
    assert "- t FAIL (r1): no JSON" in prompt


def test_memory_text_is_data_never_template_source(project: Path, state: Path) -> None:
    # rendered, the expression would give "zqzqzqzq": unlike "49" from 7*7, no timestamp
    # or run id can hold that by chance
    text = "literal {{ 'zq' * 4 }} and {% include 'x' %}"
    append_entry(state, make_entry("worker", "F-004", "-", text))
    (state / "summary.md").write_text("# Summary\n\n## Lessons\n- {{ runtime.run_id }} {# c #}\n")
    prompt, _ = dry_run(project)
    assert "literal {{ 'zq' * 4 }} and {% include 'x' %}" in prompt
    assert "- {{ runtime.run_id }} {# c #}" in prompt
    assert "zqzqzqzq" not in prompt


def test_block_caps_hold_with_a_visible_marker(project: Path, state: Path) -> None:
    (state / "config.yaml").write_text("prompt:\n  summary_chars: 100\n  raw_entries: 3\n")
    (state / "summary.md").write_text("# Summary\n\n## Lessons\n" + "- lesson\n" * 500)
    prompt, _ = dry_run(project)
    summary = prompt.split("## Mission memory")[1].split("## Long-form notes")[0]
    assert "[... truncated ...]" in summary and len(summary) < 300
    raw = prompt.split("## Latest notes (raw.md)")[1].split("## This run")[0]
    assert len([line for line in raw.splitlines() if line.strip()]) == 3


def test_state_templates_override_home_templates(project: Path, state: Path) -> None:
    (state / "templates").mkdir()
    (state / "templates" / "worker.md.j2").write_text("custom for {{ runtime.FEATURE_ID }}\n")
    prompt, manifest = dry_run(project)
    assert prompt == "custom for F-004\n"
    assert list(manifest["templates"]) == ["worker.md.j2"]


def test_template_syntax_error_names_template_and_line(project: Path, state: Path) -> None:
    (state / "templates").mkdir()
    (state / "templates" / "worker.md.j2").write_text("fine\nfine\n{% if %}\n")
    paths = resolve_paths(str(state), str(project))
    with pytest.raises(UsageError, match=r"worker.md.j2 line 3: .*"):
        run_role(paths, "worker", "F-004", dry_run=True)
    assert not any((state / "runs").iterdir())


def test_undefined_variable_names_template_and_line(project: Path, state: Path) -> None:
    (state / "templates" / "partials").mkdir(parents=True)
    (state / "templates" / "partials" / "summary.md.j2").write_text("ok\n{{ no_such_thing }}\n")
    paths = resolve_paths(str(state), str(project))
    with pytest.raises(UsageError, match=r"summary.md.j2 line 2: 'no_such_thing' is undefined"):
        run_role(paths, "worker", "F-004", dry_run=True)


def test_sandbox_refuses_unsafe_attribute_access(project: Path, state: Path) -> None:
    (state / "templates").mkdir()
    (state / "templates" / "worker.md.j2").write_text("{{ role.__class__.__mro__ }}\n")
    paths = resolve_paths(str(state), str(project))
    with pytest.raises(UsageError, match=r"worker.md.j2 line 1"):
        run_role(paths, "worker", "F-004", dry_run=True)


class CountingFile:
    def __init__(self, f, counter):
        self.f, self.counter = f, counter

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()

    def read(self, n=-1):
        data = self.f.read(n)
        self.counter["bytes"] += len(data)
        return data

    def __getattr__(self, name):
        return getattr(self.f, name)


def test_rendering_reads_only_the_tail_of_history(project: Path, state: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    line = "[2026-01-01T00:00:00Z] worker F-001 -: " + "x" * 200 + "\n"
    (state / "raw.md").write_text(line * 50_000)  # ~12 MB
    (state / "progress.log").write_text("progress line\n" * 200_000)  # ~3 MB
    counter = {"bytes": 0}
    real_open = open
    monkeypatch.setattr(harness.state.store, "open",
                        lambda *a, **k: CountingFile(real_open(*a, **k), counter), raising=False)
    dry_run(project)
    assert 0 < counter["bytes"] < 300_000


def test_plan_view_counts_done_features_instead_of_listing_them() -> None:
    from harness.run.prompt import plan_view
    from harness.state.plan import Feature

    def f(i: int, status: str) -> Feature:
        return Feature(id=f"F-{i:03d}", title=f"feature {i}", description="d",
                       acceptance_criteria=["a"], status=status)

    plan = [f(i, "done") for i in range(1, 2001)] + [f(2001, "pending"), f(2002, "pending")]
    view = plan_view(plan, "F-2002", 6000)
    shown = [(r["id"], r["status"]) for r in view["features"]]
    assert ("F-2002", "pending") in shown and ("F-2001", "pending") in shown
    assert sum(status == "done" for _, status in shown) == 5
    assert view["counts"] == {"done": 2000, "pending": 2}
    assert view["omitted"] == 1995
    tight = plan_view(plan, "F-2002", 10)  # the current feature is shown whatever the cap
    assert [r["id"] for r in tight["features"]] == ["F-2002"]


def test_a_project_doc_the_agent_cli_reads_itself_is_left_out(project: Path, state: Path) -> None:
    (project / "AGENTS.md").write_text("Use tabs.\n")
    (project / "CLAUDE.md").write_text("Be brief.\n")
    (state / "roles").mkdir(exist_ok=True)
    (state / "roles" / "worker.yaml").write_text(
        "template: worker.md.j2\nbackend: command\noptions: {preset: codex}\n")
    prompt, _ = dry_run(project)
    assert "Use tabs." not in prompt  # Codex reads AGENTS.md itself
    assert "Be brief." in prompt


@pytest.mark.parametrize("source, error", [
    ("ok\n{{ 1 / 0 }}\n", r"worker.md.j2 line 2: division by zero"),
    ("{% for x in range(10**9) %}x{% endfor %}\n", r"worker.md.j2 line 1: Range too big"),
    ("ok\n{{ 1 + 'a' }}\n", r"worker.md.j2 line 2: unsupported operand"),
    ("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}\n", r"md.j2 line 1: maximum recursion"),
    ("caf\xe9\n", r"worker.md.j2 line 1: not UTF-8 text \(byte 0xe9\)"),
    ("ok\n{% set a = [1] * 10**18 %}\n", r"worker.md.j2 line 2: asks for more memory"),
])
def test_a_template_that_fails_as_it_renders_is_exit_2_naming_its_line(project: Path,
                                                                      state: Path, source: str,
                                                                      error: str) -> None:
    (state / "templates").mkdir()
    (project / "none.yaml").write_text("[]\n")  # never reached: the prompt comes first
    data = source.encode("latin-1") if "\xe9" in source else source.encode()
    (state / "templates" / "worker.md.j2").write_bytes(data)
    for dry_run in ([], ["--dry-run"]):
        result = run_sh("worker", "F-004", *dry_run, "--backend", "scripted", "--script",
                        str(project / "none.yaml"), cwd=project)
        assert "Traceback" not in result.stderr, result.stderr
        assert result.returncode == 2, result.stderr
        assert re.search(error, result.stderr), result.stderr
        assert not list((state / "runs").iterdir())
    (state / "templates" / "worker.md.j2").unlink()  # the fix: the next run goes on
    assert run_sh("worker", "F-004", "--dry-run", cwd=project).returncode == 0
