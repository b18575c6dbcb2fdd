"""The docs' commands run as written: the README's quickstart (`./run.sh demo`, with the
output the README shows) and docs/scripted.md's example. The commands are read from the
markdown, so a change there that breaks them fails here."""

import os
import re
import shutil
import subprocess
from pathlib import Path

from conftest import HARNESS_VARS, ROOT, RUN_SH

INSTALLED = "~/autonomous-harness/run.sh"  # where the docs assume the harness lives


def blocks(markdown: str, after: str) -> list[tuple[str, str]]:
    """The fenced blocks (language, text) of the section whose heading is `after`."""
    section = markdown.split(f"\n{after}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```(\w*)\n(.*?)```", section, re.S)


def shell_env(tmp_path: Path) -> dict[str, str]:
    """The caller's environment without the harness's variables; identity in `tmp_path`."""
    env = {k: v for k, v in os.environ.items() if k not in HARNESS_VARS}
    env["HARNESS_IDENTITY_DIR"] = str(tmp_path / "identity")
    return env


def normalised(line: str) -> str:
    """A line of output with what differs between runs masked: temp folders, run ids (and
    the suffix a run id gets when another run of its role started in the same second),
    commits and durations."""
    line = re.sub(r"/tmp/harness-demo-\w+", "DIR", line.rstrip())
    line = re.sub(r"\b(\d{9,}-\w+-(?:F-\d+|mission))-\d+\b", r"\1", line)
    line = re.sub(r"\(\d+\.\d s\)", "(T)", line)
    return re.sub(r"\b(\d{9,}|[0-9a-f]{10})\b", "N", line)


def test_readme_quickstart_demo_runs_as_written(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands, shown = blocks(readme, "## Quickstart")[:2]
    assert commands[0] == "sh" and shown[0] == "text"
    demo = next(line for line in commands[1].splitlines() if "demo" in line)
    command = demo.split("#")[0].strip()
    assert command == "./run.sh demo"
    result = subprocess.run(command, shell=True, cwd=ROOT, env=shell_env(tmp_path),
                            capture_output=True, text=True, timeout=300)
    folder = re.search(r"setting up the demo mission in (\S+)", result.stdout)
    if folder:
        shutil.rmtree(folder[1], ignore_errors=True)
    assert result.returncode == 0, result.stdout + result.stderr
    printed = [normalised(line) for line in result.stdout.splitlines()]
    for line in shown[1].splitlines():  # the README's trimmed lines end in "..."
        want = normalised(line)
        if want.endswith(" ..."):
            assert any(p.startswith(want[:-4]) for p in printed), line
        else:
            assert want in printed, line


def test_scripted_example_runs_as_written(tmp_path: Path) -> None:
    page = (ROOT / "docs" / "scripted.md").read_text(encoding="utf-8")
    (lang, script), (_, shown) = blocks(page, "## A runnable example")[:2]
    assert lang == "sh" and INSTALLED in script
    result = subprocess.run(["bash", "-e", "-c", script.replace(INSTALLED, str(RUN_SH))],
                            cwd=tmp_path, env=shell_env(tmp_path), capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "F-001    done         greeting file" in result.stdout
    assert "F-001 passed: hello.txt says hi; verify passes" in result.stdout
    for line in shown.splitlines():  # what the page says it prints, but the sandbox line
        if not line.startswith("sandbox:"):  # (which says whether bwrap works here)
            assert normalised(line.replace("/tmp/sx", str(tmp_path))) in {
                normalised(p) for p in result.stdout.splitlines()}, line
    assert (tmp_path / "hello" / "hello.txt").read_text() == "hi\n"


def test_readme_own_project_setup_leaves_a_tree_a_run_starts_on(tmp_path: Path) -> None:
    """The README's "Your own project" setup, as written, in a repository with a commit:
    then a worker run (scripted here, where the README's runs call a model) starts, which
    it does only on a tree holding no changes but its own."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = blocks(readme, "## Your own project")[0][1]
    assert f"{INSTALLED} init" in setup
    steps = [line for line in setup.splitlines() if not line.startswith("$EDITOR")]
    project = tmp_path / "proj"
    project.mkdir()
    (project / "app.py").write_text("print('hi')\n")
    env = {**shell_env(tmp_path), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    (tmp_path / "plan.json").write_text(
        '[{"id": "F-001", "title": "t", "description": "d", "acceptance_criteria": ["a"]}]')
    (tmp_path / "w.yaml").write_text("- tools: [{name: bash, input: {command: 'echo y > b'}}]\n")
    script = "\n".join(["git init -q && git add -A && git commit -qm init", *steps,
                        f"{INSTALLED} plan {tmp_path}/plan.json",
                        f"{INSTALLED} worker next --backend scripted --script {tmp_path}/w.yaml"])
    result = subprocess.run(["bash", "-e", "-c", script.replace(INSTALLED, str(RUN_SH))],
                            cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "F-001 awaits validation; committed" in result.stdout
