"""What the harness itself shows a validator: the feature's `verify` command, run by the
harness before the model is called, and the workers' diff."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from harness.agent import sandbox as sandboxing
from harness.agent.procs import die_with_parent, stop_tree
from harness.config import MissionConfig
from harness.paths import Paths
from harness.run import git
from harness.run.prompt import cap_text
from harness.state.plan import Feature
from harness.state.redact import scrubbed_environ
from harness.types import SandboxPolicy


def run_verify(command: str, workdir: Path, timeout: float, max_chars: int,
               sandbox: SandboxPolicy | None = None) -> dict[str, Any]:
    """Run a feature's `verify` command in its own process group, confined as the validator's
    role says; exit code and output tail."""
    proc = sandboxing.start(["/bin/sh", "-c", command], sandbox or SandboxPolicy(), workdir,
                            cwd=workdir, env=scrubbed_environ(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True, preexec_fn=die_with_parent)
    try:
        out, _ = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        stop_tree(proc)
        out, _ = proc.communicate()
        timed_out = True
    output = out.decode(errors="replace")
    return {"command": command, "exit_code": 124 if timed_out else proc.returncode,
            "timed_out": timed_out, "output": cap_text(output, max_chars, keep="tail")}


def validator_evidence(paths: Paths, feature: Feature, mission: MissionConfig,
                       options: dict[str, Any], sandbox: SandboxPolicy,
                       base: str | None = None) -> dict[str, Any]:
    """The verify result and the workers' diff (against `base`: a feature branch's), for the
    validator's prompt."""
    caps = mission.prompt
    verify = None
    if feature.verify:
        verify = run_verify(feature.verify, paths.workdir,
                            float(options.get("verify_timeout", 600)), caps.verify_chars, sandbox)
    diff = None
    if git.is_repo(paths.workdir):
        diff = git.feature_diff(paths.workdir, feature.id, caps.diff_chars, base) or None
    return {"verify": verify, "diff": diff}
