"""`run.sh doctor`: what to check before leaving the harness on cron, each problem with its fix.

Checks only read (the writability probe removes its own file) and call no model: a key is
proved by a free call (`auth`). The cron check reruns doctor in cron's bare environment: there
a key exported in a shell profile or a tool on the interactive PATH goes missing."""

from __future__ import annotations

import importlib
import os
import pwd
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

from harness.agent import sandbox
from harness.backends.cli_presets import unpriced_model
from harness.config import ROLES, MissionConfig, RoleConfig, load_mission_config
from harness.config import mission_name as mission_name_of
from harness.errors import UsageError
from harness.ops.auth import Prover, auth_check
from harness.ops.checks import FIX_PREFIX, PROBLEM, Check, attempt, platform_check
from harness.ops.commitcheck import commit_check
from harness.ops.cron import budget_check, roles_check
from harness.ops.worktrees import worktree_check
from harness.paths import STATE_FOLDERS, Paths, check_files
from harness.run import prompt
from harness.run.prepare import FEATURE_ROLES, role_config_for
from harness.state.envfile import env_files, load_env_files, user_env_file
from harness.state.plan import Feature, load_plan
from harness.state.redact import redact_data
from harness.types import SandboxPolicy

DEPENDENCIES = tuple("harness click yaml jinja2 anthropic openai pydantic rapidfuzz".split())
MEMORY_FILES = ("summary.md", "MEMORY.md", "raw.md")
KEY_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
CRON_PATH = "/usr/bin:/bin"
CRON_FIX = ("cron reads no shell profile: keep keys in <state>/env or "
            "~/.config/autonomous-harness/env (KEY=value, chmod 600), other variables in the "
            "crontab (NAME=value lines above the job)")
SAMPLE = Feature(id="F-000", title="doctor sample", description="A stand-in feature.",
                 acceptance_criteria=["the template renders"], verify="true")
EVIDENCE = {"verify": {"command": "true", "exit_code": 1, "timed_out": False, "output": "out"},
            "diff": "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"}
PRICE_WARNING = ("{} has no price, and a budget is set: its runs' cost is recorded as unknown"
                 " and no budget stops them")


def diagnose(paths: Paths, backend: str | None = None, *,
             options: dict[str, Any] | None = None, cron: bool = True) -> list[Check]:
    """Every check; `backend` and `options` (preset, command, script) override each role's."""
    checks = python_checks(paths.home) + state_checks(paths.state)
    if not checks[-1].ok and checks[-1].name == "files":
        return checks
    secrets, sources = secrets_check(paths.state)
    checks.append(secrets)
    # A broken config or plan is reported above; templates still render with stand-ins.
    mission, plan, configs = MissionConfig(), [], {}
    with suppress(Exception):
        mission = load_mission_config(paths.state)
    with suppress(Exception):
        plan = load_plan(paths.state)
    for role in ROLES:
        try:
            # the mission's sandbox and the command line's backend and options over it
            configs[role] = role_config_for(paths, role, backend, options)[0]
        except Exception as e:
            checks.append(Check(f"role {role}", False, str(e), "correct the file and key named"))
    checks += [attempt(f"template {role}", "correct the template at the line named",
                       lambda r=role, c=config: render_role(paths, r, c, plan, mission))
               for role, config in configs.items()]
    probe = cache(probe_cli)  # one `--version` per executable, not one per role
    prover = Prover()  # and one login status or free call per CLI or key
    for role, config in configs.items():
        if role == "curator" and mission.curator.mode == "rules":
            checks.append(Check("backend curator", True, "none needed (curator.mode: rules)"))
        else:
            checks.append(replace(backend_check(paths, config, probe, sources),
                                  name=f"backend {role}"))
            if (proof := auth_check(paths, role, config, prover)) is not None:
                checks.append(replace(proof, name=f"auth {role}"))
        budget = mission.budget_usd is not None or config.caps.dollars
        if budget and (model := unpriced_model(config.backend, config.options, config.model,
                                               mission.prices)) is not None:
            checks.append(Check(f"prices {role}", True, PRICE_WARNING.format(model or "the CLI's"
                                " choice"), "add the model to `prices` in config.yaml, or run"
                                " a priced one", warn=True))
        if config.sandbox == "bwrap":
            checks.append(attempt(f"sandbox {role}", sandbox.FIX,
                                  lambda c=config: sandbox_check(c)))
    checks += [roles_check(paths, configs, mission), budget_check(mission, paths), platform_check(),
               worktree_check(paths), commit_check(paths, mission)]
    if cron:
        checks += cron_checks(paths, doctor_argv(paths, backend, options), checks)
    return checks


def sandbox_check(config: RoleConfig) -> str:
    """That bwrap can make the role's sandbox here; raises what it cannot."""
    sandbox.require(SandboxPolicy(kind=config.sandbox))
    return "bwrap makes the sandbox" + (", network on" if config.sandbox_network else "")


