"""What the harness itself shows a validator: the feature's `verify` command, run by the
harness before the model is called, and the workers' diff."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path
from typing import IO, Any

from harness.agent import sandbox as sandboxing
from harness.agent.procs import die_with_parent, stop_tree
from harness.config import MissionConfig
from harness.paths import Paths
from harness.run import git
from harness.run.prompt import cap_text
from harness.state.plan import Feature
from harness.state.redact import scrubbed_environ
from harness.state.store import StreamRecord
from harness.types import SandboxPolicy

LOG_CAP = 8 << 20  # bytes of `verify` output kept in the run's verify.log
CHUNK = 65536


def run_verify(command: str, workdir: Path, timeout: float, max_chars: int,
               sandbox: SandboxPolicy | None = None, log: Path | None = None) -> dict[str, Any]:
    """Run a feature's `verify` command in its own process group, confined as the validator's
    role says; exit code and output tail. The output is streamed: the tail the prompt shows
    is all that is held, and with `log` the first LOG_CAP bytes go to that file (a `verify`
    printing 1 GB was held whole: 2.9 GB peak)."""
    try:
        record = StreamRecord(log, LOG_CAP) if log is not None else None
    except OSError:  # a full disk or a read-only state: the prompt still gets the tail
        record = None
    proc = sandboxing.start(["/bin/sh", "-c", command], sandbox or SandboxPolicy(), workdir,
                            cwd=workdir, env=scrubbed_environ(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True, preexec_fn=die_with_parent)
    tail = OutputTail(max(4 * max_chars, CHUNK))
    reader = threading.Thread(target=_drain, args=(proc.stdout, tail, record), daemon=True)
    reader.start()
    reader.join(timeout)  # the end of the output: every holder of the pipe is done
    timed_out = reader.is_alive()
    if timed_out:
        stop_tree(proc)
        reader.join()
    proc.wait()
    text = tail.text()
    output = (cap_text(text, max_chars, keep="tail") if not tail.dropped
              else "[... earlier text truncated ...]\n" + text[-max_chars:])
    return {"command": command, "exit_code": 124 if timed_out else proc.returncode,
            "timed_out": timed_out, "output": output}


class OutputTail:
    """The last `size` bytes of a stream, and how many came before them."""

    def __init__(self, size: int) -> None:
        self.size, self.dropped = size, 0
        self.data = bytearray()

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        over = len(self.data) - self.size
        if over > 0:
            del self.data[:over]
            self.dropped += over

    def text(self) -> str:
        return self.data.decode(errors="replace")


def _drain(stream: IO[bytes], tail: OutputTail, record: StreamRecord | None) -> None:
    """Read the command's output to its end into the tail and the record."""
    try:
        for chunk in iter(lambda: stream.read1(CHUNK), b""):
            tail.add(chunk)
            if record is not None:
                record.write(chunk)
    finally:
        stream.close()
        if record is not None:
            record.close()


def verify_log(state: Path) -> Path:
    """Where this process's `verify` output waits for its run's folder (`keep_verify_log`)."""
    return state / "runs" / f".verify-{os.getpid()}.log"


def keep_verify_log(state: Path, folder: Path) -> str | None:
    """Move the `verify` output this process wrote into the run's folder; its name there."""
    try:
        os.replace(verify_log(state), folder / "verify.log")
    except FileNotFoundError:
        return None
    return "verify.log"


def validator_evidence(paths: Paths, feature: Feature, mission: MissionConfig,
                       options: dict[str, Any], sandbox: SandboxPolicy,
                       base: str | None = None) -> dict[str, Any]:
    """The verify result and the workers' diff (against `base`: a feature branch's), for the
    validator's prompt."""
    caps = mission.prompt
    verify = None
    if feature.verify:
        verify = run_verify(feature.verify, paths.workdir,
                            float(options.get("verify_timeout", 600)), caps.verify_chars, sandbox,
                            log=verify_log(paths.state))
    diff = None
    if git.is_repo(paths.workdir):
        diff = git.feature_diff(paths.workdir, feature.id, caps.diff_chars, base) or None
    return {"verify": verify, "diff": diff}
