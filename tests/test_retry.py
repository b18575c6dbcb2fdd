"""`run.sh retry`: a person takes a failed or blocked feature back to pending."""

import json
from pathlib import Path

from conftest import git_init, run_sh


def set_status(state: Path, fid: str, status: str, attempts: int) -> None:
    plan = json.loads((state / "features.json").read_text())
    for f in plan:
        if f["id"] == fid:
            f.update(status=status, attempts=attempts)
    (state / "features.json").write_text(json.dumps(plan))


def feature(state: Path, fid: str) -> dict:
    return next(f for f in json.loads((state / "features.json").read_text()) if f["id"] == fid)


def test_retry_returns_a_failed_feature_to_pending_with_the_reason_in_its_ledger(
        project: Path, state: Path) -> None:
    set_status(state, "F-004", "failed", 3)
    assert run_sh("worker", "F-004", "--dry-run", cwd=project).returncode == 4
    result = run_sh("retry", "F-004", "--reason", "the fixture file was missing; added it",
                    cwd=project)
    assert result.returncode == 0, result.stderr
    assert "F-004 is pending again" in result.stdout
    f4 = feature(state, "F-004")
    assert (f4["status"], f4["attempts"]) == ("pending", 0)
    last = json.loads((state / "ledger" / "F-004.jsonl").read_text().splitlines()[-1])
    assert last["verdict"] == "retry" and last["status_before"] == "failed"
    assert last["reason"] == "the fixture file was missing; added it"
    assert last["attempts_before"] == 3
    dry = run_sh("worker", "F-004", "--dry-run", cwd=project)
    assert dry.returncode == 0
    prompt = Path(dry.stdout.split("prompt at ")[1].strip()).read_text()
    assert "RETRY (retry): the fixture file was missing; added it" in prompt


def test_retry_takes_a_blocked_feature_and_clears_its_reason(project: Path, state: Path) -> None:
    assert run_sh("block", "--feature", "F-004", "needs a key", cwd=project).returncode == 0
    result = run_sh("retry", "F-004", cwd=project)
    assert result.returncode == 0, result.stderr
    f4 = feature(state, "F-004")
    assert f4["status"] == "pending" and "blocked_reason" not in f4
    last = json.loads((state / "ledger" / "F-004.jsonl").read_text().splitlines()[-1])
    assert last["status_before"] == "blocked" and last["reason"]


def test_retry_refuses_a_feature_that_is_not_failed_or_blocked(project: Path,
                                                               state: Path) -> None:
    before = [(f["id"], f["status"], f["attempts"])
              for f in json.loads((state / "features.json").read_text())]
    result = run_sh("retry", "F-004", cwd=project)
    assert result.returncode == 2 and "F-004 is pending" in result.stderr
    assert run_sh("retry", "F-999", cwd=project).returncode == 2
    assert run_sh("retry", "../x", cwd=project).returncode == 2
    assert [(f["id"], f["status"], f["attempts"])
            for f in json.loads((state / "features.json").read_text())] == before
    assert not (state / "ledger" / "F-004.jsonl").exists()


def test_a_retried_or_answered_feature_gets_fresh_worker_runs(project: Path,
                                                            tmp_path: Path) -> None:
    """Runs before a person's retry or answer do not count toward the next "changed
    nothing" block: after the flaky test is fixed and the feature retried, a worker that
    finds nothing to change hands it to the validator instead of blocking it again."""
    git_project = git_init(project)
    idle = tmp_path / "idle.yaml"
    idle.write_text("- tools: [{name: finish, input: {summary: nothing to change}}]\n")
    worker = ("worker", "F-004", "--backend", "scripted", "--script", str(idle))
    codes = [run_sh(*worker, cwd=git_project).returncode for _ in range(3)]
    assert codes == [0, 0, 7]
    for step in (("retry", "F-004", "--reason", "the flaky test is fixed"),
                 ("answer", "F-004", "use the staging database")):
        assert run_sh(*step, cwd=git_project).returncode == 0
        again = run_sh(*worker, cwd=git_project)
        assert again.returncode == 0, again.stdout + again.stderr
        assert "F-004 awaits validation" in again.stdout
        set_status(project / ".harness", "F-004", "blocked", 1)  # as a fail or a person would
