"""`run.sh loop`: the worker and the validator (and the curator every N minutes) until nothing
is left, under one supervisor.

Each role runs as a subprocess of `run.sh`, exactly as a person or cron would start it: a run
that crashes, leaks or is killed ends that run, never the loop, and every run starts from
the files on disk. Exit codes decide (docs/unattended.md): 0, 1 and 7 go on; 5 from both
roles is the normal end; 3 and 6 wait, until a recorded reset time or exponentially longer
within a bound; 2 and 4 stop the loop with that code. SIGINT and SIGTERM stop it: the
running roles get SIGTERM and end as a killed run does, then the loop exits 128 + the signal.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from harness.errors import BACKEND, BUDGET, BUSY, DONE, NOTHING_TO_DO, TASK_FAILED, USAGE
from harness.ops.waits import (
    FAILED_KIND,
    KNOWN,
    NOTHING_KIND,
    RAN_KIND,
    backoff,
    classify,
    say_duration,
    until_reset,
)
from harness.paths import Paths
from harness.state.plan import load_plan

STOPS = {USAGE: "a usage or state error (the message above says what to fix)",
         BUDGET: "the budget is spent (mission budget_usd or a feature's attempt cap)"}
IDLE_POLL = 5.0  # seconds between looks while another slot's run may still add work


@dataclass(frozen=True)
class LoopOptions:
    """What `run.sh loop` was asked: its limits, its waits and the roles' flags."""

    max_runs: int | None = None
    until: datetime | None = None  # aware
    parallel: int = 1
    curator_every: float = 1800.0  # seconds between curator passes; 0: never
    first_wait: float = 30.0  # the first back-off; doubled each time, up to max_wait
    max_wait: float = 1800.0
    role_args: tuple[str, ...] = ()  # --backend, --preset, ... for the worker and validator


