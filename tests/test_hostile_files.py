"""Files a person or an agent left in a shape no reader expects (a folder, a fifo, a YAML
bomb), through real run.sh runs: a clear exit 2 naming the file, or the file passed over;
never a traceback, a hang or a wrong exit code (issue 31, round 3)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_sh


@pytest.mark.parametrize("name, role", [("AGENTS.md", "worker"), ("CLAUDE.md", "worker"),
                                        (".harness/spec.md", "planner")])
def test_a_project_doc_that_is_a_folder_is_passed_over(project: Path, name: str,
                                                       role: str) -> None:
    """An agent's `mkdir AGENTS.md` stopped every later run with exit 2, 'run.sh: 5: Is a
    directory' (a file descriptor, not a name)."""
    (project / name).unlink(missing_ok=True)
    (project / name).mkdir()
    args = [role, "F-004", "--dry-run"] if role == "worker" else [role, "--dry-run"]
    result = run_sh(*args, cwd=project)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
