"""An agent CLI's retries are shown on stderr as they come, not after a silent wait."""

import subprocess
import time
from pathlib import Path

from conftest import ROOT, RUN_SH

from harness.backends.cli_retries import retry_notice

CLAUDE_STAND_IN = ROOT / "tests" / "fake_clis" / "claude.py"


def test_retry_events_become_one_line_each() -> None:
    claude = {"type": "system", "subtype": "api_retry", "attempt": 3, "max_retries": 10,
              "retry_delay_ms": 4210.7, "error_status": 529, "error": "overloaded_error"}
    assert retry_notice(claude, "https://api.anthropic.com") == (
        "retrying 3/10 in 4.2 s: overloaded_error (HTTP 529), https://api.anthropic.com")
    refused = {**claude, "error_status": None, "error": "unknown"}
    assert retry_notice(refused, "http://127.0.0.1:9") == (
        "retrying 3/10 in 4.2 s: cannot connect (no HTTP answer), http://127.0.0.1:9")
    codex = {"type": "error",
             "message": "Reconnecting... 2/5 (stream disconnected before completion: boom)"}
    assert retry_notice(codex) == "retrying 2/5: stream disconnected before completion: boom"
    assert retry_notice({"type": "error", "message": "quota exceeded"}) is None
    assert retry_notice({"type": "system", "subtype": "init"}) is None
    assert retry_notice({"type": "turn.failed", "error": {"message": "x"}}) is None


def test_a_cli_retrying_is_shown_on_stderr_as_it_comes(project: Path) -> None:
    argv = [str(RUN_SH), "worker", "F-004", "--backend", "command", "--preset", "claude",
            "--command", f"python3 {CLAUDE_STAND_IN} retries"]
    proc = subprocess.Popen(argv, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stderr is not None
    lines = [(time.monotonic(), line) for line in proc.stderr]
    proc.wait(timeout=60)
    ended = time.monotonic()
    assert proc.returncode == 0, "".join(line for _, line in lines)
    retries = [(t, line) for t, line in lines if "retrying" in line]
    assert [line.split(": ", 2)[2].strip() for _, line in retries] == [
        "retrying 1/10 in 1.2 s: server_error (HTTP 500), https://api.anthropic.com",
        "retrying 2/10 in 1.2 s: cannot connect (no HTTP answer), https://api.anthropic.com"]
    assert retries[0][1].startswith("run.sh: ") and "-worker-F-004: " in retries[0][1]
    assert ended - retries[0][0] > 1.5  # printed while the CLI was still retrying
