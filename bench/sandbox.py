"""The sandbox's cost: a bash tool call with and without bwrap, medians of 50.

    .venv/bin/python bench/sandbox.py            # 50 calls of each kind
    .venv/bin/python bench/sandbox.py --calls 200

"call" is one `bash` tool call (`true`) in a shell that is already running, as every call
after a run's first is. "first call" also starts the shell and stops it afterwards, as a
run's first call (or one after a timeout) does: under bwrap that is bwrap's setup and the
namespace's teardown; with `sandbox: none` it is the keeper's start (a Python process that
stops what the shell left when the harness dies); "none, no keeper" is the bare bash that
ran before the keeper, for comparison. The kinds are interleaved call by call, so a noisy
machine slows each alike. "git on the tree" is one git command the harness runs on the
agent's tree (`git status`; a worker's commit runs about ten): with `sandbox: bwrap` it runs
in the agent's sandbox, under the keeper, so that nothing the agent configured in `.git`
runs outside.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.agent.sandbox import bwrap_problem  # noqa: E402 - after the path is set
from harness.agent.tools import ToolBox  # noqa: E402
from harness.types import Caps, SandboxPolicy, Session  # noqa: E402

KINDS = ("none", "bwrap")


def toolbox(folder: Path, kind: str) -> ToolBox:
    """A worker's tools in `folder/work`, the state in `folder/work/.harness`."""
    workdir = folder / "work"
    (workdir / ".harness").mkdir(parents=True, exist_ok=True)
    policy = SandboxPolicy(kind, state=workdir / ".harness", harness_home=ROOT)
    session = Session(run_id="bench", role="worker", feature_id="F-001", workdir=workdir,
                      state=workdir / ".harness", home=ROOT, model="bench", caps=Caps(),
                      tools=["bash"], prices={}, record=lambda event: None,
                      check_budget=lambda cost: None, sandbox=policy)
    return ToolBox(session)


def timed(step: Callable[[ToolBox], None], tools: ToolBox) -> float:
    started = time.perf_counter()
    step(tools)
    return time.perf_counter() - started


def call(tools: ToolBox) -> None:
    result = tools.execute("bash", {"command": "true"})
    if result.is_error or "[exit code 0]" not in result.text:
        raise SystemExit(f"bench: the bash call failed: {result.text}")


def first_call(tools: ToolBox) -> None:
    call(tools)
    tools.shell.stop()


def measure(calls: int, kinds: list[str], folder: Path) -> dict[str, list[float]]:
    """Seconds per call and per first call, by kind, interleaved."""
    boxes = {kind: toolbox(folder / kind, kind) for kind in kinds}
    bare = toolbox(folder / "bare", "none")
    bare.shell.start = subprocess.Popen  # the bash the harness ran before the keeper
    times: dict[str, list[float]] = {}
    try:
        for tools in boxes.values():
            call(tools)  # the shell is running from here on
        for _ in range(calls):
            for kind, tools in boxes.items():
                times.setdefault(f"call, sandbox: {kind}", []).append(timed(call, tools))
        for tools in boxes.values():
            tools.shell.stop()
        for _ in range(calls):
            for kind, tools in [*boxes.items(), ("none, no keeper", bare)]:
                times.setdefault(f"first call, sandbox: {kind}", []).append(
                    timed(first_call, tools))
    finally:
        for tools in [*boxes.values(), bare]:
            tools.close()
    return times


def git_calls(calls: int, kinds: list[str], folder: Path) -> dict[str, list[float]]:
    """Seconds per `git status` the harness runs on a confined tree, by sandbox kind."""
    from harness.run import git

    trees = {}
    for kind in kinds:
        tree = folder / f"git-{kind}"
        (tree / ".harness").mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(tree)], check=True)
        git.confine_tree(tree, tree, tree / ".harness", SandboxPolicy(
            kind, state=tree / ".harness", harness_home=ROOT))
        trees[kind] = tree
    times: dict[str, list[float]] = {}
    for _ in range(calls):
        for kind, tree in trees.items():
            started = time.perf_counter()
            git.run_git(tree, "status", "--porcelain")
            times.setdefault(f"git on the tree, sandbox: {kind}", []).append(
                time.perf_counter() - started)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()
    problem = bwrap_problem()
    kinds = [k for k in KINDS if k != "bwrap" or problem is None]
    if problem:
        print(f"# no bwrap rows: {problem}")
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as folder:
        times = measure(args.calls, kinds, Path(folder))
        times.update(git_calls(args.calls, kinds, Path(folder)))
    print(f"{'bash tool call':42} {'median ms':>9} {'p90 ms':>8}  (n={args.calls})")
    for name, seconds in times.items():
        p90 = statistics.quantiles(seconds, n=10)[-1]
        print(f"{name:42} {statistics.median(seconds) * 1000:9.2f} {p90 * 1000:8.2f}")


if __name__ == "__main__":
    main()
