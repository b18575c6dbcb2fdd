"""Left overnight, through real `run.sh` subprocesses: what cron runs is accepted by the loop,
a limit storm backs off instead of spinning, and a strange reset time from a server neither
crashes a run nor ends a loop as if it were done."""

import json
import os
import signal
import subprocess
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from conftest import RUN_SH, git_init, run_sh
from fake_api import FakeAPI
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


def limit_storm(api: FakeAPI, headers: dict[str, str]) -> dict[str, str]:
    """Every call is refused with 429 and these headers; the env that points run.sh at it."""
    api.error(429, "rate_limit_error", "slow down", times=1000,
              headers={**headers, "x-should-retry": "false"})
    return {"ANTHROPIC_BASE_URL": api.base_url}


@pytest.mark.slow  # its waits are the point: 5 s past the reset time, then the 6 s back-off
def test_a_limit_storm_with_short_resets_backs_off_instead_of_spinning(
        api: FakeAPI, project: Path, mission: Path) -> None:
    env = limit_storm(api, {"retry-after": "0"})
    result = run_sh("loop", "--max-runs", "3", "--backoff", "6", "--curator-every", "0",
                    cwd=project, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    waits = [line.rsplit("waiting ", 1)[1] for line in result.stdout.splitlines()
             if "waiting" in line]
    # the reset time first (passed: its margin), then the back-off, never below it
    assert waits == ["5s", "6s"], result.stdout


def test_an_endless_retry_after_is_an_outage_not_a_crash(api: FakeAPI, project: Path,
                                                         mission: Path) -> None:
    env = limit_storm(api, {"retry-after": "inf"})
    result = run_sh("worker", "F-004", cwd=project, env=env)
    assert result.returncode == 6, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "rate limited" in result.stderr


def test_a_reset_time_centuries_away_is_waited_for_within_a_bound(
        api: FakeAPI, project: Path, mission: Path) -> None:
    env = limit_storm(api, {"retry-after": "Fri, 31 Dec 9999 23:59:59 GMT"})
    log = mission / "loop.log"
    with log.open("w") as out:
        loop = subprocess.Popen([str(RUN_SH), "loop", "--curator-every", "0"], cwd=project,
                                env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    while time.time() < deadline and loop.poll() is None and "waiting" not in log.read_text():
        time.sleep(0.2)
    time.sleep(1)
    assert loop.poll() is None, log.read_text()  # still waiting, not ended
    loop.send_signal(signal.SIGTERM)
    loop.wait(timeout=30)
    said = log.read_text()
    assert loop.returncode == 143, said
    assert "Traceback" not in said
    assert "its limit resets at 9999-12-31T23:59:59Z; waiting 168h00m" in said


def test_a_cli_limit_message_with_an_impossible_date_keeps_the_limit() -> None:
    from harness.backends.cli_results import UsageLimitReached, check_usage_limit

    now = datetime(2026, 5, 1, tzinfo=timezone.utc)
    for message in ("usage limit reached, try again at Feb 30th, 2026 10:03 PM",
                    "rate limit: retry in 99999999999999 days"):
        with pytest.raises(UsageLimitReached) as raised:
            check_usage_limit(message, now, timezone(timedelta(0)))
        assert raised.value.reset_at is None


@pytest.mark.parametrize("cut_after", [1, 4])  # after message_start; mid-text
def test_a_stream_the_server_cuts_off_is_an_outage_not_a_finished_run(
        api: FakeAPI, project: Path, mission: Path, cut_after: int) -> None:
    from fake_api import Reply, text, usage

    (mission / "roles").mkdir(exist_ok=True)
    (mission / "roles" / "worker.yaml").write_text("options: {stream: true}\n")
    api.replies.append(Reply([text("I am about to say I am done")], "end_turn", usage(),
                             cut_after=cut_after))
    result = run_sh("worker", "F-004", cwd=project, env={"ANTHROPIC_BASE_URL": api.base_url})
    assert result.returncode == 6, result.stdout + result.stderr
    assert "ended before it was finished" in result.stderr
    plan = {f["id"]: f for f in json.loads((mission / "features.json").read_text())}
    assert plan["F-004"]["status"] == "pending" and plan["F-004"]["attempts"] == 0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_run_stopped_mid_work_keeps_its_spend_and_its_work(
        api: FakeAPI, project: Path, mission: Path, sig: signal.Signals) -> None:
    from fake_api import text, tool_use

    api.reply(tool_use("bash", {"command": "echo half >> half.txt; sleep 30"}),
              input=100_000, output=1000)  # $0.315 at the example's Sonnet price
    api.reply(text("done"))
    run = subprocess.Popen([str(RUN_SH), "worker", "F-004"], cwd=project,
                           env={**os.environ, "ANTHROPIC_BASE_URL": api.base_url},
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 30
    while not (project / "half.txt").exists() and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)
    run.send_signal(sig)  # as `run.sh loop` stops its role, or Ctrl-C reaches it
    out, err = run.communicate(timeout=30)
    assert run.returncode == 143, out + err
    assert f"interrupted by {sig.name}" in err and "never acted" not in err
    manifest = json.loads(next(mission.glob("runs/*/manifest.json")).read_text())
    assert manifest["status"] == "interrupted" and manifest["cost_usd"] == pytest.approx(0.315)
    assert json.loads((mission / "spend.json").read_text())["usd"] == pytest.approx(0.315)
    log = subprocess.run(["git", "log", "--format=%s", "--name-only", "-1"], cwd=project,
                         capture_output=True, text=True).stdout
    assert "[partial: interrupted]" in log and "half.txt" in log  # its work, committed



def test_an_agent_cli_stopped_mid_work_keeps_its_turns_and_spend(project: Path,
                                                                 mission: Path) -> None:
    stand_in = Path(__file__).parent / "fake_clis" / "claude.py"
    run = subprocess.Popen([str(RUN_SH), "worker", "F-004", "--backend", "command", "--preset",
                            "claude", "--command", f"python3 {stand_in} stream_hang"],
                           cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 30
    while time.time() < deadline and "Now the edit" not in "".join(
            p.read_text() for p in mission.glob("runs/*/transcript.jsonl")):
        time.sleep(0.1)
    run.send_signal(signal.SIGTERM)
    out, err = run.communicate(timeout=30)
    assert run.returncode == 143, out + err
    assert "never acted" not in err
    manifest = json.loads(next(mission.glob("runs/*/manifest.json")).read_text())
    assert manifest["status"] == "interrupted" and manifest["turns"] == 2
    assert manifest["cost_usd"] > 0
    assert json.loads((mission / "spend.json").read_text())["usd"] == manifest["cost_usd"]


def test_an_api_that_never_answers_is_an_outage_not_an_attempt(api: FakeAPI, project: Path,
                                                               mission: Path) -> None:
    from fake_api import text

    (mission / "roles").mkdir(exist_ok=True)
    (mission / "roles" / "worker.yaml").write_text(
        "caps: {wall_seconds: 3}\noptions: {timeout: 60}\n")
    api.reply(text("too late"), delay=60)  # the server hangs past the run's wall clock
    result = run_sh("worker", "F-004", cwd=project, env={"ANTHROPIC_BASE_URL": api.base_url})
    assert result.returncode == 6, result.stdout + result.stderr
    assert "did not answer" in result.stderr
    plan = {f["id"]: f for f in json.loads((mission / "features.json").read_text())}
    assert plan["F-004"]["status"] == "pending" and plan["F-004"]["attempts"] == 0


def test_the_spend_of_a_run_killed_outright_reaches_the_budget_once(
        api: FakeAPI, project: Path, mission: Path) -> None:
    from fake_api import text, tool_use

    api.reply(tool_use("bash", {"command": "echo half >> half.txt; sleep 30"}),
              input=100_000, output=1000)  # $0.315
    env = {"ANTHROPIC_BASE_URL": api.base_url}
    run = subprocess.Popen([str(RUN_SH), "worker", "F-004"], cwd=project,
                           env={**os.environ, **env}, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 30
    while not (project / "half.txt").exists() and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)
    run.kill()  # SIGKILL, the OOM killer, a power cut: the run never closes
    run.communicate(timeout=30)
    for _ in range(2):  # the next runs: the killed one's spend is counted once
        api.reply(text("done"))
        assert run_sh("worker", "F-004", cwd=project, env=env).returncode == 0
    spent = json.loads((mission / "spend.json").read_text())["usd"]
    assert spent == pytest.approx(0.315 + 2 * (10 * 3 + 5 * 15) / 1e6)
    killed = json.loads(min(mission.glob("runs/*/manifest.json")).read_text())
    assert killed["settled_usd"] == pytest.approx(0.315)
    assert f"{killed['run_id']} killed exit=137 cost=$0.3150" in (
        mission / "progress.log").read_text()


def test_the_cron_lines_model_reaches_the_loop_when_the_roles_backends_differ(
        project: Path, mission: Path) -> None:
    (mission / "roles").mkdir(exist_ok=True)
    (mission / "roles" / "worker.yaml").write_text("backend: command\noptions: {preset: codex}\n")
    cron = run_sh("cron", "--model", "claude-opus-4-1", cwd=project)
    assert cron.returncode == 0, cron.stderr
    assert "# validator: anthropic, model claude-opus-4-1" in cron.stdout  # what it says
    line = next(x for x in cron.stdout.splitlines() if x.startswith("*/30"))
    assert " loop --model claude-opus-4-1 >> " in line, line  # is what cron runs


def test_the_cron_lines_preset_reaches_the_loop_when_the_roles_backends_differ(
        project: Path, mission: Path) -> None:
    """A preset cron was given was said in the header and dropped from the loop line; with
    roles of other backends it is now refused, as a run refuses it, and with
    `--backend command` it reaches the line."""
    (mission / "roles").mkdir(exist_ok=True)
    (mission / "roles" / "worker.yaml").write_text("backend: command\noptions: {preset: codex}\n")
    cron = run_sh("cron", "--preset", "claude", cwd=project)
    assert cron.returncode == 2 and "add --backend command" in cron.stderr, cron.stderr
    cron = run_sh("cron", "--backend", "command", "--preset", "claude", cwd=project)
    assert "# worker: command --preset claude," in cron.stdout  # what it says
    line = next(x for x in cron.stdout.splitlines() if x.startswith("*/30"))
    assert " loop --backend command --preset claude >> " in line, line  # is what cron runs
