"""A canary secret in the environment, printed by a tool during a run, reaches no record."""

from pathlib import Path

from conftest import run_sh

CANARIES = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-CANARYcanaryCANARYcanary0001",
    "GITHUB_TOKEN": "ghp_CANARYcanaryCANARYcanaryCANARY000002",
    "DEPLOY_SECRET": "canary-deploy-secret-0003",
}
SHAPED = "AKIAIOSFODNN7CANARY4"  # an AWS key id nobody put in the environment


def test_canaries_appear_nowhere_under_the_state_directory(project: Path, tmp_path: Path) -> None:
    state = project / ".harness"
    secrets_file = project / "secrets.env"
    secrets_file.write_text("".join(f"{k}={v}\n" for k, v in CANARIES.items()) + SHAPED + "\n")
    script = tmp_path / "leaky.yaml"
    script.write_text(f"""
- text: "reading {CANARIES['DEPLOY_SECRET']} from the env file"
  tools:
    - {{name: bash, input: {{command: "cat secrets.env; env | sort"}}}}
    - {{name: note, input: {{kind: GOTCHA, text: "the key is {CANARIES['GITHUB_TOKEN']}"}}}}
- tools:
    - {{name: finish, input: {{summary: "used {CANARIES['ANTHROPIC_API_KEY']} and {SHAPED}"}}}}
""")
    result = run_sh("worker", "F-004", "--backend", "scripted", "--script", str(script),
                    cwd=project, env=CANARIES)
    assert result.returncode == 0, result.stderr
    assert run_sh("note", "-", f"pasted {CANARIES['DEPLOY_SECRET']}", cwd=project,
                  env=CANARIES).returncode == 0
    transcript = next(state.glob("runs/*/transcript.jsonl")).read_text()
    assert transcript.count("[REDACTED]") >= 4  # the values were there, masked
    assert "cat secrets.env" in transcript  # the tool really ran and its output was recorded
    for path in state.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for value in [*CANARIES.values(), SHAPED]:
                assert value.encode() not in data, f"{value} leaked into {path}"


def test_the_agents_tools_never_see_secret_variables(project: Path, tmp_path: Path) -> None:
    script = tmp_path / "env.yaml"
    script.write_text("- tools: [{name: bash, input: {command: 'env > seen-env.txt'}}]\n"
                      "- tools: [{name: finish, input: {summary: done}}]\n")
    result = run_sh("worker", "F-004", "--backend", "scripted", "--script", str(script),
                    cwd=project, env=CANARIES)
    assert result.returncode == 0, result.stderr
    seen = (project / "seen-env.txt").read_text()
    for name in CANARIES:
        assert f"{name}=" not in seen
    assert "PATH=" in seen


def test_a_project_doc_linked_into_the_state_is_not_read_into_the_prompt(project: Path) -> None:
    """`AGENTS.md -> .harness/env` (a link the agent can leave in its tree without reaching
    its target) would put the env file, secrets and all, before the model; `CLAUDE.md ->
    .harness/config.yaml` the state's config."""
    (project / ".harness" / "env").write_text("OPENAI_API_KEY=sk-CANARY0004\nPLAIN=canary-0005\n")
    (project / "AGENTS.md").symlink_to(".harness/env")
    (project / "CLAUDE.md").symlink_to("./.harness/config.yaml")
    result = run_sh("worker", "F-004", "--dry-run", cwd=project)
    assert result.returncode == 0, result.stderr
    prompt = next((project / ".harness").glob("runs/*/prompt.md")).read_text()
    assert "OPENAI_API_KEY" not in prompt and "canary-0005" not in prompt
    assert "Mission config" not in prompt
