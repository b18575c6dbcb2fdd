"""Loops in `workspace: worktrees`: 8 features whose scripted turns each take 1 s, run to the
end by 1 loop and by 4 loops at once (a shell loop of worker and validator runs, real run.sh
subprocesses, started with xargs -P), and the disk one feature's worktree takes.

    .venv/bin/python bench/worktrees.py [--rounds 3]     (bench/run includes it)

Rounds alternate 1 loop and 4 loops so a noisy machine slows both alike; the figures are
medians.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN_SH = ROOT / "run.sh"
FEATURES = 8
# a shell loop of worker and validator runs, as a person would write it
LOOP = """
while :; do
  "$RUN_SH" worker next --backend scripted --script "$WORK" >/dev/null 2>&1; w=$?
  "$RUN_SH" validator next --backend scripted --script "$JUDGE" >/dev/null 2>&1; v=$?
  case "$w$v" in
    55|4?|?4) break ;;
    *0*|*1*) ;;
    *) sleep 1 ;;
  esac
done
"""
WORK = """
- tools: [{name: bash, input: {command: 'sleep 1; echo "$FEATURE_ID" > "own-$FEATURE_ID.txt"'}}]
- tools: [{name: bash, input: {command: sleep 1}}, {name: finish, input: {summary: done}}]
"""
JUDGE = """
- tools: [{name: bash, input: {command: sleep 1}},
          {name: verdict, input: {verdict: pass, reason: the file is there}}]
"""


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


def mission(root: Path, content: Path | None = None) -> Path:
    """A git project on main, workspace: worktrees, FEATURES pending features."""
    project = root / "project"
    state = project / ".harness"
    state.mkdir(parents=True)
    if content is not None:
        shutil.copytree(content, project / content.name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    (project / ".gitignore").write_text(".harness/\n")
    (project / "README").write_text("bench project\n")
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    git(project, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "init")
    (state / "config.yaml").write_text("workspace: worktrees\n")
    (state / "features.json").write_text(json.dumps([
        {"id": f"F-{i:03d}", "title": f"file {i}", "description": "Write its own file.",
         "acceptance_criteria": ["the file exists"], "verify": f"test -f own-F-{i:03d}.txt"}
        for i in range(1, FEATURES + 1)]))
    for name in ("raw.md", "summary.md", "MEMORY.md"):
        (state / name).write_text("")
    (root / "work.yaml").write_text(WORK)
    (root / "judge.yaml").write_text(JUDGE)
    return project


def run_loops(loops: int) -> float:
    """Seconds for `loops` loops to take FEATURES features from pending to merged."""
    with tempfile.TemporaryDirectory(prefix="bench-loops-") as tmp:
        root = Path(tmp)
        project = mission(root)
        env = {**os.environ, "RUN_SH": str(RUN_SH), "WORK": str(root / "work.yaml"),
               "JUDGE": str(root / "judge.yaml")}
        env.pop("HARNESS_STATE", None)
        started = time.perf_counter()
        subprocess.run(["xargs", "-P", str(loops), "-I{}", "sh", "-c", LOOP],
                       input="\n".join(map(str, range(loops))) + "\n", text=True,
                       cwd=project, env=env, check=True)
        took = time.perf_counter() - started
        plan = json.loads((project / ".harness" / "features.json").read_text())
        merged = git(project, "ls-tree", "--name-only", "main").split()
        if any(f["status"] != "done" for f in plan) or sum(
                name.startswith("own-") for name in merged) != FEATURES:
            sys.exit(f"bench: {loops} loop(s) did not merge every feature: {plan}")
        return took


def disk_per_worktree() -> tuple[int, int, int]:
    """KiB of one feature's worktree (its checkout, its admin folder) and of the objects
    the repository shares with it, on a project holding a copy of harness/."""
    with tempfile.TemporaryDirectory(prefix="bench-wt-") as tmp:
        root = Path(tmp)
        project = mission(root, content=ROOT / "harness")
        git(project, "gc", "-q")
        subprocess.run([str(RUN_SH), "worker", "F-001", "--backend", "scripted", "--script",
                        str(root / "work.yaml")], cwd=project, check=True,
                       capture_output=True)
        return (du(project / ".harness" / "worktrees" / "F-001"),
                du(project / ".git" / "worktrees" / "F-001"), du(project / ".git" / "objects"))


def du(path: Path) -> int:
    return int(subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True,
                              check=True).stdout.split()[0])


def figures(rounds: int) -> list[tuple[str, str, str, bool | None]]:
    """(figure, measured, goal, met) rows."""
    one, four = [], []
    for n in range(rounds):
        print(f"bench: loops round {n + 1} of {rounds}: 1 loop, then 4", file=sys.stderr,
              flush=True)
        one.append(run_loops(1))
        four.append(run_loops(4))
    a, b = statistics.median(one), statistics.median(four)
    tree, admin, objects = disk_per_worktree()
    return [
        (f"{FEATURES} features, 1 s turns, 1 loop, worktrees, median of {rounds}",
         f"{a:.1f} s", "", None),
        (f"{FEATURES} features, 1 s turns, 4 loops (xargs -P 4), median of {rounds}",
         f"{b:.1f} s", "", None),
        ("  4 loops / 1 loop", f"{b / a:.2f}x", "≤ 0.35x", b / a <= 0.35),
        ("disk per worktree (project = a copy of harness/): checkout + admin",
         f"{tree} + {admin} KiB", "", None),
        ("  repository objects, shared by every worktree, not copied", f"{objects} KiB", "",
         None),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    for figure, measured, goal, met in figures(args.rounds):
        mark = "" if met is None else (" met" if met else " NOT met")
        print(f"{figure:<75} {measured:>14} {goal}{mark}")


if __name__ == "__main__":
    main()
