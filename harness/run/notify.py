"""Notifications through apprise (ntfy, Slack, Telegram, email, JSON and form webhooks...).

Rate-limited, with the state on disk (`<state>/notify.json`): one message per feature and
event within `notify.quiet_minutes`; what is held back meanwhile goes out in one digest at
most every `notify.digest_minutes`, with the next event that comes. A loop failing all
night sends a message per feature and a digest an hour, not thousands. Never raises.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from harness.agent import procs
from harness.config import NotifyConfig
from harness.errors import UsageError
from harness.state.envfile import env_files, read_env_file
from harness.state.memory import utc_now
from harness.state.redact import SECRET_LISTS, scrubbed_environ
from harness.state.store import append_record, hold_lock, lock_path, write_json

URLS_VAR = SECRET_LISTS[0]  # space- or comma-separated apprise URLs: kept from agents, hooks
# and records as secrets (state/redact.py)
FIELD_CHARS = 1000  # of a reason or question in a message (Telegram takes 4096 in all)
HELD_MAX = 200  # held-back events kept for the digest; more are counted


def notify_urls(state: Path, config: NotifyConfig) -> list[str]:
    """The config's URLs, then those of HARNESS_NOTIFY_URLS (environment, else env files)."""
    extra = os.environ.get(URLS_VAR, "")
    for path in reversed(env_files(state)):  # the state's file over the user's
        if extra:
            break
        try:
            extra = read_env_file(path).get(URLS_VAR, "")
        except UsageError:
            continue
    return [*config.urls, *extra.replace(",", " ").split()]


def notify(state: Path, config: NotifyConfig, event: dict[str, Any],
           timeout: float = 30) -> None:
    """Tell the person about `event` if the config asks for it and the rate limit allows;
    each message given up after `timeout` seconds (the mission's hook_timeout)."""
    if event["event"] not in config.events:
        return
    urls = notify_urls(state, config)
    if not urls:
        return
    messages = _due(state, config, event)
    for title, body in messages:
        _send(state, urls, title, body, timeout)


def message(event: dict[str, Any]) -> tuple[str, str]:
    """A title and body for one event."""
    feature = event.get("feature")
    title = f"[{event.get('mission')}] {event['event']}" + (f" {feature}" if feature else "")
    lines = [_cut(event[key]) for key in ("title", "reason") if event.get(key)]
    if event.get("needs"):
        lines.append(f"Needs: {_cut(event['needs'])}")
        lines.append(f"Answer with: run.sh answer {feature} 'YOUR ANSWER'")
    lines += [f"{key}: {event[key]}" for key in ("run_id", "cost", "commit") if event.get(key)]
    return title, "\n".join(lines) or event["event"]


def _cut(value: Any) -> str:
    """An agent's text within FIELD_CHARS: a chat service refuses a longer message whole."""
    text = str(value)
    return text if len(text) <= FIELD_CHARS else text[:FIELD_CHARS] + " [...]"


def _due(state: Path, config: NotifyConfig, event: dict[str, Any]) -> list[tuple[str, str]]:
    """The messages to send now; the rate limit's state updated under its lock."""
    path, now = state / "notify.json", time.time()
    key = f"{event['event']} {event.get('feature') or '-'}"
    with hold_lock(lock_path(state, "notify")):
        limits = _read_limits(path, now)
        sent, held = limits.setdefault("sent", {}), limits.setdefault("held", [])
        limits.setdefault("digest_at", now)
        out = []
        if now - sent.get(key, -1e12) >= config.quiet_minutes * 60:
            sent[key] = now
            out.append(message(event))
        else:
            held.append(f"{event.get('time', utc_now())} {key}: {event.get('reason', '')}"[:300])
            limits["dropped"] = limits.get("dropped", 0) + max(0, len(held) - HELD_MAX)
            del held[:-HELD_MAX]
        if held and now - limits["digest_at"] >= config.digest_minutes * 60:
            out.append(_digest(event.get("mission"), held, limits.pop("dropped", 0)))
            limits["held"], limits["digest_at"] = [], now
        write_json(path, limits)
    return out


def _read_limits(path: Path, now: float) -> dict[str, Any]:
    """The rate limit's state; a damaged one (any value of the wrong type, a time that is
    no number) is started afresh: left as it was, it would silence every notification. A
    time still to come (written while the clock ran ahead) holds nothing back."""
    try:
        limits = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(limits, dict):
        return {}
    sent, held = limits.get("sent", {}), limits.get("held", [])
    times = [limits.get("digest_at", 0), *(sent.values() if isinstance(sent, dict) else [""])]
    if not (all(isinstance(t, int | float) and math.isfinite(t) for t in times)
            and isinstance(held, list) and all(isinstance(h, str) for h in held)
            and isinstance(limits.get("dropped", 0), int)):
        return {}
    limits["sent"] = {key: t for key, t in sent.items() if t <= now}
    limits["digest_at"] = min(limits.get("digest_at", now), now)
    return limits


def _digest(mission: Any, held: list[str], dropped: int) -> tuple[str, str]:
    more = [f"... and {dropped} more"] if dropped else []
    return (f"[{mission}] digest: {len(held) + dropped} more events",
            "\n".join([*held[-30:], *more]))


def _send(state: Path, urls: list[str], title: str, body: str, timeout: float) -> None:
    """Send through apprise in a child process stopped after `timeout`: a service that
    answers a byte at a time never times out a read, and apprise's worker threads are
    waited for at exit, so in this process it held the run (and its locks) for good."""
    message = json.dumps({"urls": urls, "title": title, "body": body})  # stdin: no `ps` sees it
    try:
        sent = subprocess.run([sys.executable, "-c", DELIVER], input=message, text=True,
                              capture_output=True, timeout=timeout, env=scrubbed_environ(),
                              preexec_fn=procs.die_with_parent)
        said = (sent.stdout.strip() or f"not sent: {sent.stderr.strip()[-300:]}"
                or f"not sent: exit {sent.returncode}")
    except subprocess.TimeoutExpired:
        said = f"not sent: no answer within {timeout:g}s (hook_timeout); stopped"
    except OSError as e:  # never the run's failure
        said = f"not sent: {e}"
    try:
        append_record(state / "hooks.log", f"{utc_now()} notify {title!r}: {said}\n",
                      lock_path(state, "hooks"))
    except OSError:
        pass


# The child's program: apprise imported there, not in the run (it costs a second)
DELIVER = """
import json, logging, sys
try:
    import apprise
    logging.getLogger("apprise").setLevel(logging.CRITICAL)
    message, sender = json.load(sys.stdin), apprise.Apprise()
    for url in message["urls"]:
        sender.add(url)
    ok = bool(sender.notify(title=message["title"], body=message["body"]))
    print("sent" if ok else "not sent (a service refused or could not be reached)")
except Exception as e:
    print(f"not sent: {type(e).__name__}: {e}")
sys.stdout.flush()
"""
