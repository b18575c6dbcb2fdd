"""Shared fixtures: every test runs against its own temporary state and identity folders."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner
from fake_api import FakeAPI

from harness.cli.app import cli

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / ".harness.example"
RUN_SH = ROOT / "run.sh"
NO_COMMITS = "commit: false\n"
CLOSED_URL = "http://127.0.0.1:9"  # a local port nothing listens on
HARNESS_VARS = ("HARNESS_STATE", "HARNESS_ROLE", "FEATURE_ID", "HARNESS_RUN_ID",
                "HARNESS_IDENTITY_DIR", "HARNESS_HOME")
# HARNESS_SLOW=1 (set by .ci/run) runs the tests marked `slow` and the full sizes of the
# tests that scale with it; docs/testing.md lists them.
SLOW = os.environ.get("HARNESS_SLOW") == "1"
SLOW_HINT = "HARNESS_SLOW=1 runs them, as .ci/run does"
SLOW_LEFT = pytest.StashKey[int]()  # how many slow tests a run left out


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without HARNESS_SLOW=1 (or a -m naming `slow`), the slow tests are deselected."""
    if SLOW or "slow" in (config.option.markexpr or ""):
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]
    config.stash[SLOW_LEFT] = len(slow)
    if hasattr(config, "workeroutput"):  # an xdist worker: its controller prints the summary
        config.workeroutput["slow_left"] = len(slow)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """xdist's controller: every worker collected the same tests and left out as many."""
    left = getattr(node, "workeroutput", {}).get("slow_left", 0)
    node.config.stash[SLOW_LEFT] = max(left, node.config.stash.get(SLOW_LEFT, 0))


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    """Say how many slow tests were left out, and how to run them."""
    if left := config.stash.get(SLOW_LEFT, 0):
        terminalreporter.write_line(f"{left} slow tests not run: {SLOW_HINT}")


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory: pytest.TempPathFactory,
                 monkeypatch: pytest.MonkeyPatch) -> Path:
    """No harness variables leak in from the caller; identity lives in a temp folder, and so
    does the default one (XDG_DATA_HOME), so no test writes to the real ~/.local/share."""
    for name in HARNESS_VARS:
        monkeypatch.delenv(name, raising=False)
    # `doctor` proves a key with a free API call: never to a real address from a test
    monkeypatch.setenv("ANTHROPIC_BASE_URL", os.environ.get("ANTHROPIC_BASE_URL", CLOSED_URL))
    identity = tmp_path_factory.mktemp("identity")
    monkeypatch.setenv("HARNESS_IDENTITY_DIR", str(identity))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg-data")))
    return identity


@pytest.fixture(name="api")
def api_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAPI]:
    """A running fake API; the SDK finds a test key in the environment."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    server = FakeAPI()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder holding a copy of the example mission in `.harness`. It is no git
    repository, so its mission says it wants no commits (`git_init` makes it one that does)."""
    folder = tmp_path / "project"
    folder.mkdir()
    shutil.copytree(EXAMPLE, folder / ".harness")
    with (folder / ".harness" / "config.yaml").open("a") as config:
        config.write(NO_COMMITS)
    return folder


@pytest.fixture
def state(project: Path) -> Path:
    return project / ".harness"


@pytest.fixture
def invoke(state: Path, project: Path):
    """Run the click CLI against the example state; returns the click Result."""

    def run(*args: str, input: str | None = None, env: dict[str, str] | None = None):
        runner = CliRunner()
        return runner.invoke(cli, ["--state", str(state), "--workdir", str(project), *args],
                             input=input, env=env, catch_exceptions=False)

    return run


def git_init(project: Path) -> Path:
    """Make `project` a git repository with one commit, the state directory ignored, whose
    mission commits each worker run's changes."""
    config = project / ".harness" / "config.yaml"
    if config.exists():
        config.write_text(config.read_text().replace(NO_COMMITS, ""))
    (project / ".gitignore").write_text(".harness/\n")
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"],
                   cwd=project, check=True)
    return project


@contextmanager
def unwritable(folder: Path) -> Iterator[None]:
    """`folder` cannot be written, even by root (chattr +i), for the duration."""
    if os.geteuid() == 0:
        if not shutil.which("chattr"):
            pytest.skip("root without chattr cannot make a folder unwritable")
        subprocess.run(["chattr", "+i", str(folder)], check=True)
    else:
        folder.chmod(0o500)
    try:
        yield
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        folder.chmod(0o755)


def run_sh(*args: str, cwd: Path, env: dict[str, str] | None = None,
           input: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """A real subprocess of run.sh."""
    full_env = {k: v for k, v in os.environ.items() if k not in HARNESS_VARS or
                k == "HARNESS_IDENTITY_DIR"}
    full_env.update(env or {})
    return subprocess.run([str(RUN_SH), *args], cwd=cwd, env=full_env, input=input,
                          capture_output=True, text=True, timeout=timeout)


# One lesson in two notes that the rules keep apart (the rule vetoes the pair on its paths),
# each among the lessons most like the other: the pair a
# model-mode curator is asked about ("Same lesson?"), first of all when they are all raw.md
# holds.
UNSURE_FIRST = "pytest -x --lf reruns only the failed tests on tests/api/"
UNSURE_SECOND = "rerun just what failed in tests/web/ with pytest --lf -x"


def unsure_pair_lines(start: int = 1) -> str:
    """raw.md lines: the unsure pair, noted by workers on two features."""
    return "".join(f"[2026-06-01T10:0{m}:00Z] worker F-10{m} TRICK: {text} "
                   f"(run r{m}-worker-F-10{m})\n"
                   for m, text in enumerate((UNSURE_FIRST, UNSURE_SECOND), start))


def model_mode_curator(state: Path, role_yaml: str) -> None:
    """`curator.mode: model` over the unsure pair alone, the curator's role as given."""
    (state / "raw.md").write_text(unsure_pair_lines())
    (state / "config.yaml").write_text("curator: {mode: model}\n")
    (state / "roles").mkdir(exist_ok=True)
    (state / "roles" / "curator.yaml").write_text(role_yaml)


def assert_unsure_pair_judged_one(identity: Path) -> None:
    """The model said the pair is one lesson: promoted, and its answer recorded."""
    from harness.curator import curatordb

    assert f"- TRICK: {UNSURE_FIRST} [promoted" in (identity / "worker.md").read_text()
    assert list(curatordb.read_answers(identity).values()) == [True]
