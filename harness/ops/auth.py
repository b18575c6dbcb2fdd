"""`doctor`'s proof that a role's backend can authenticate, in the environment a run has
(doctor's second run, in cron's bare environment, proves it there too).

The API backend makes the Messages API's free `count_tokens` call, which checks the key and
the model at no cost. An agent CLI is asked its own login status (`claude auth status`,
`codex login status`) in the environment the harness gives it: secrets scrubbed but for the
preset's own exported key or the role's `pass_env`, as a run's. An Anthropic key Claude Code
is given is checked by the same free call. A service that cannot be reached proves nothing
either way: a warning.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import anthropic

from harness.backends.api_errors import APIRefused, Where, backend_error, role_file
from harness.backends.cli_errors import KEY, CliRefused, Setup, fix_for
from harness.backends.cli_presets import cli_model, passed_env, preset_for
from harness.backends.server import server_url
from harness.config import RoleConfig
from harness.errors import UsageError
from harness.ops.checks import Check
from harness.paths import Paths
from harness.state.redact import scrubbed_environ

KEY_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
CLAUDE_DEFAULT = "claude-sonnet-4-5"  # what a key is checked with when the CLI picks a model
TIMEOUT = 30  # seconds for one status command or one free call


class Prover:
    """One doctor's proofs: each free call and each status command made once (per key,
    address and model; per CLI and environment), not once per role."""

    def __init__(self) -> None:
        self.counted: dict[tuple, tuple[anthropic.APIError | None, str]] = {}
        self.asked: dict[tuple, subprocess.CompletedProcess] = {}

    def count_tokens(self, *args: str | None) -> tuple[anthropic.APIError | None, str]:
        if args not in self.counted:
            self.counted[args] = _count_tokens(*args)
        return self.counted[args]

    def status(self, argv: tuple[str, ...], env: dict[str, str],
               cwd: Path) -> subprocess.CompletedProcess:
        key = (argv, tuple(sorted(env.items())), cwd)
        if key not in self.asked:
            self.asked[key] = subprocess.run(argv, env=env, cwd=cwd, text=True,
                                             capture_output=True, timeout=TIMEOUT,
                                             stdin=subprocess.DEVNULL)
        return self.asked[key]


def auth_check(paths: Paths, role: str, config: RoleConfig,
               prover: Prover | None = None) -> Check | None:
    """Whether the role's backend can authenticate; None where there is nothing to prove
    (a script, a role's own command) or the backend check already failed (no key, no CLI)."""
    prover = prover or Prover()
    if config.backend == "anthropic":
        env = dict(os.environ)
        var = next((k for k in KEY_VARS if env.get(k)), None)
        if var is None:
            return None
        try:
            base_url = server_url(config.options, "ANTHROPIC_BASE_URL", "https://api.anthropic.com")
        except UsageError as e:
            return Check("", False, f"anthropic: {e}", "set the server's address whole")
        where = Where(var, config.model, paths.state, role_file(paths.state, role))
        return free_call(prover, where, env[var], base_url, "anthropic")
    if config.backend == "command":
        return cli_auth(prover, paths, role, config)
    return None


def free_call(prover: Prover, where: Where, key: str, base_url: str | None,
              label: str) -> Check:
    """The Messages API's count_tokens with `key` and `where.model`: no tokens are billed."""
    error, url = prover.count_tokens(where.var, key, base_url or None, where.model)
    if error is None:
        return Check("", True, f"{label}: the API takes the key in {where.var} and knows "
                               f"model {where.model} (count_tokens, which costs nothing)")
    said = backend_error(error, 0, url, where)
    if isinstance(said, APIRefused):
        return Check("", False, f"{label}: {said.said}", said.fix)
    return Check("", True, f"{label}: could not check the key in {where.var}: {said}",
                 "run doctor again when the API answers", warn=True)


def _count_tokens(var: str, key: str, base_url: str | None,
                  model: str) -> tuple[anthropic.APIError | None, str]:
    token = var == "ANTHROPIC_AUTH_TOKEN"
    client = anthropic.Anthropic(api_key=None if token else key, auth_token=key if token else None,
                                 base_url=base_url, max_retries=0, timeout=TIMEOUT)
    try:
        client.messages.count_tokens(model=model, messages=[{"role": "user", "content": "doctor"}])
    except anthropic.APIError as e:
        return e, str(client.base_url)
    return None, str(client.base_url)


def cli_env(paths: Paths, config: RoleConfig) -> dict[str, str]:
    """The environment a run gives the role's CLI: secrets scrubbed but `pass_env`, and
    run.sh's folder first on PATH."""
    env = scrubbed_environ(dict(os.environ))
    env.update({k: os.environ[k] for k in passed_env(config.options, dict(os.environ))
                if k in os.environ})
    env["PATH"] = os.pathsep.join(p for p in (str(paths.home), env.get("PATH", "")) if p)
    return env


def cli_auth(prover: Prover, paths: Paths, role: str, config: RoleConfig) -> Check | None:
    """The CLI's own login status, in the environment a run gives it."""
    try:
        name, preset = preset_for(config.options)
    except UsageError:
        return None  # the backend check names the unknown preset
    env = cli_env(paths, config)
    exe = shutil.which(preset.argv[0], path=env["PATH"]) if preset.argv else None
    if config.options.get("command") or not preset.status or exe is None:
        return None
    try:
        proc = prover.status((exe, *preset.status), env, paths.workdir)
    except (OSError, subprocess.TimeoutExpired) as e:
        return Check("", True, f"{name}: could not ask its login status: {e}", warn=True)
    said = " ".join((proc.stdout.strip() or proc.stderr.strip()).split())[:200]
    # the fix is told what the harness has, which may hold a key the CLI is not given
    setup = Setup(preset.login, preset.key_vars,
                  tuple(passed_env(config.options, dict(os.environ))),
                  dict(os.environ), paths.state, role)
    if name == "claude":
        return _claude_status(prover, proc, said, setup, config, env)
    if proc.returncode == 0:
        return Check("", True, f"{name}: {said or 'logged in'} ({' '.join(preset.status)})")
    given = [v for v in setup.key_vars if v in setup.pass_env and env.get(v)]
    if given:  # Codex takes a key from the environment where its provider says so
        return Check("", True, f"{name}: not logged in ({said}); {given[0]} is passed to it, "
                               "which it uses where its model provider reads that variable",
                     f"or log it in: {preset.login}", warn=True)
    return _not_logged_in(name, said, setup)


def _claude_status(prover: Prover, proc: subprocess.CompletedProcess, said: str,
                   setup: Setup, config: RoleConfig, env: dict[str, str]) -> Check:
    try:
        status = json.loads(proc.stdout)
    except ValueError:
        return Check("", True, f"claude: cannot tell its login status (`claude auth status` "
                               f"exited {proc.returncode}: {said})", warn=True)
    if not status.get("loggedIn"):
        return _not_logged_in("claude", said, setup)
    source = str(status.get("apiKeySource") or "")
    if source in KEY_VARS and env.get(source):  # a key it is given: prove it takes
        model = cli_model(config.options, config.model) or CLAUDE_DEFAULT
        where = Where(source, model, setup.state, setup.state / "roles" / f"{setup.role}.yaml")
        return free_call(prover, where, env[source], env.get("ANTHROPIC_BASE_URL"), "claude")
    return Check("", True, f"claude: logged in ({status.get('authMethod', '?')})")


def _not_logged_in(name: str, said: str, setup: Setup) -> Check:
    fix = fix_for(CliRefused("", KEY), setup)
    return Check("", False, f"{name}: not logged in, in the environment a run gives it "
                            f"({said})", fix)
