"""Round 4 of issue 29: what a hostile planner writes into the plan, and what the agent sees
of the harness's environment, through real run.sh runs (docs/SANDBOX.md)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_sh

PASS = "- tools: [{name: verdict, input: {verdict: pass, reason: ok}}]\n"


def test_a_verify_too_long_to_run_is_refused_naming_the_feature_and_key(project: Path,
                                                                        state: Path) -> None:
    """A planner's verify of 200 KB was taken into the plan; every validator run of that
    feature then died in exec ('run.sh: .../python: Argument list too long'), exit 2 naming
    neither the plan nor the key, and the next run again."""
    plan = json.loads((state / "features.json").read_text())
    big = "true " + "#" * 200_000
    proposal = project / "plan.json"
    proposal.write_text(json.dumps([{**plan[0], "verify": big}]))
    result = run_sh("plan", str(proposal), cwd=project)
    assert result.returncode == 2, result.stderr
    assert "key 'verify'" in result.stderr and "bytes" in result.stderr
    assert json.loads((state / "features.json").read_text()) == plan  # nothing written

    plan[3].update(verify=big, status="in_progress")
    (state / "features.json").write_text(json.dumps(plan))
    script = project / "pass.yaml"
    script.write_text(PASS)
    result = run_sh("validator", "F-004", "--backend", "scripted", "--script", str(script),
                    cwd=project)
    assert result.returncode == 2, result.stderr
    assert "features.json" in result.stderr and "key 'verify'" in result.stderr


SECRETS = {"PGPASSWORD": "pg-secret-5a1", "API_KEY": "plain-api-key-7b2",
           "STRIPE_SECRET_KEY": "stripe-secret-9c3", "SSH_PRIVATE_KEY": "ssh-private-4d4",
           "DB_PASSPHRASE": "db-phrase-2e5"}


def test_no_secret_reaches_the_agents_shell(project: Path, state: Path) -> None:
    """Secret-named variables the harness's own rule missed (PGPASSWORD, a bare API_KEY,
    *_SECRET_KEY, *_PRIVATE_KEY, *_PASSPHRASE) and any variable the env file holds (the
    file is for secrets, whatever their names) reached the agent's `env`, so the model."""
    (state / "env").write_text("DB_URL=postgres://u:file-secret-6f6@h/db\n"
                               "SENTRY_DSN=https://file-dsn-8a7@o1.ingest.example/1\n")
    (state / "env").chmod(0o600)
    script = project / "env.yaml"
    script.write_text("- tools: [{name: bash, input: {command: 'env > seen.txt'}}]\n"
                      "- tools: [{name: finish, input: {summary: done}}]\n")
    result = run_sh("worker", "F-004", "--backend", "scripted", "--script", str(script),
                    cwd=project, env=SECRETS)
    assert result.returncode == 0, result.stderr
    seen = (project / "seen.txt").read_text()
    assert "FEATURE_ID=F-004" in seen  # the shell ran, and wrote what it saw
    for value in [*SECRETS.values(), "file-secret-6f6", "file-dsn-8a7"]:
        assert value not in seen
