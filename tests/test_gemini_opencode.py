"""The gemini and opencode presets: argv for unattended runs, their event streams read into
turns, usage, cost and the served model, their failures classified; with stand-in CLIs
(tests/fake_clis) as real subprocesses, and through run.sh."""

from __future__ import annotations

import os
from datetime import datetime, timezone

import pytest
from conftest import run_sh
from test_command_backend import fake, make_session, run, shim

from harness.backends.cli_errors import CliRefused
from harness.backends.cli_presets import build_argv, cli_model, docs_read_by, unpriced_model
from harness.backends.cli_results import UsageLimitReached
from harness.backends.command import CommandBackend
from harness.backends.pricing import known_cost
from harness.errors import BackendError
from harness.types import FINISHED


def test_gemini_argv_is_headless_yolo_with_a_gemini_model():
    argv, preset = build_argv({"preset": "gemini"}, "gemini-2.5-pro", 12)
    assert argv == ["gemini", "--output-format", "stream-json", "-m", "gemini-2.5-pro",
                    "--approval-mode", "yolo", "--skip-trust"]
    assert preset.parser == "gemini"
    argv, _ = build_argv({"preset": "gemini", "approval_mode": "auto_edit"},
                         "claude-sonnet-4-5", None)
    assert argv == ["gemini", "--output-format", "stream-json", "--approval-mode", "auto_edit",
                    "--skip-trust"]
    assert docs_read_by("command", {"preset": "gemini"}) == ("GEMINI.md",)


def test_opencode_argv_names_the_provider_of_the_model():
    argv, preset = build_argv({"preset": "opencode"}, "claude-sonnet-4-5", 12)
    assert argv == ["opencode", "run", "--format", "json", "-m", "anthropic/claude-sonnet-4-5"]
    assert cli_model({"preset": "opencode"}, "ollama/qwen3-coder") == "ollama/qwen3-coder"
    assert cli_model({"preset": "opencode"}, "gpt-5") == "openai/gpt-5"
    assert cli_model({"preset": "opencode"}, "mystery") == ""  # OpenCode chooses
    assert docs_read_by("command", {"preset": "opencode"}) == ("AGENTS.md",)


def test_prices_gemini_from_the_table_opencode_from_its_own_report():
    assert unpriced_model("command", {"preset": "gemini"}, "gemini-2.5-flash", {}) is None
    assert unpriced_model("command", {"preset": "gemini"}, "gemini-9", {}) == "gemini-9"
    assert unpriced_model("command", {"preset": "opencode"}, "ollama/x", {}) is None


def test_gemini_stream_gives_turns_usage_summary_and_served_model(tmp_path):
    events: list = []
    out = run(tmp_path, events=events, preset="gemini", model="gemini-2.5-pro",
              command=fake("gemini.py", "success", "-m", "gemini-2.5-pro"))
    assert (out.status, out.turns, out.summary) == (FINISHED, 2, "All done: F-001 implemented.")
    assert (out.usage.input_tokens, out.usage.output_tokens,
            out.usage.cache_read_input_tokens) == (300, 134, 800)
    assert out.cost_usd == pytest.approx(known_cost(out.usage, "gemini-2.5-pro", {}))
    assert out.model == "gemini-2.5-pro"
    assert [e["type"] for e in events].count("cli_event") == 8


def test_gemini_quota_is_a_limit_with_its_reset(tmp_path):
    with pytest.raises(UsageLimitReached) as caught:
        run(tmp_path, preset="gemini", command=fake("gemini.py", "quota"))
    reset = datetime.strptime(caught.value.reset_at, "%Y-%m-%dT%H:%M:%SZ")
    waited = reset.replace(tzinfo=timezone.utc) - datetime.now(timezone.utc)
    assert 0 < waited.total_seconds() <= 40


@pytest.mark.parametrize(("mode", "kind"), [("bad_key", "key"), ("no_model", "model"),
                                            ("api_key", "env")])
def test_gemini_refusals_are_the_persons_to_fix(tmp_path, mode, kind):
    with pytest.raises(CliRefused) as caught:
        run(tmp_path, preset="gemini", command=fake("gemini.py", mode))
    assert caught.value.kind == kind
    if kind == "env":
        assert "GEMINI_API_KEY" in str(caught.value) and "pass_env" in str(caught.value)


def test_opencode_stream_gives_turns_usage_and_its_own_cost(tmp_path):
    out = run(tmp_path, preset="opencode", model="anthropic/claude-sonnet-4-5",
              command=fake("opencode.py", "success"))
    assert (out.status, out.turns, out.summary) == (FINISHED, 2, "All done: F-001 implemented.")
    assert (out.usage.input_tokens, out.usage.output_tokens,
            out.usage.cache_read_input_tokens, out.usage.cache_creation_input_tokens) == (
        1500, 70, 18500, 500)
    assert out.cost_usd == pytest.approx(0.003)
    assert out.model is None  # OpenCode's events do not say, and a role's command gets none


def test_opencode_saying_zero_dollars_is_an_unknown_cost_unless_the_model_is_free():
    from harness.backends.cli_streams import OpenCodeEvents

    events = OpenCodeEvents()
    events.feed({"type": "step_start"})
    events.feed({"type": "step_finish", "part": {"cost": 0, "tokens": {"input": 10}}})
    assert events.outcome("local/qwen", {}).cost_usd is None
    free = {"local/qwen": {"input_tokens": 0.0, "output_tokens": 0.0}}
    assert events.outcome("local/qwen", free).cost_usd == 0.0


def test_opencode_failures_are_classified(tmp_path):
    with pytest.raises(UsageLimitReached) as limit:
        run(tmp_path, preset="opencode", command=fake("opencode.py", "rate_limit"))
    assert limit.value.reset_at is not None and isinstance(limit.value, BackendError)
    with pytest.raises(CliRefused) as refused:
        run(tmp_path, preset="opencode", command=fake("opencode.py", "bad_key"))
    assert refused.value.kind == "key" and "opencode auth login" in str(refused.value)


def test_presets_reach_their_cli_on_path(tmp_path):
    session = make_session(tmp_path, preset="gemini", model="gemini-2.5-flash")
    session.home = shim(tmp_path, "gemini", "gemini.py", "success")
    assert CommandBackend().run("x", session).status == FINISHED
    session = make_session(tmp_path, preset="opencode", model="claude-sonnet-4-5")
    session.home = shim(tmp_path, "opencode", "opencode.py", "success")
    out = CommandBackend().run("x", session)
    assert out.turns == 2 and out.model == "anthropic/claude-sonnet-4-5"  # what its argv named


def test_a_gemini_worker_through_run_sh(project, state, tmp_path):
    bindir = shim(tmp_path, "gemini", "gemini.py", "success")
    (state / "roles").mkdir(exist_ok=True)
    (state / "roles" / "worker.yaml").write_text(
        "template: worker.md.j2\nbackend: command\nmodel: gemini-2.5-pro\n"
        "options: {preset: gemini}\n")
    (project / "GEMINI.md").write_text("x\n")
    result = run_sh("worker", "F-004", cwd=project,
                    env={"PATH": f"{bindir}:{os.environ['PATH']}"})
    assert result.returncode == 0, result.stderr
    assert "F-004" in run_sh("runs", cwd=project).stdout
