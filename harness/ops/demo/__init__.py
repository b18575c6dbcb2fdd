"""`run.sh demo`: a whole mission cycle, offline, with the scripted backend.

Copies `.harness.example/` and the tiny `textstats` project into a fresh folder, makes it a
git repository, and runs planner, worker, validator (fail), worker (sees the fail), validator
(pass) and the curator, exactly as `run.sh` would, each from the state on disk.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.paths import Paths
from harness.run.runner import run_role
from harness.state.plan import load_plan

HERE = Path(__file__).resolve().parent
STEPS = (  # role, feature, script, the exit code a correct harness gives
    ("planner", None, "planner.yaml", 0),
    ("worker", "F-004", "worker-1.yaml", 0),
    ("validator", "F-004", "validator-1.yaml", 1),
    ("worker", "F-004", "worker-2.yaml", 0),
    ("validator", "F-004", "validator-2.yaml", 0),
)


@dataclass
class Step:
    role: str
    feature: str | None
    exit_code: int
    expected: int
    run_id: str | None
    message: str


def make_project(base: Path, home: Path) -> Paths:
    """The demo project as a git repository, with the example mission as its state."""
    project = base / "textstats"
    shutil.copytree(HERE / "project", project, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(home / ".harness.example", project / ".harness")
    with open(project / ".harness" / "config.yaml", "a", encoding="utf-8") as config:
        # offline: no model judges the demo's lessons, even with a key in the environment
        config.write("curator: {judge: off}\n")
    # the demo's lessons stay in the demo: a folder of its own, not the person's identity
    (base / "identity").mkdir()
    shutil.copy(home / "identity" / "README.md", base / "identity" / "README.md")
    (project / ".gitignore").write_text(".harness/\n__pycache__/\n")
    git = ["git", "-C", str(project), "-c", "user.name=demo", "-c", "user.email=demo@localhost"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "textstats with F-001..F-003"], check=True)
    return Paths(home=home, state=project / ".harness", workdir=project,
                 identity=base / "identity")


def demo_steps(paths: Paths) -> Iterator[Step]:
    """Run the demo's role steps one by one, yielding each as it ends."""
    for role, feature, script, expected in STEPS:
        result = run_role(paths, role, feature, backend="scripted",
                          backend_options={"script": str(HERE / "scripts" / script)})
        yield Step(role, feature, result.exit_code, expected, result.run_id, result.message)


def run_demo(home: Path, base: Path | None = None) -> tuple[Paths, list[Step]]:
    """Run every step of the demo; returns where it ran and how each step ended."""
    paths = make_project(base or Path(tempfile.mkdtemp(prefix="harness-demo-")), home)
    return paths, list(demo_steps(paths))


def curate_demo(paths: Paths) -> str:
    """The curator pass over the demo mission; its report."""
    from harness.run.curation import run_curator

    return run_curator(paths).describe()


def feature_status(paths: Paths, fid: str) -> str:
    return next(f.status for f in load_plan(paths.state) if f.id == fid)
