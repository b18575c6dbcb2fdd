"""The real agent CLIs (npm's @openai/codex and @anthropic-ai/claude-code), each driven by a
real `run.sh worker` against a local fake API: a run that does work, a server error, a
refused key, an unknown model and a usage limit, and what each means for the exit code,
the feature and the no-progress rule.

The binaries are installed by `.ci/install-agent-clis` into $HARNESS_AGENT_CLIS (default
~/.cache/autonomous-harness/agent-clis); without them these tests skip, naming the reason.
The stand-ins in tests/fake_clis cover what the real binaries cannot be made to produce.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import assert_unsure_pair_judged_one, git_init, model_mode_curator, run_sh
from fake_api import FakeAPI, text, tool_use
from fake_responses import FakeResponses, codex_home, message, shell_call

pytestmark = pytest.mark.slow  # the real CLIs: node start-up and their retries, seconds a run

CLIS = Path(os.environ.get("HARNESS_AGENT_CLIS",
                           Path.home() / ".cache" / "autonomous-harness" / "agent-clis"))
NOTE = 'run.sh note TRICK "real CLI wrote out.txt"'


def cli_bin(name: str) -> Path:
    """The folder holding the installed CLI `name`; skips the test when it is not there."""
    folder = CLIS / "node_modules" / ".bin"
    if not os.access(folder / name, os.X_OK):
        pytest.skip(f"{name} is not installed in {CLIS} (run .ci/install-agent-clis)")
    if name == "codex" and not shutil.which("node"):
        pytest.skip("codex's npm launcher needs node, which is not on PATH")
    return folder


def worker_role(state: Path, model: str, options: dict) -> None:
    (state / "roles").mkdir(exist_ok=True)
    (state / "roles" / "worker.yaml").write_text(
        f"template: worker.md.j2\nbackend: command\nmodel: {model}\n"
        f"caps: {{wall_seconds: 120, dollars: 1}}\noptions: {json.dumps(options)}\n")


def feature_status(state: Path, fid: str = "F-004") -> str:
    plan = json.loads((state / "features.json").read_text())
    return next(f["status"] for f in plan if f["id"] == fid)


def last_manifest(state: Path) -> dict:
    folder = sorted((state / "runs").iterdir())[-1]
    return json.loads((folder / "manifest.json").read_text())


# --- Codex ------------------------------------------------------------------------------


@pytest.fixture
def codex(project: Path, tmp_path: Path) -> Iterator[tuple[FakeResponses, dict[str, str]]]:
    """A fake Responses API and the environment that points the real Codex at it. Codex's
    own sandbox is off: it will not set up its helper under a CODEX_HOME in /tmp."""
    folder = cli_bin("codex")
    fake = FakeResponses()
    fake.start()
    home = codex_home(tmp_path / "codex-home", fake.base_url)
    worker_role(project / ".harness", "gpt-5-codex", {
        "preset": "codex", "sandbox": "danger-full-access", "pass_env": ["OPENAI_API_KEY"]})
    env = {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}", "CODEX_HOME": str(home),
           "OPENAI_API_KEY": "sk-test"}
    try:
        yield fake, env
    finally:
        fake.stop()


def test_codex_outside_a_repository_runs_a_command_notes_and_is_priced(codex, project):
    fake, env = codex
    fake.reply(shell_call(f"echo hi > out.txt && {NOTE}"), input=1000, cached=400, output=50)
    fake.reply(message("F-004 done."), input=1200, cached=1000, output=20)
    result = run_sh("worker", "F-004", cwd=project, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (project / "out.txt").read_text() == "hi\n"
    assert "real CLI wrote out.txt" in (project / ".harness" / "raw.md").read_text()
    manifest = last_manifest(project / ".harness")
    assert manifest["usage"]["cache_read_input_tokens"] == 1400
    assert manifest["cost_usd"] == pytest.approx((800 * 1.25 + 70 * 10 + 1400 * 0.125) / 1e6)
    # the role's model went to the API, and AGENTS.md was left to Codex
    assert {r["body"]["model"] for r in fake.requests} == {"gpt-5-codex"}


def test_codex_choosing_its_own_model_has_an_unknown_cost_never_zero(codex, project):
    fake, env = codex
    worker_role(project / ".harness", "claude-sonnet-4-5", {  # the harness's default model
        "preset": "codex", "sandbox": "danger-full-access", "pass_env": ["OPENAI_API_KEY"]})
    fake.reply(message("F-004 done."))
    assert run_sh("worker", "F-004", cwd=project, env=env).returncode == 0
    manifest = last_manifest(project / ".harness")
    assert (manifest["cost_usd"], manifest["cost_unknown"]) == (None, True)
    assert "cost=unknown" in (project / ".harness" / "progress.log").read_text()
    assert fake.requests[0]["body"]["model"] == "gpt-5-codex"  # CODEX_HOME's, not Claude's
    assert manifest["model"] == "gpt-5-codex"  # recorded as Codex reports it, not the role's


def test_codex_server_errors_are_exit_6_and_never_block_the_feature(codex, project):
    fake, env = codex
    git_init(project)
    for _ in range(4):  # more than stuck_after (3): no run is an attempt
        fake.error(500, "server_error", "boom", kind="server_error")
        result = run_sh("worker", "F-004", cwd=project, env=env)
        assert result.returncode == 6, result.stdout + result.stderr
    assert feature_status(project / ".harness") != "blocked"
    fake.fail("server_error", "The model failed")
    assert run_sh("worker", "F-004", cwd=project, env=env).returncode == 6


@pytest.mark.parametrize(("setup", "says"), [
    (lambda f: f.error(401, "invalid_api_key", "Incorrect API key provided: sk-test."),
     "credentials were refused"),
    (lambda f: f.error(404, "model_not_found",
                       "The model `gpt-5-codex` does not exist or you do not have access to it."),
     "model is unknown"),
])
def test_codex_a_refused_key_or_unknown_model_is_a_usage_error_naming_the_fix(
        codex, project, setup, says):
    fake, env = codex
    setup(fake)
    result = run_sh("worker", "F-004", cwd=project, env=env)
    assert result.returncode == 2, result.stdout + result.stderr
    assert says in result.stdout + result.stderr
    assert feature_status(project / ".harness") == "pending"


def test_codex_a_key_not_passed_names_the_variable_to_pass(codex, project):
    _, env = codex
    worker_role(project / ".harness", "gpt-5-codex",  # a role that passes no key
                {"preset": "codex", "sandbox": "danger-full-access", "pass_env": []})
    result = run_sh("worker", "F-004", cwd=project, env=env)
    assert result.returncode == 2
    said = " ".join((result.stdout + result.stderr).split())
    assert ("OPENAI_API_KEY is set, but no secret reaches the CLI unless asked: add `options: "
            f"{{pass_env: [OPENAI_API_KEY]}}` to {project / '.harness/roles/worker.yaml'}") in said


def test_codex_quickstart_line_passes_the_exported_key(codex, project):
    """The README's `run.sh validator next --backend command --preset codex` with
    OPENAI_API_KEY exported; the one-line role file only turns Codex's own sandbox off,
    which cannot start under a CODEX_HOME in /tmp."""
    fake, env = codex
    state = project / ".harness"
    (state / "roles" / "worker.yaml").unlink()
    (state / "roles" / "validator.yaml").write_text("options: {sandbox: danger-full-access}\n")
    plan = json.loads((state / "features.json").read_text())
    plan[3]["status"] = "in_progress"
    del plan[3]["verify"]  # the example project has no F-004 yet; the verdict alone decides
    (state / "features.json").write_text(json.dumps(plan))
    fake.reply(message('{"verdict": "pass", "reason": "F-004 works", "notes": []}'))
    result = run_sh("validator", "next", "--backend", "command", "--preset", "codex",
                    cwd=project, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert feature_status(state) == "done"
    assert fake.requests[0]["authorization"] == "Bearer sk-test"


def test_codex_retries_are_shown_as_they_come(codex, project, tmp_path):
    fake, env = codex
    config = Path(env["CODEX_HOME"]) / "config.toml"
    config.write_text(config.read_text().replace("stream_max_retries = 0",
                                                 "stream_max_retries = 2"))
    fake.fail("server_error", "boom")
    fake.fail("server_error", "boom")
    fake.reply(message("F-004 done."))
    result = run_sh("worker", "F-004", cwd=project, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "retrying 1/2: stream disconnected before completion: boom" in result.stderr
    assert "retrying 2/2: stream disconnected before completion: boom" in result.stderr


def test_codex_a_usage_limit_is_exit_6_with_its_reset_time(codex, project):
    fake, env = codex
    fake.error(429, None, "The usage limit has been reached", kind="usage_limit_reached",
               plan_type="plus", resets_at=1799999999, resets_in_seconds=3600)
    result = run_sh("worker", "F-004", cwd=project, env={**env, "TZ": "UTC"})
    assert result.returncode == 6
    assert last_manifest(project / ".harness")["reset_at"] == "2027-01-15T07:59:00Z"


# --- Claude Code ------------------------------------------------------------------------


@pytest.fixture
def claude(api: FakeAPI, project: Path, tmp_path: Path) -> dict[str, str]:
    """The environment that points the real Claude Code at the fake Messages API. HOME is
    empty: Claude Code's shell reads the user's profile, and one that rewrites PATH loses
    run.sh's folder (see docs/backends.md)."""
    folder = cli_bin("claude")
    worker_role(project / ".harness", "claude-sonnet-4-5",
                {"preset": "claude", "pass_env": ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"]})
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}",
            "ANTHROPIC_BASE_URL": api.base_url, "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
            "HOME": str(tmp_path / "home"),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "CLAUDE_CODE_MAX_RETRIES": "0"}


