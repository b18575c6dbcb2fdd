"""What an agent CLI's error message means for the run, whichever CLI printed it.

An agent CLI reports a service it could not use in its own words (a Codex `turn.failed`, a
Claude Code result with `is_error` and `api_error_status`, a Gemini `result` with an error,
an OpenCode `error` event, a line on stderr). None of these
is the agent failing the task: a usage or rate limit, a server or transport error is
infrastructure (exit 6, not an attempt); a rejected key, a missing variable, an unknown
model or a refusal to run is the person's to fix (exit 2, with the fix named). The patterns
were taken from what the real CLIs print (tests/test_real_clis.py drives them).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.errors import BackendError, HarnessError, UsageError
from harness.state.envfile import user_env_file

_MISSING_VAR = re.compile(r"missing environment variable:?\s*`?(\w+)`?"
                          r"|must specify the `?(\w+)`? environment variable", re.I)
_AUTH = re.compile(
    r"\b401\b|\b403\b|unauthori[sz]ed|invalid api key|incorrect api key|invalid x-api-key"
    r"|authentication_error|not logged in|please run /login|permission_error"
    r"|api key not valid|api_key_invalid|set an auth method|providerautherror", re.I)
_MODEL = re.compile(
    r"model_not_found|issue with the selected model|model[ `:]+\S+ (?:does not exist|not found)"
    r"|does not exist or you do not have access|unknown model|invalid model"
    r"|modelnotfound|is not found for api version"
    r"|model is not supported when using", re.I)  # Codex: a model the account may not use
# The CLI never ran: the keeper or bwrap could not exec it, or `#!/usr/bin/env node` found no
# node (GNU env quotes the name 'x' or ‘x’; busybox says "can't execute 'x'")
_NOT_STARTED = re.compile(r"harness keeper: cannot run .*|bwrap: execvp .*"
                          r"|\S*env: (?:can't execute )?['‘][^'’]*['’]: No such file.*")
# A CLI older (or newer) than the preset's flags: commander's, clap's and yargs's words
_FLAGS = re.compile(r"^\s*(?:error: )?(?:unknown option|unexpected argument|unknown arguments?:)",
                    re.I | re.M)
# no credit, or a plan without the CLI (Claude Code's, Codex's words): no wait lifts these
# (Gemini's per-minute 429 says "exceeded your current quota, please check your plan and
# billing details ... retry in 37s": a limit, not this)
CREDIT = re.compile(r"credit balance is too low|insufficient_quota|quota exceeded\. check your"
                    r" plan and billing|to use codex with your chatgpt plan", re.I)
_REFUSED = re.compile(r"not inside a trusted directory|skip-git-repo-check", re.I)
_SERVER = re.compile(
    r"\b5\d\d\b|server[- ]side issue|server_error|internal server error|overloaded"
    r"|high demand|stream disconnected|error sending request|connection (?:refused|reset)"
    r"|unable to connect|failed ?to ?open ?socket|econn(?:refused|reset)"
    r"|timed? ?out|network error|service unavailable|bad gateway", re.I)

AUTH_FIX = ("log the CLI in (`claude login`, `codex login`, `opencode auth login`) or give it"
            " its key: put the key's variable in the role's `options: {pass_env: [...]}`")
MODEL_FIX = ("set the role's `model` to one this CLI's provider serves, or to \"\" to let the"
             " CLI choose")
FLAGS_FIX = ("update the CLI to a version that takes the preset's flags (docs/backends.md names"
             " them), or set the role's `command` and `args` to the ones it takes")
CREDIT_FIX = ("add credit to the account the CLI bills (its provider's billing page) or a plan"
              " that includes the CLI, or give it another key or login")
REFUSED_FIX = "run it in a git repository or pass the flag it names in the role's `args`"
KEY, ENV, MODEL, REFUSED, FLAGS = "key", "env", "model", "refused", "flags"


class CliRefused(UsageError):
    """The CLI could not start on its work for a reason the person fixes (exit 2): `kind` is
    a refused or missing key, a variable not passed, an unknown model, or a refusal."""

    def __init__(self, said: str, kind: str, variable: str | None = None, fix: str = ""):
        super().__init__(f"{said}; {fix}" if fix else said)
        self.said, self.kind, self.variable, self.fix = said, kind, variable, fix


def classify(message: str, status: int | None = None) -> HarnessError | None:
    """The error an agent CLI's failure message stands for, or None when it is not one of
    these (then the run is judged as the agent's own). Usage limits, which carry a reset
    time, are read first by `cli_results.raise_for_failure`. A refusal's fix is generic
    here; `fix_for` names the variable and the files."""
    text = f"{status or ''} {message}"
    short = " ".join(message.split())[:300]
    if m := _MISSING_VAR.search(message):
        var = m[1] or m[2]
        return CliRefused(f"the agent CLI needs the environment variable {var}, which the"
                          f" harness does not pass unless asked ({short})", ENV, var,
                          f"add it to the role's `options: {{pass_env: [{var}]}}`")
    if _FLAGS.search(message):
        return CliRefused(f"the agent CLI does not take its flags: {short}", FLAGS,
                          fix=FLAGS_FIX)
    if CREDIT.search(message):
        return CliRefused(f"the agent CLI's account has no credit left: {short}", REFUSED,
                          fix=CREDIT_FIX)
    if status in (401, 403) or _AUTH.search(text):
        return CliRefused(f"the agent CLI's credentials were refused: {short}", KEY,
                          fix=AUTH_FIX)
    if status == 404 or _MODEL.search(message):
        return CliRefused(f"the agent CLI's model is unknown to its provider: {short}", MODEL,
                          fix=MODEL_FIX)
    if _REFUSED.search(message):
        return CliRefused(f"the agent CLI refused to run here: {short}", REFUSED,
                          fix=REFUSED_FIX)
    if status == 429 or (status or 0) >= 500 or _SERVER.search(text):
        return BackendError(f"the agent CLI's model service failed: {short}")
    return None


def not_started(code: int | None, stdout: str, stderr: str) -> str | None:
    """What the CLI's stderr says when it could not be started at all (it printed nothing,
    failed, and its first line is the exec's failure), else None."""
    lines = stderr.strip().splitlines()
    if not code or stdout.strip() or not lines:
        return None
    return m[0] if (m := _NOT_STARTED.match(lines[0])) else None


@dataclass(frozen=True)
class Setup:
    """What a fix names: the CLI's login command and key variables, what the role passes,
    the environment the harness has, the state folder and the role."""

    login: str
    key_vars: tuple[str, ...]
    pass_env: tuple[str, ...]
    environ: Mapping[str, str]
    state: Path
    role: str


def fix_for(error: CliRefused, setup: Setup) -> str:
    """The one change that fixes `error`, naming the variable and the file to put it in."""
    role_yaml = setup.state / "roles" / f"{setup.role}.yaml"
    files = f"{setup.state / 'env'} or {user_env_file()} (chmod 600; cron reads these)"

    def pass_it(var: str) -> str:
        return f"add `options: {{pass_env: [{var}]}}` to {role_yaml}"

    def put_it(var: str) -> str:
        return f"put the line `{var}=...` in {files}"

    if error.kind == MODEL:
        return (f"set `model` in {role_yaml} to one this CLI's provider serves, or to \"\" to "
                "let the CLI choose")
    if error.kind in (REFUSED, FLAGS):  # their fixes are the error's own
        return f"{error.fix or REFUSED_FIX} ({role_yaml})"
    if error.kind == ENV and error.variable:
        var = error.variable
        if setup.environ.get(var) and var not in setup.pass_env:
            return f"{var} is set, but no secret reaches the CLI unless asked: {pass_it(var)}"
        return f"{var} is not set: {put_it(var)}, and {pass_it(var)}"
    return _key_fix(setup, pass_it, put_it)


def _key_fix(setup: Setup, pass_it: Callable[[str], str], put_it: Callable[[str], str]) -> str:
    have = [v for v in setup.key_vars if setup.environ.get(v)]
    passed = [v for v in have if v in setup.pass_env]
    unset = [v for v in setup.pass_env if v in setup.key_vars and not setup.environ.get(v)]
    login = f"log the CLI in ({setup.login}) as the user the harness runs as"
    if passed:
        return f"the key in {passed[0]} was refused: {put_it(passed[0])} with a valid key"
    if have:
        return f"{have[0]} is set but not passed to the CLI: {pass_it(have[0])}; or {login}"
    if unset:
        return f"{unset[0]} is listed in pass_env but not set: {put_it(unset[0])}"
    var = setup.key_vars[0] if setup.key_vars else "the key's variable"
    return f"{login}, or give it a key: {put_it(var)}, and {pass_it(var)}"
