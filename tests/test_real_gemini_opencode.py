"""The real Gemini CLI (npm @google/gemini-cli) and OpenCode (npm opencode-ai), each driven
by `run.sh worker` against a local fake API: Gemini's at GOOGLE_GEMINI_BASE_URL
(tests/fake_gemini.py), a Chat Completions one (tests/fake_openai.py) as an OpenAI-compatible
provider in an OpenCode config of its own. A run that runs a command and notes, a refused
key and an unknown model, and what each means for the exit code and the feature.

The binaries are installed by `.ci/install-agent-clis` into $HARNESS_AGENT_CLIS; without
them these tests skip, naming the reason.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import run_sh
from fake_gemini import FakeGemini
from fake_openai import FakeOpenAI, call
from test_real_clis import cli_bin, feature_status, last_manifest, worker_role

pytestmark = pytest.mark.slow  # the real CLIs: node start-up and their retries, seconds a run

NOTE = 'run.sh note TRICK "real CLI wrote out.txt"'


@pytest.fixture
def opencode(project: Path, tmp_path: Path) -> Iterator[tuple[FakeOpenAI, dict[str, str]]]:
    """A fake API and the environment that points the real OpenCode at it: its config,
    data and cache in the test's folders; no models.dev fetch, no update check. The small
    model (session titles) is one the fake does not serve, so titles take no reply."""
    folder = cli_bin("opencode")
    fake = FakeOpenAI(key="test-key", models=("gpt-test",))
    fake.start()
    config = tmp_path / "xdg-config" / "opencode" / "opencode.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({
        "small_model": "fake/no-titles",
        "provider": {"fake": {"npm": "@ai-sdk/openai-compatible", "name": "Fake",
                              "options": {"baseURL": fake.base_url, "apiKey": "test-key"},
                              "models": {"gpt-test": {"name": "gpt-test"},
                                         "no-titles": {"name": "no-titles"}}}}}))
    worker_role(project / ".harness", "fake/gpt-test", {"preset": "opencode"})
    env = {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}",
           "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
           "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
           "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
           "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
           "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
           "PWD": "/"}  # an inherited PWD elsewhere: the harness names the working directory
    try:
        yield fake, env
    finally:
        fake.stop()


def main_requests(fake: FakeOpenAI) -> list[dict]:
    return [r for r in fake.requests if r["model"] == "gpt-test"]


def test_opencode_runs_a_command_notes_and_reads_agents_md_itself(opencode, project):
    fake, env = opencode
    (project / "AGENTS.md").write_text("Use tabs.\n")
    fake.reply(None, call("bash", {"command": f"echo hi > out.txt && {NOTE}",
                                   "description": "write out.txt"}),
               prompt=1000, completion=50)
    fake.reply("F-004 done.", prompt=1200, completion=20)
    result = run_sh("worker", "F-004", cwd=project, env=env, timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (project / "out.txt").read_text() == "hi\n"
    assert "real CLI wrote out.txt" in (project / ".harness" / "raw.md").read_text()
    manifest = last_manifest(project / ".harness")
    assert manifest["turns"] == 2 and manifest["usage"]["output_tokens"] == 70
    assert manifest["model"] == "fake/gpt-test"
    assert manifest["cost_usd"] is None  # OpenCode says $0 for a model it cannot price
    prompt = (project / ".harness" / "runs" / manifest["run_id"] / "prompt.md").read_text()
    assert "Use tabs." not in prompt  # OpenCode reads AGENTS.md itself ...
    assert "Use tabs." in json.dumps(main_requests(fake)[0])  # ... and it did


@pytest.mark.parametrize(("setup", "says"), [
    (lambda f: setattr(f, "key", "another-key"), "credentials were refused"),
    (lambda f: setattr(f, "models", ["no-titles"]), "model is unknown"),
])
def test_opencode_a_refused_key_or_unknown_model_is_exit_2(opencode, project, setup, says):
    fake, env = opencode
    setup(fake)
    result = run_sh("worker", "F-004", cwd=project, env=env, timeout=180)
    assert result.returncode == 2, result.stdout + result.stderr
    assert says in result.stdout + result.stderr
    assert feature_status(project / ".harness") == "pending"


# --- Gemini CLI ---------------------------------------------------------------------------


@pytest.fixture
def gemini(project: Path, tmp_path: Path) -> Iterator[tuple[FakeGemini, dict[str, str]]]:
    """A fake Gemini API and the environment that points the real Gemini CLI at it: a home
    of its own whose settings choose the API key, which the role passes."""
    folder = cli_bin("gemini")
    fake = FakeGemini(key="test-key", models=("gemini-2.5-pro",))
    fake.start()
    settings = tmp_path / "gemini-home" / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
    worker_role(project / ".harness", "gemini-2.5-pro",
                {"preset": "gemini", "pass_env": ["GEMINI_API_KEY"]})
    env = {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}",
           "HOME": str(settings.parent.parent), "GEMINI_API_KEY": "test-key",
           "GOOGLE_GEMINI_BASE_URL": fake.base_url}
    try:
        yield fake, env
    finally:
        fake.stop()


def test_gemini_runs_a_command_notes_and_is_priced(gemini, project):
    fake, env = gemini
    fake.reply(None, {"name": "run_shell_command",
                      "args": {"command": f"echo hi > out.txt && {NOTE}", "description": "x"}},
               prompt=1000, output=50, cached=400)
    fake.reply("F-004 done.", prompt=1200, output=20, cached=1000)
    result = run_sh("worker", "F-004", cwd=project, env=env, timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (project / "out.txt").read_text() == "hi\n"
    assert "real CLI wrote out.txt" in (project / ".harness" / "raw.md").read_text()
    manifest = last_manifest(project / ".harness")
    assert manifest["turns"] == 2 and manifest["model"] == "gemini-2.5-pro"
    assert manifest["usage"]["cache_read_input_tokens"] == 1400
    assert manifest["cost_usd"] == pytest.approx((800 * 1.25 + 70 * 10 + 1400 * 0.125) / 1e6)


@pytest.mark.parametrize(("setup", "says"), [
    (lambda f: setattr(f, "key", "another-key"), "credentials were refused"),
    (lambda f: setattr(f, "models", ["gemini-2.5-flash"]), "model is unknown"),
])
def test_gemini_a_refused_key_or_unknown_model_is_exit_2(gemini, project, setup, says):
    fake, env = gemini
    setup(fake)
    result = run_sh("worker", "F-004", cwd=project, env=env, timeout=180)
    assert result.returncode == 2, result.stdout + result.stderr
    assert says in result.stdout + result.stderr
    assert feature_status(project / ".harness") == "pending"