def test_claude_runs_a_command_and_notes(claude, api, project):
    api.reply(tool_use("Bash", {"command": f"echo hi > out.txt && {NOTE}"}),
              input=1000, output=50)
    api.reply(text("F-004 done."), input=1100, output=20)
    result = run_sh("worker", "F-004", cwd=project, env=claude)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (project / "out.txt").read_text() == "hi\n"
    assert "real CLI wrote out.txt" in (project / ".harness" / "raw.md").read_text()
    assert last_manifest(project / ".harness")["turns"] == 2
    assert last_manifest(project / ".harness")["model"] == "claude-sonnet-4-5"


def test_claude_quickstart_line_passes_the_exported_key(claude, api, project):
    """The README's `export ANTHROPIC_API_KEY=...; run.sh worker next --backend command
    --preset claude`, with no role file at all."""
    (project / ".harness" / "roles" / "worker.yaml").unlink()
    api.reply(text("F-004 done."), input=1100, output=20)
    result = run_sh("worker", "next", "--backend", "command", "--preset", "claude",
                    cwd=project, env=claude)
    assert result.returncode == 0, result.stdout + result.stderr
    assert api.headers[-1].get("x-api-key") == "test-key"


@pytest.mark.parametrize(("status", "kind", "message", "code", "says"), [
    (500, "api_error", "Internal server error", 6, "model service failed"),
    (529, "overloaded_error", "Overloaded", 6, "model service failed"),
    (401, "authentication_error", "invalid x-api-key", 2, "credentials were refused"),
    (404, "not_found_error", "model: claude-sonnet-4-5", 2, "model is unknown"),
    (429, "rate_limit_error", "This request would exceed your account's rate limit.", 6,
     "usage limit"),
])
def test_claude_service_errors_map_to_the_contract(claude, api, project, status, kind,
                                                   message, code, says):
    git_init(project)
    for _ in range(4 if code == 6 else 1):  # more than stuck_after: none is an attempt
        api.error(status, kind, message, headers={"x-should-retry": "false"}, times=3)
        result = run_sh("worker", "F-004", cwd=project, env=claude)
        assert result.returncode == code, result.stdout + result.stderr
        assert says in result.stdout + result.stderr
    assert feature_status(project / ".harness") == "pending"