def python_checks(home: Path) -> list[Check]:
    """Python >= 3.10, running in $HARNESS_HOME/.venv, with every dependency importable."""
    venv, version = home / ".venv", ".".join(map(str, sys.version_info[:3]))
    missing = [error for module in DEPENDENCIES if (error := import_error(module))]
    return [
        Check("python", sys.version_info >= (3, 10), f"Python {version} at {sys.executable}",
              f"install Python 3.10 or newer as python3, remove {venv}, run {home}/run.sh"),
        Check("virtualenv", Path(sys.prefix).resolve() == venv.resolve(),
              f"running in {sys.prefix}", f"run the harness through {home}/run.sh (uses {venv})"),
        Check("packages", not missing, "missing: " + ", ".join(missing) if missing
              else "all dependencies import", f"{venv}/bin/python -m pip install -e {home}"),
    ]


def import_error(module: str) -> str | None:
    """Why `module` does not import, or None when it does."""
    try:
        importlib.import_module(module)
    except Exception as e:  # a broken install fails in more ways than ImportError
        return f"{module} ({e})"
    return None


def state_checks(state: Path) -> list[Check]:
    """The state directory is writable and its plan, config and memory files are sound."""
    if not state.is_dir():
        return [Check("state", False, f"{state} does not exist",
                      "run `run.sh init` in the project, or pass --state / set HARNESS_STATE")]
    # os.access says yes to root even on an immutable folder, so really write and remove.
    try:
        fd, tmp = tempfile.mkstemp(prefix=".doctor-", dir=state)
        os.close(fd), os.unlink(tmp)
        checks = [Check("state", True, f"{state} is writable")]
    except OSError as e:
        user = pwd.getpwuid(os.getuid()).pw_name
        checks = [Check("state", False, f"{state} is not writable: {e.strerror}",
                        f"let {user} write there: chmod u+rwx {state} (and chattr -i if set)")]
    files = attempt("files", "move it away, then run doctor again",
                    lambda: check_files(state, STATE_FOLDERS) or "no fifo or device as a file")
    if not files.ok:  # every check below would read it, and wait for ever
        return [*checks, files]
    checks.append(attempt("plan", "repair features.json where named",
                          lambda: f"{len(load_plan(state))} features in features.json"))
    checks.append(attempt("config", "repair config.yaml at the key or line named",
                          lambda: f"mission {mission_name_of(load_mission_config(state), state)}"))
    for name in MEMORY_FILES:
        path = state / name
        if not path.is_file():
            checks.append(Check(name, False, f"{path} is missing", f"create it: touch {path}"))
        elif name == "summary.md" and not path.read_text(errors="replace").strip():
            checks.append(Check(name, True, f"{path} is empty", "run.sh curator", warn=True))
        else:
            checks.append(Check(name, True, f"{path} present"))
    return checks


def render_role(paths: Paths, role: str, config: RoleConfig, plan: list[Feature],
                mission: MissionConfig) -> str:
    """Render the role's template as a run would, but record nothing."""
    feature = (plan[0] if plan else SAMPLE) if role in FEATURE_ROLES else None
    fid = feature.id if feature else None
    runtime = {"FEATURE_ID": fid or "-", "role": role, "run_id": "doctor",
               "workdir": str(paths.workdir), "state": str(paths.state),
               "mission": mission_name_of(mission, paths.state),
               "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    sources = prompt.read_sources(role, fid, paths.state, paths.workdir, paths.identity,
                                  mission.prompt)
    # The validator is rendered both with and without evidence: real runs see either.
    for extra in [None, EVIDENCE] if role == "validator" else [None]:
        context = prompt.build_context(role=role, feature=feature, plan=plan, sources=sources,
                                       caps=mission.prompt, runtime=runtime, extra=extra)
        loader = prompt.RecordingLoader(prompt.template_dirs(paths.state, paths.home))
        prompt.render(config.template, prompt.canonical(redact_data(context)), loader)
    return f"{config.template} renders" + (f" for {fid}" if fid else "")


def secrets_check(state: Path) -> tuple[Check, dict[str, str]]:
    """Load the env files as a run would; which file gave each name (never a value)."""
    try:
        sources = load_env_files(state)
    except UsageError as e:
        return Check("secrets", False, str(e), "chmod 600 the file named"), {}
    files = " and ".join(str(p) for p in env_files(state))
    if not sources:
        return Check("secrets", True, f"no env file ({files}); the environment only"), {}
    said = ", ".join(f"{k} from {v}" for k, v in sorted(sources.items()))
    return Check("secrets", True, said), sources


