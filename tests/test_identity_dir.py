"""Where cross-mission memory lives: outside the tool's checkout by default, moved out of it
once, named by `status`; the demo's lessons stay in the demo's own folder."""

import os
import subprocess
from pathlib import Path

from conftest import HARNESS_VARS, ROOT, run_sh

from harness.paths import identity_dir


def bare_env(**extra: str) -> dict[str, str]:
    """The caller's environment without the harness's variables or XDG_DATA_HOME."""
    env = {k: v for k, v in os.environ.items()
           if k not in HARNESS_VARS and k != "XDG_DATA_HOME"}
    return {**env, **extra}


def run_checkout(run_sh_path: Path, *args: str, cwd: Path, env: dict[str, str]):
    return subprocess.run([str(run_sh_path), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def copy_of_the_checkout(tmp_path: Path) -> Path:
    """A checkout of the tool sharing this one's code and venv, with its own identity/."""
    home = tmp_path / "autonomous-harness"
    home.mkdir()
    (home / "run.sh").write_bytes((ROOT / "run.sh").read_bytes())
    (home / "run.sh").chmod(0o755)
    for name in (".venv", "pyproject.toml", "roles", "templates", ".harness.example"):
        (home / name).symlink_to(ROOT / name)
    (home / "identity").mkdir()
    (home / "identity" / "README.md").write_text((ROOT / "identity" / "README.md").read_text())
    return home


def test_identity_defaults_to_xdg_data_home_then_local_share(tmp_path: Path,
                                                             monkeypatch) -> None:
    monkeypatch.delenv("HARNESS_IDENTITY_DIR")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert identity_dir() == tmp_path / "data" / "autonomous-harness" / "identity"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/data")  # the XDG spec ignores it
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert identity_dir() == tmp_path / "home/.local/share/autonomous-harness/identity"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert identity_dir() == tmp_path / "home/.local/share/autonomous-harness/identity"
    monkeypatch.setenv("HARNESS_IDENTITY_DIR", str(tmp_path / "mine"))
    assert identity_dir() == tmp_path / "mine"


def test_status_says_where_identity_is(project: Path, tmp_path: Path) -> None:
    env = bare_env(HOME=str(tmp_path / "home"))
    result = run_sh("status", cwd=project, env=env)  # run_sh keeps HARNESS_IDENTITY_DIR
    assert f"identity (cross-mission): {os.environ['HARNESS_IDENTITY_DIR']}" in result.stdout
    result = run_checkout(ROOT / "run.sh", "status", cwd=project, env=env)
    assert result.returncode == 0, result.stderr
    default = tmp_path / "home" / ".local/share/autonomous-harness/identity"
    assert f"identity (cross-mission): {default} (no lessons yet)" in result.stdout


def test_lessons_in_the_checkout_move_out_once_with_a_message(project: Path,
                                                              tmp_path: Path) -> None:
    home = copy_of_the_checkout(tmp_path)
    old = home / "identity"
    (old / "worker.md").write_text("- TRICK: use rg, not grep -r [promoted ...]\n")
    (old / "archive").mkdir()
    (old / "archive" / "worker.md").write_text("- TRICK: an archived lesson\n")
    (old / ".candidates.log").write_text("{}\n")
    data = tmp_path / "data"
    env = bare_env(XDG_DATA_HOME=str(data))
    new = data / "autonomous-harness" / "identity"
    first = run_checkout(home / "run.sh", "status", cwd=project, env=env)
    assert first.returncode == 0, first.stderr
    assert f"moved cross-mission memory (.candidates.log, archive, worker.md) from the tool's " \
           f"checkout {old} to {new}" in first.stderr
    assert sorted(os.listdir(old)) == ["README.md"]
    assert (new / "worker.md").read_text().startswith("- TRICK: use rg")
    assert (new / "archive" / "worker.md").exists() and (new / ".candidates.log").exists()
    assert "worker.md 1 lines" in first.stdout
    second = run_checkout(home / "run.sh", "status", cwd=project, env=env)
    assert "moved" not in second.stderr  # once
    (old / "worker.md").write_text("- TRICK: written again by an old version\n")
    third = run_checkout(home / "run.sh", "status", cwd=project, env=env)
    assert f"{old / 'worker.md'} was not moved: {new / 'worker.md'} exists" in third.stderr
    assert (new / "worker.md").read_text().startswith("- TRICK: use rg")  # nothing overwritten


def test_harness_identity_dir_wins_and_nothing_is_moved(project: Path, tmp_path: Path) -> None:
    home = copy_of_the_checkout(tmp_path)
    (home / "identity" / "worker.md").write_text("- TRICK: stays\n")
    env = bare_env(XDG_DATA_HOME=str(tmp_path / "data"), HARNESS_IDENTITY_DIR=str(tmp_path / "i"))
    result = run_checkout(home / "run.sh", "status", cwd=project, env=env)
    assert result.returncode == 0 and "moved" not in result.stderr
    assert f"identity (cross-mission): {tmp_path / 'i'}" in result.stdout
    assert (home / "identity" / "worker.md").exists()