def test_claude_retries_are_shown_as_they_come(claude, api, project):
    api.error(500, "api_error", "Internal server error", times=2)
    api.reply(text("F-004 done."))
    result = run_sh("worker", "F-004", cwd=project,
                    env={**claude, "CLAUDE_CODE_MAX_RETRIES": "2"})
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if "retrying" in line]
    assert [line.split(": ", 2)[2].split(" in ")[0] for line in lines] == [
        "retrying 1/2", "retrying 2/2"]
    assert all(line.endswith(f": server_error (HTTP 500), {api.base_url}") for line in lines)


def test_claude_not_given_the_exported_key_is_exit_2_naming_the_variable_and_the_file(
        claude, api, project):
    worker_role(project / ".harness", "claude-sonnet-4-5",  # a role that passes no key
                {"preset": "claude", "pass_env": []})
    result = run_sh("worker", "F-004", cwd=project, env=claude)
    assert result.returncode == 2, result.stdout + result.stderr
    said = " ".join((result.stdout + result.stderr).split())
    assert "Not logged in" in said
    assert ("ANTHROPIC_API_KEY is set but not passed to the CLI: add `options: {pass_env: "
            f"[ANTHROPIC_API_KEY]}}` to {project / '.harness/roles/worker.yaml'}") in said
    assert api.requests == [] and feature_status(project / ".harness") == "pending"


