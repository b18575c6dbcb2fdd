"""The environment an agent's commands run in."""

from __future__ import annotations

import os
from collections.abc import Iterable

from harness.state.redact import scrubbed_environ
from harness.types import Session


def agent_env(session: Session, keep: Iterable[str] = (),
              environ: dict[str, str] | None = None) -> dict[str, str]:
    """Secrets scrubbed (but the names in `keep`), the run named so `run.sh note` and
    `run.sh verdict` know it, and run.sh first on PATH.
    """
    source = dict(os.environ if environ is None else environ)
    env = scrubbed_environ(source)
    env.update({name: source[name] for name in keep if name in source})
    env.update(
        HARNESS_RUN_ID=session.run_id,
        HARNESS_ROLE=session.role,
        FEATURE_ID=session.feature_id or "",
        HARNESS_STATE=str(session.state),
        HARNESS_HOME=str(session.home),
        # the working directory as its shell would say it: OpenCode works in $PWD, not in
        # the directory it was started in, so an inherited PWD would send it elsewhere
        PWD=str(session.workdir),
        PATH=os.pathsep.join(p for p in (str(session.home), env.get("PATH", os.defpath)) if p),
    )
    return env