class Supervisor:
    """Runs `parallel` slots, each a worker-then-validator round after round."""

    def __init__(self, paths: Paths, options: LoopOptions) -> None:
        self.paths, self.options = paths, options
        self.stop = threading.Event()
        # reentrant: the signal handler may run while the main thread holds it
        self.lock = threading.RLock()
        self.children: set[subprocess.Popen] = set()
        self.runs = self.active = self.signals = 0
        self.result: tuple[int, str] | None = None
        self.crash: BaseException | None = None  # a slot's own bug: the loop raises it
        self.last_curator, self.curated_runs = time.monotonic(), 0

    def say(self, slot: int, text: str) -> None:
        with self.lock:
            name = f"loop[{slot}]" if self.options.parallel > 1 else "loop"
            print(f"{name}: {text}", flush=True)

    def finish(self, code: int, why: str) -> None:
        """End the loop with `code` (the first reason given wins); running roles finish."""
        with self.lock:
            if self.result is None:
                self.result = (code, why)
        self.stop.set()

    def run(self) -> tuple[int, str]:
        """Run the slots until one of them ends the loop; the exit code and why."""
        previous = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            slots = [threading.Thread(target=self._slot, args=(n,), daemon=True)
                     for n in range(1, self.options.parallel + 1)]
            for t in slots:
                t.start()
            while any(t.is_alive() for t in slots):
                for t in slots:
                    t.join(timeout=0.2)  # short, so the main thread takes signals
            if self.result and self.result[0] == NOTHING_TO_DO and self._curator_due(final=True):
                self._run("curator", 1, at_end=True)
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
        if self.crash is not None:  # a traceback and exit 1, not a clean "stopped" (exit 0)
            raise self.crash
        return self.result or (DONE, "stopped")

    def _on_signal(self, signum: int, _frame: object) -> None:
        self.signals += 1
        name = signal.Signals(signum).name
        self.finish(128 + signum, f"stopped by {name}")
        with self.lock:
            children = list(self.children)
        hard = self.signals > 1  # a second Ctrl-C does not wait for the records
        for child in children:
            child.send_signal(signal.SIGKILL if hard else signal.SIGTERM)
        if children:
            print(f"loop: {name}: {'killed' if hard else 'stopping'} the running role "
                  f"({'' if hard else 'Ctrl-C again to kill it; '}its record is kept)",
                  flush=True)

    def _slot(self, slot: int) -> None:
        try:
            self._rounds(slot)
        except BaseException as e:
            self.crash = e
            self.finish(TASK_FAILED, f"slot {slot} crashed: {e!r}")

    def _rounds(self, slot: int) -> None:
        busy = backend = 0
        while not self.stop.is_set():
            codes = self._round(slot)
            if self.stop.is_set():
                return
            kind = classify(codes)
            if kind == RAN_KIND:
                busy = backend = 0
            elif kind == NOTHING_KIND:
                self._nothing_left(slot)
            elif kind == FAILED_KIND:
                backend += 1
                self._wait_backend(slot, codes, backend)
            else:
                busy += 1
                self._wait(slot, backoff(busy, self.options.first_wait, self.options.max_wait),
                           "busy (exit 3: another run holds the lock)")
            self._maybe_curate(slot)

    def _round(self, slot: int) -> dict[str, int]:
        """The worker, then the validator; stops early on a code that ends or pauses it."""
        codes: dict[str, int] = {}
        for role in ("worker", "validator"):
            code = self._run(role, slot)
            if code is None:
                break
            codes[role] = code
            if code in STOPS:
                self.finish(code, f"{role} exit {code}: {STOPS[code]}")
            if code in STOPS or code == BACKEND:
                break
        return codes

    def _run(self, role: str, slot: int, at_end: bool = False) -> int | None:
        """One role run as a subprocess of run.sh; its exit code (None: not started). The
        curator's last pass runs `at_end`, once the loop has stopped."""
        if not at_end and self._past_until():
            return None
        argv = [str(self.paths.home / "run.sh"), "--state", str(self.paths.state),
                "--workdir", str(self.paths.workdir), role]
        argv += [] if role == "curator" else ["next", *self.options.role_args]
        with self.lock:
            if self.stop.is_set() and not (at_end and self.signals == 0):
                return None
            # its own session: a Ctrl-C reaches the loop, which stops the run with SIGTERM
            child = subprocess.Popen(argv, start_new_session=True)
            self.children.add(child)
            self.active += 1
        started = time.monotonic()
        code = child.wait()
        code = 128 - code if code < 0 else code  # killed by a signal: the shell's number
        with self.lock:
            self.children.discard(child)
            self.active -= 1
        self.say(slot, f"{role} exit {code} ({say_duration(time.monotonic() - started)})")
        if role != "curator" and code not in (BUSY, NOTHING_TO_DO, *STOPS):  # a stop's own code
            self._count_run()
        return code

    def _count_run(self) -> None:
        with self.lock:
            self.runs += 1
            runs = self.runs
        if self.options.max_runs is not None and runs >= self.options.max_runs:
            self.finish(DONE, f"--max-runs {self.options.max_runs} reached")

    def _past_until(self) -> bool:
        until = self.options.until
        if until is not None and datetime.now(timezone.utc) >= until:
            self.finish(DONE, f"--until {until.isoformat(timespec='minutes')} reached")
            return True
        return False

    def _wait(self, slot: int, seconds: float, why: str) -> None:
        """Wait `seconds` (cut short by a stop), or end the loop if that passes --until."""
        until = self.options.until
        if until is not None and (until - datetime.now(timezone.utc)).total_seconds() < seconds:
            self.finish(DONE, f"{why}; the wait would pass --until "
                              f"{until.isoformat(timespec='minutes')}")
            return
        self.say(slot, f"{why}; waiting {say_duration(seconds)}")
        self.stop.wait(seconds)

    def _wait_backend(self, slot: int, codes: dict[str, int], failures: int) -> None:
        role, code = next(((r, c) for r, c in codes.items() if c not in KNOWN), ("", 0))
        if not role:
            why = "worker exit 1 left nothing to validate (a crash? its output is above)"
        elif code != BACKEND:
            why = f"{role} exit {code}, which no run gives (a crash?)"
        else:
            why = f"{role} exit 6 (the backend failed: an outage or a usage limit)"
        reset_at = self._reset_time(role) if code == BACKEND else None
        wait = until_reset(reset_at, datetime.now(timezone.utc))
        if wait is not None:  # failing again after the reset: at least the back-off
            if failures > 1:
                wait = max(wait, backoff(failures - 1, self.options.first_wait,
                                         self.options.max_wait))
            self._wait(slot, wait, f"{why}; its limit resets at {reset_at}")
        else:
            self._wait(slot, backoff(failures, self.options.first_wait, self.options.max_wait),
                       why)

    def _reset_time(self, role: str) -> str | None:
        """The latest reset time recorded by a run of `role` in the last minutes."""
        since, newest = int(time.time()) - 600, None
        try:
            names = os.listdir(self.paths.state / "runs")
        except FileNotFoundError:
            return None
        for name in names:
            stamp, _, rest = name.partition("-")
            if not (stamp.isdigit() and int(stamp) >= since and rest.startswith(f"{role}-")):
                continue
            try:
                manifest = json.loads((self.paths.state / "runs" / name / "manifest.json")
                                      .read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            reset = manifest.get("reset_at")
            if isinstance(reset, str) and (newest is None or reset > newest):
                newest = reset
        return newest

    def _nothing_left(self, slot: int) -> None:
        with self.lock:
            others = self.active
        if others:  # another slot's run may send a feature back to pending
            self.stop.wait(min(IDLE_POLL, self.options.first_wait))
            return
        self.finish(NOTHING_TO_DO, f"nothing left: {plan_summary(self.paths.state)}")

    def _curator_due(self, final: bool = False) -> bool:
        every = self.options.curator_every
        with self.lock:
            if every <= 0 or (final and self.runs == self.curated_runs):
                return False
            if not final and time.monotonic() - self.last_curator < every:
                return False
            self.last_curator, self.curated_runs = time.monotonic(), self.runs
            return True

    def _maybe_curate(self, slot: int) -> None:
        if not self.stop.is_set() and self._curator_due():
            code = self._run("curator", slot)
            if code in STOPS:
                self.finish(code, f"curator exit {code}: {STOPS[code]}")


def plan_summary(state: Path) -> str:
    """`3 done, 1 failed (F-004: run.sh retry F-004)`: how the plan ended."""
    plan = load_plan(state)
    counts = {s: [f.id for f in plan if f.status == s]
              for s in ("done", "failed", "blocked", "pending", "in_progress")}
    parts = []
    for status, ids in counts.items():
        if ids:
            hint = f" ({', '.join(ids)}: run.sh retry FEATURE_ID)" if status in (
                "failed", "blocked") else ""
            parts.append(f"{len(ids)} {status}{hint}")
    return ", ".join(parts) or "the plan is empty (run.sh planner)"


def run_loop(paths: Paths, options: LoopOptions) -> tuple[int, str]:
    """`run.sh loop` under the mission's loop lock; its exit code and why it ended."""
    from harness.config import load_mission_config
    from harness.errors import UsageError
    from harness.state.store import hold_lock, lock_path

    mission = load_mission_config(paths.state)
    if options.parallel > 1 and mission.workspace != "worktrees":
        raise UsageError(f"--parallel {options.parallel} needs `workspace: worktrees` in "
                         f"{paths.state / 'config.yaml'} (in a shared working tree one run "
                         "works at a time)")
    with hold_lock(lock_path(paths.state, "loop"), wait=False, what="this mission's loop") as held:
        held.label(f"run.sh loop since {datetime.now(timezone.utc):%Y-%m-%dT%H:%M:%SZ}")
        return Supervisor(paths, options).run()