def test_doctor_asks_the_real_claude_code_its_login_and_proves_the_key_it_is_given(
        claude, api, project):
    state = project / ".harness"
    worker_role(state, "claude-sonnet-4-5", {"preset": "claude", "pass_env": []})  # no key
    result = run_sh("doctor", "--no-cron", cwd=project, env=claude)
    said = " ".join(result.stdout.split())
    assert result.returncode == 2 and "FAIL auth worker: claude: not logged in" in said
    role_file = state / "roles" / "worker.yaml"
    assert f"add `options: {{pass_env: [ANTHROPIC_API_KEY]}}` to {role_file}" in said
    worker_role(state, "claude-sonnet-4-5",
                {"preset": "claude", "pass_env": ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"]})
    api.keys = {"test-key"}
    result = run_sh("doctor", "--no-cron", cwd=project, env=claude)
    assert "ok    auth worker: claude: the API takes the key in ANTHROPIC_API_KEY" in result.stdout
    assert api.counted and not [r for r in api.requests if r not in api.counted]  # free only


def test_doctor_asks_the_real_codex_its_login(codex, project):
    _, env = codex
    result = run_sh("doctor", "--no-cron", cwd=project, env=env)
    said = " ".join(result.stdout.split())
    assert "warn auth worker: codex: not logged in" in said
    assert "OPENAI_API_KEY is passed to it" in said


# --- a read-only validator: the verdict and notes as the CLI's structured answer --------


def validator_role(state: Path, model: str, options: dict) -> None:
    plan = json.loads((state / "features.json").read_text())
    for f in plan:
        if f["id"] == "F-004":
            f.update(status="in_progress", verify=None)
    (state / "features.json").write_text(json.dumps(plan))
    (state / "roles").mkdir(exist_ok=True)
    (state / "roles" / "validator.yaml").write_text(
        f"template: validator.md.j2\nbackend: command\nmodel: {model}\n"
        "tools: [bash, note, verdict, finish]\n"
        f"caps: {{wall_seconds: 120, dollars: 1}}\noptions: {json.dumps(options)}\n")


ANSWER = {"verdict": "pass", "reason": "F-004's --json output parses",
          "notes": [{"kind": "TRICK", "text": "python3 -m app --json | jq . checks it"}]}


def assert_answer_recorded(state: Path) -> None:
    ledger = (state / "ledger" / "F-004.jsonl").read_text().splitlines()
    assert json.loads(ledger[-1])["verdict"] == "pass"
    assert json.loads(ledger[-1])["reason"] == ANSWER["reason"]
    assert "validator F-004 TRICK: python3 -m app --json | jq . checks it" in (
        state / "raw.md").read_text()
    assert feature_status(state) == "done"


def test_codex_read_only_validator_gives_its_verdict_and_notes_as_its_answer(codex, project):
    fake, env = codex
    state = project / ".harness"
    validator_role(state, "gpt-5-codex", {"preset": "codex", "sandbox": "read-only",
                                          "pass_env": ["OPENAI_API_KEY"]})
    fake.reply(message(json.dumps(ANSWER)))
    result = run_sh("validator", "F-004", cwd=project, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert_answer_recorded(state)
    # Codex sent the schema to the API as the response's format
    fmt = fake.requests[0]["body"]["text"]["format"]
    assert fmt["type"] == "json_schema" and fmt["schema"]["required"] == [
        "verdict", "reason", "notes"]


def test_claude_validator_without_a_shell_gives_its_verdict_and_notes_as_its_answer(
        claude, api, project):
    state = project / ".harness"
    validator_role(state, "claude-sonnet-4-5", {
        "preset": "claude", "allowed_tools": ["Read"],
        "pass_env": ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"]})
    api.reply(tool_use("StructuredOutput", ANSWER), input=1000, output=50)
    result = run_sh("validator", "F-004", cwd=project, env=claude)
    assert result.returncode == 0, result.stdout + result.stderr
    assert_answer_recorded(state)
    tools = {t["name"]: t for t in api.requests[0]["tools"]}
    assert tools["StructuredOutput"]["input_schema"]["required"] == ["verdict", "reason", "notes"]


CURATION = {"summary": "s", "memory": "m", "promotions": [], "same": [1]}


def curator_role(state: Path, model: str, options: dict) -> None:
    """Model mode over the unsure pair, with the curator on an agent CLI."""
    model_mode_curator(state, f"template: curator.md.j2\nbackend: command\nmodel: {model}\n"
                       "tools: [curation, finish]\n"
                       f"caps: {{wall_seconds: 120, dollars: 1}}\noptions: {json.dumps(options)}\n")


def test_codex_curator_answers_same_lesson_in_its_answer(codex, project, isolated_env):
    fake, env = codex
    curator_role(project / ".harness", "gpt-5-codex", {
        "preset": "codex", "sandbox": "read-only", "pass_env": ["OPENAI_API_KEY"]})
    fake.reply(message(json.dumps(CURATION)))
    result = run_sh("curator", cwd=project, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert_unsure_pair_judged_one(isolated_env)
    fmt = fake.requests[0]["body"]["text"]["format"]
    assert fmt["schema"]["required"] == ["summary", "memory", "promotions", "same"]


def test_claude_curator_answers_same_lesson_in_its_answer(claude, api, project, isolated_env):
    curator_role(project / ".harness", "claude-sonnet-4-5", {
        "preset": "claude", "allowed_tools": ["Read"],
        "pass_env": ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"]})
    api.reply(tool_use("StructuredOutput", CURATION), input=1000, output=50)
    result = run_sh("curator", cwd=project, env=claude)
    assert result.returncode == 0, result.stdout + result.stderr
    assert_unsure_pair_judged_one(isolated_env)
    assert "Same lesson?" in json.dumps(api.requests[0]["messages"])
