"""Notifications through apprise, to a real HTTP server on 127.0.0.1 (json:// and form://),
rate-limited on disk: a loop failing all night sends one message per feature and event and
a digest, not thousands."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs

import pytest
from conftest import run_sh

from harness.config import NotifyConfig
from harness.run.notify import notify

BLOCKED = ("- tools: [{name: finish, input: {summary: stuck, status: blocked, "
           "needs: 'which database should the JSON go to?'}}]\n")


class Sink:
    """A web server on 127.0.0.1 keeping what was posted to it."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, str, str]] = []  # path, content type, body
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                sink.posts.append((self.path, self.headers.get("Content-Type", ""),
                                   body.decode()))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, scheme: str, path: str = "notify") -> str:
        return f"{scheme}://127.0.0.1:{self.port}/{path}"

    def json_messages(self) -> list[dict]:
        return [json.loads(body) for _, kind, body in self.posts if "json" in kind]


@pytest.fixture(name="sink")
def sink_fixture() -> Iterator[Sink]:
    sink = Sink()
    yield sink
    sink.server.shutdown()


def blocked_worker(project: Path, tmp_path: Path) -> None:
    script = tmp_path / "blocked.yaml"
    script.write_text(BLOCKED)
    result = run_sh("worker", "F-004", "--backend", "scripted", "--script", str(script),
                    cwd=project)
    assert result.returncode == 7, result.stderr


def test_a_blocked_features_question_reaches_a_json_webhook(project: Path, tmp_path: Path,
                                                            sink: Sink) -> None:
    with (project / ".harness" / "config.yaml").open("a") as config:
        config.write(f"notify:\n  urls: ['{sink.url('json')}']\n")
    blocked_worker(project, tmp_path)
    (message,) = sink.json_messages()  # run.finished is not among the default events
    assert message["title"] == "[textstats] feature.blocked F-004"
    assert "Needs: which database should the JSON go to?" in message["message"]
    assert "run.sh answer F-004" in message["message"]
    assert "notify '[textstats] feature.blocked F-004': sent" in (
        project / ".harness" / "hooks.log").read_text()


def test_urls_from_the_state_env_file_reach_a_form_webhook(project: Path, tmp_path: Path,
                                                          sink: Sink) -> None:
    env = project / ".harness" / "env"
    env.write_text(f"HARNESS_NOTIFY_URLS={sink.url('form', 'hook')}\n")
    env.chmod(0o600)
    blocked_worker(project, tmp_path)
    ((path, kind, body),) = sink.posts
    form = parse_qs(body)
    assert path == "/hook" and "form" in kind
    assert form["title"] == ["[textstats] feature.blocked F-004"]
    assert "which database" in form["message"][0]


def test_urls_from_an_env_file_reach_neither_the_agent_nor_a_hook_nor_a_record(
        project: Path, tmp_path: Path, sink: Sink) -> None:
    """HARNESS_NOTIFY_URLS holds tokens (a Telegram bot's, a Slack webhook's): that is why
    it lives in an env file. The agent's shell printed it, and the transcript kept it."""
    state, token = project / ".harness", "canary-bot-token-0777"
    env = state / "env"
    env.write_text(f"HARNESS_NOTIFY_URLS={sink.url('json', token)} "
                   f"{sink.url('form', token + '-two')}\n")
    env.chmod(0o600)
    with (state / "config.yaml").open("a") as config:
        config.write(f"hooks: {{run.finished: 'env > {tmp_path / 'hook-env.txt'}'}}\n")
    script = tmp_path / "peek.yaml"
    script.write_text("- tools: [{name: bash, input: {command: 'env > seen-env.txt; "
                      f"echo {sink.url('json', token)}'}}}}]\n" + BLOCKED)
    result = run_sh("worker", "F-004", "--backend", "scripted", "--script", str(script),
                    cwd=project)
    assert result.returncode == 7, result.stderr
    assert len(sink.json_messages()) == 1  # the harness still sends with them
    for seen in (project / "seen-env.txt", tmp_path / "hook-env.txt"):
        assert "PATH=" in seen.read_text() and token not in seen.read_text(), seen
    for path in state.rglob("*"):
        if path.is_file() and path != env:
            assert token not in path.read_text(errors="replace"), path


def test_a_loop_failing_all_night_sends_one_message_and_a_digest(tmp_path: Path,
                                                                 sink: Sink) -> None:
    config = NotifyConfig(urls=[sink.url("json")], events=["feature.failed"])
    failed = {"event": "feature.failed", "mission": "m", "feature": "F-001", "reason": "red"}
    for _ in range(100):
        notify(tmp_path, config, failed)
    notify(tmp_path, config, {**failed, "feature": "F-002"})
    notify(tmp_path, config, {**failed, "event": "run.finished"})  # not asked for
    assert [m["title"] for m in sink.json_messages()] == ["[m] feature.failed F-001",
                                                          "[m] feature.failed F-002"]
    limits = json.loads((tmp_path / "notify.json").read_text())
    assert len(limits["held"]) == 99
    limits["digest_at"] = time.time() - 3601  # an hour on
    (tmp_path / "notify.json").write_text(json.dumps(limits))
    notify(tmp_path, config, failed)
    digest = sink.json_messages()[-1]
    assert len(sink.posts) == 3 and digest["title"] == "[m] digest: 100 more events"
    assert "feature.failed F-001: red" in digest["message"]


