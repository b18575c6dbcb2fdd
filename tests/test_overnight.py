"""Left overnight, through real `run.sh` subprocesses: what cron runs is accepted by the
loop."""

import subprocess
from pathlib import Path

import pytest
from conftest import git_init, run_sh
from test_loop import pending


@pytest.fixture
def mission(project: Path, state: Path) -> Path:
    git_init(project)
    pending(state, "F-004")
    return state


@pytest.mark.parametrize("preset", ["gemini", "opencode"])
def test_the_cron_line_for_any_preset_is_one_the_loop_takes(project: Path, mission: Path,
                                                            preset: str) -> None:
    (mission / "roles").mkdir(exist_ok=True)
    for role in ("worker", "validator"):
        (mission / "roles" / f"{role}.yaml").write_text(
            f"backend: command\noptions: {{preset: {preset}}}\n")
    cron = run_sh("cron", cwd=project)
    line = next(x for x in cron.stdout.splitlines() if x.startswith("*/30"))
    assert f"loop --backend command --preset {preset}" in line
    command = line.split(" ", 5)[5].split(" >> ")[0] + " --until 2001-01-01T00:00Z"
    result = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr  # not a usage error (2)
    assert "--until 2001-01-01T00:00+00:00 reached" in result.stdout