def backend_check(paths: Paths, config: RoleConfig, probe: Callable[[str], Check],
                  sources: dict[str, str] | None = None) -> Check:
    """Whether the role's backend could run (key, CLI or script present); calls no model."""
    if config.backend == "anthropic":
        key = next((k for k in KEY_VARS if os.environ.get(k)), None)
        if key is None:
            return Check("", False, f"anthropic: neither {' nor '.join(KEY_VARS)} is set",
                         f"put ANTHROPIC_API_KEY=sk-ant-... in {paths.state / 'env'} or "
                         f"{user_env_file()} (chmod 600), or export it; or choose another "
                         "backend")
        if error := import_error("anthropic"):
            return Check("", False, f"anthropic: {error}", "reinstall: see the packages check")
        source = (sources or {}).get(key, "environment")
        return Check("", True, f"anthropic: {key} is set (from {source}), model {config.model}")
    if config.backend == "openai":
        from harness.backends.openai import check_access

        return Check("", *check_access(config.options, paths.state, config.model, sources))
    if config.backend == "command":
        from harness.backends.cli_presets import build_argv

        try:
            exe = build_argv(config.options, config.model, config.caps.turns)[0][0]
        except Exception as e:
            return Check("", False, f"command: {e}", "set the role's `preset` or `command` option")
        # The CLI runs in the working directory, so a relative path starts there.
        return probe(str(paths.workdir / exe) if "/" in exe else exe)
    script = str(config.options.get("script") or "")
    found = next((p for p in (paths.state / script, paths.home / script)
                  if script and p.is_file()), None)
    if found is None:
        return Check("", False, f"scripted: script file {script!r} not found",
                     "pass --script FILE, or set `script` in the role's options")
    return Check("", True, f"scripted: replays {found}; for tests and demos only",
                 "for real work use the anthropic or command backend", warn=True)


def probe_cli(exe: str) -> Check:
    """Whether `exe` is on PATH and answers `--version` within 10 s."""
    fix = (f"install {exe} or put its folder on PATH (or give its full path in `command`,"
           " followed by the preset's flags: a `command` is run as it is)")
    path = shutil.which(exe)
    if path is None:
        return Check("", False, f"command: {exe} is not on PATH", fix)
    try:
        proc = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10,
                              stdin=subprocess.DEVNULL)
    except (subprocess.TimeoutExpired, OSError) as e:
        return Check("", False, f"command: {exe} --version: {e}", fix)
    answer = "".join((proc.stdout.strip() or proc.stderr.strip()).splitlines()[:1])
    if proc.returncode == 0:
        return Check("", True, f"command: {path} ({answer or 'no version printed'})")
    return Check("", False, f"command: {exe} --version exited {proc.returncode}: {answer}", fix)


def cron_env(state: Path) -> dict[str, str]:
    """What cron gives a job (HOME, LOGNAME, SHELL, PATH=/usr/bin:/bin), plus HARNESS_STATE."""
    user = pwd.getpwuid(os.getuid())
    return {"HOME": user.pw_dir, "LOGNAME": user.pw_name, "SHELL": "/bin/sh",
            "PATH": CRON_PATH, "HARNESS_STATE": str(state)}


def doctor_argv(paths: Paths, backend: str | None, options: dict[str, Any] | None) -> list[str]:
    """`run.sh doctor --no-cron` for the same state, working directory and overrides."""
    flags = [(f"--{k}", str(v)) for k, v in {"backend": backend, **(options or {})}.items() if v]
    return [str(paths.home / "run.sh"), "--state", str(paths.state), "--workdir",
            str(paths.workdir), "doctor", "--no-cron", *(arg for flag in flags for arg in flag)]


def cron_checks(paths: Paths, argv: list[str], seen: list[Check]) -> list[Check]:
    """Run `argv` (a doctor) under cron_env; each problem it prints that `seen` lacks."""
    env = cron_env(paths.state)
    by_hand = f"see it by hand: cd {shlex.quote(str(paths.workdir))} && env -i " + shlex.join(
        [f"{k}={v}" for k, v in env.items()] + argv)
    try:
        proc = subprocess.run(argv, cwd=paths.workdir, env=env, capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL)
    except (subprocess.TimeoutExpired, OSError) as e:
        return [Check("cron", False, f"doctor under a cron environment: {e}", by_hand)]
    problems: list[Check] = []
    for line in f"{proc.stdout}\n{proc.stderr}".splitlines():
        if m := PROBLEM.match(line):
            problems.append(Check(m["name"], False, m["detail"]))
        elif line.startswith(FIX_PREFIX) and problems:
            problems[-1].fix = line.removeprefix(FIX_PREFIX)
    if proc.returncode != 0 and not problems:
        tail = " ".join((proc.stderr.strip() or proc.stdout.strip())[-600:].split())
        return [Check("cron", False, f"doctor exited {proc.returncode} under cron: {tail}",
                      by_hand)]
    known = {(c.name, c.detail) for c in seen if not c.ok}
    new = [Check(f"{c.name} (under cron)", False, c.detail, f"{c.fix}; {CRON_FIX}")
           for c in problems if (c.name, c.detail) not in known]
    more = "no problems beyond those above" if problems else "no problems"
    return new or [Check("cron", True, f"under cron (PATH={CRON_PATH}, no profile): {more}")]