def test_an_unreachable_service_is_logged_and_never_fails_the_run(project: Path,
                                                                  tmp_path: Path) -> None:
    with (project / ".harness" / "config.yaml").open("a") as config:
        config.write("notify:\n  urls: ['json://127.0.0.1:9/nothing']\n")
    blocked_worker(project, tmp_path)
    assert "not sent" in (project / ".harness" / "hooks.log").read_text()


def test_a_service_that_never_finishes_answering_is_given_up_after_hook_timeout(
        project: Path, tmp_path: Path) -> None:
    """A service that sends its answer a byte at a time never times out a read: it held the
    run, and the lock on its working tree, for good."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def trickle() -> None:
        conn, _ = listener.accept()
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
        while not stop.wait(0.5):
            conn.sendall(b"x")
        conn.close()

    threading.Thread(target=trickle, daemon=True).start()
    port = listener.getsockname()[1]
    with (project / ".harness" / "config.yaml").open("a") as config:
        config.write(f"hook_timeout: 2\nnotify:\n  urls: ['json://127.0.0.1:{port}/x']\n")
    (tmp_path / "blocked.yaml").write_text(BLOCKED)
    try:
        result = run_sh("worker", "F-004", "--backend", "scripted", "--script",
                        str(tmp_path / "blocked.yaml"), cwd=project, timeout=60)
    finally:
        stop.set()
        listener.close()
    assert result.returncode == 7, result.stderr
    assert "not sent: no answer within 2s" in (project / ".harness" / "hooks.log").read_text()


@pytest.mark.slow  # one run.sh run per case: CI runs them all (HARNESS_SLOW=1)
@pytest.mark.parametrize("damaged", [
    '{"sent": {"feature.blocked F-004": "yesterday"}}', '{"held": [1, 2], "digest_at": 0}',
    '{"digest_at": "soon", "held": ["x"]}', '{"sent": {"feature.blocked F-004": NaN}}',
    '{"dropped": "many", "held": ["x"], "digest_at": 0}'])
def test_a_damaged_rate_limit_never_silences_the_notifications(project: Path, tmp_path: Path,
                                                               sink: Sink,
                                                               damaged: str) -> None:
    with (project / ".harness" / "config.yaml").open("a") as config:
        config.write(f"notify:\n  urls: ['{sink.url('json')}']\n")
    (project / ".harness" / "notify.json").write_text(damaged)
    blocked_worker(project, tmp_path)
    assert [m["title"] for m in sink.json_messages()][:1] == ["[textstats] feature.blocked F-004"]
    json.loads((project / ".harness" / "notify.json").read_text())  # rewritten, whole


def test_a_clock_set_back_never_silences_the_notifications(project: Path, tmp_path: Path,
                                                           sink: Sink) -> None:
    """notify.json written while the clock ran a day ahead (a machine's clock corrected by
    NTP after a reboot): its times still to come hold back neither a message nor a digest."""
    with (project / ".harness" / "config.yaml").open("a") as config:
        config.write(f"notify:\n  urls: ['{sink.url('json')}']\n")
    ahead = time.time() + 86400
    (project / ".harness" / "notify.json").write_text(json.dumps(
        {"sent": {"feature.blocked F-004": ahead}, "held": ["held while the clock ran ahead"],
         "digest_at": ahead - 7200}))
    blocked_worker(project, tmp_path)
    titles = [m["title"] for m in sink.json_messages()]
    assert titles[:1] == ["[textstats] feature.blocked F-004"], titles  # was: none, a day long
    limits = json.loads((project / ".harness" / "notify.json").read_text())
    assert limits["sent"]["feature.blocked F-004"] <= time.time()
    assert limits["digest_at"] <= time.time()


def test_a_huge_question_is_cut_so_the_message_still_goes_out(project: Path, tmp_path: Path,
                                                              sink: Sink) -> None:
    with (project / ".harness" / "config.yaml").open("a") as config:
        config.write(f"notify:\n  urls: ['{sink.url('json')}']\n")
    script = tmp_path / "huge.yaml"
    script.write_text("- tools: [{name: finish, input: " + json.dumps(
        {"summary": "s" * 100_000, "status": "blocked", "needs": "which db? " + "q" * 100_000})
        + "}]\n")
    result = run_sh("worker", "F-004", "--backend", "scripted", "--script", str(script),
                    cwd=project)
    assert result.returncode == 7, result.stderr[-2000:]
    (message,) = sink.json_messages()
    assert len(message["message"]) < 4000  # a chat service's limit (Telegram: 4096)
    assert "Needs: which db? qqq" in message["message"]
    assert "run.sh answer F-004 'YOUR ANSWER'" in message["message"]
