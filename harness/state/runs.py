"""Run records under `<state>/runs/<run-id>/`: manifest.json, prompt.md, transcript.jsonl.

Every record is written through `store.write_record`/`append_record`, which redact secrets. A
manifest is written with status `started` before the model is called and
finished in a `finally`; a started run whose process is gone is `interrupted`.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import FORMAT_VERSION, __version__, names, platform
from harness.errors import UsageError
from harness.paths import check_files
from harness.state.memory import utc_now
from harness.state.reading import check_types, parse_json_line, read_json, type_name
from harness.state.store import append_record, read_tail, write_record

RUN_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
DAMAGED = "damaged"  # the status views give a run whose manifest they cannot read
_TEXT, _COUNT, _MAYBE = (str,), (int,), (type(None),)
# What the views and reconstruct read from a manifest, by type; null is taken for all but
# the run's id and status (a scripted run has no model, an unpriced one no cost).
MANIFEST_TYPES = {
    "run_id": _TEXT, "status": _TEXT, "templates": (dict,) + _MAYBE,
    **{key: _TEXT + _MAYBE for key in (
        "role", "feature", "backend", "model", "template", "context_sha256", "prompt_sha256",
        "started_at", "finished_at", "pid_start", "summary", "detail", "error", "result",
        "outcome", "reset_at")},
    **{key: _COUNT + _MAYBE for key in ("pid", "exit_code", "turns")},
    **{key: (dict,) + _MAYBE for key in ("usage", "verify", "options", "role_config")},
    "cost_usd": (int, float) + _MAYBE,
}

def runs_dir(state: Path) -> Path:
    return state / "runs"


def claim_run_id(state: Path, role: str, feature: str | None, now: float | None = None) -> str:
    """A new unique run id `<unix-seconds>-<role>-<FEATURE_ID>`, its folder created to claim it."""
    base = f"{int(now if now is not None else time.time())}-{role}-{feature or 'mission'}"
    runs_dir(state).mkdir(parents=True, exist_ok=True)
    for n in range(1, 10_000):
        run_id = base if n == 1 else f"{base}-{n}"
        try:
            (runs_dir(state) / run_id).mkdir()
            return run_id
        except FileExistsError:
            continue
    raise RuntimeError(f"could not claim a run id under {runs_dir(state)}")


_process_start = platform.process_start  # None where unknown: a live pid then counts


def _alive(pid: int, started: str | None) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # OverflowError: no pid is that large
        return False
    except PermissionError:
        return True
    return started is None or _process_start(pid) in (None, started)


@dataclass
class RunRecord:
    """An open run record; `finish` closes it."""

    state: Path
    run_id: str
    manifest: dict[str, Any]

    @property
    def folder(self) -> Path:
        return runs_dir(self.state) / self.run_id

    def save(self) -> None:
        text = json.dumps(self.manifest, indent=2, ensure_ascii=False) + "\n"
        write_record(self.folder / "manifest.json", text)

    def write_file(self, name: str, text: str) -> None:
        write_record(self.folder / name, text)

    def record(self, event: dict[str, Any]) -> None:
        """Append one event to transcript.jsonl (redacted; one writer per run)."""
        event = {"time": utc_now(), **event}
        line = json.dumps(event, ensure_ascii=False, default=str) + "\n"
        append_record(self.folder / "transcript.jsonl", line, lock=None)

    def finish(self, status: str, exit_code: int, **fields: Any) -> None:
        self.manifest.update(fields)
        self.manifest.update(status=status, exit_code=exit_code, finished_at=utc_now())
        self.save()


def start_run(state: Path, run_id: str, fields: dict[str, Any]) -> RunRecord:
    """Write the manifest of a starting run: who, what, from which sources, by which process."""
    pid = os.getpid()
    manifest = {
        "format": FORMAT_VERSION,
        "harness_version": __version__,
        "run_id": run_id,
        **fields,
        "status": "started",
        "started_at": utc_now(),
        "pid": pid,
        "pid_start": _process_start(pid),
    }
    record = RunRecord(state, run_id, manifest)
    record.save()
    return record


def check_run_id(run_id: str) -> str:
    if (not run_id or len(run_id) > names.RUN_ID_MAX or not set(run_id) <= RUN_ID_CHARS
            or run_id.startswith(".")):
        raise UsageError(f"bad run id {names.shown(run_id)}; expected letters, digits, '_', "
                         f"'.' and '-', at most {names.RUN_ID_MAX}")
    return run_id


def load_manifest(state: Path, run_id: str) -> dict[str, Any]:
    """The manifest of a run, with `status` shown as `interrupted` if its process is gone."""
    path = runs_dir(state) / check_run_id(run_id) / "manifest.json"
    check_files(path.parent, ("",))  # a fifo for its transcript: show and report wait for ever
    try:
        manifest = check_manifest(read_json(path), path, run_id)
    except FileNotFoundError:
        raise UsageError(f"no run {run_id} under {runs_dir(state)}") from None
    if manifest.get("status") == "started" and not _alive(
        manifest.get("pid") or 0, manifest.get("pid_start")
    ):
        manifest["status"] = "interrupted"
    return manifest


def check_manifest(data: Any, path: Path, run_id: str) -> dict[str, Any]:
    """`data` if it is a manifest the views can read (run id filled in from its folder);
    else UsageError naming the file and the key."""
    if not isinstance(data, dict):
        raise UsageError(f"{path}: expected a JSON object, found {type_name(data)}")
    check_types(data, MANIFEST_TYPES, path)
    if data.setdefault("run_id", run_id) != run_id:
        raise UsageError(f"{path}: key 'run_id': {data['run_id']!r} is not its folder's name")
    if not all(isinstance(v, str) for v in (data.get("templates") or {}).values()):
        raise UsageError(f"{path}: key 'templates': expected an object of hashes")
    return data


def damaged_run(run_id: str, error: UsageError) -> dict[str, Any]:
    """What the views show of a run whose manifest cannot be read: marked damaged, and why."""
    return {"run_id": run_id, "status": DAMAGED, "detail": str(error)}


def run_progress(state: Path, run_id: str, lines: int = 50) -> dict[str, Any] | None:
    """The turns and cost so far that a run's newest events report (`so_far`), if any."""
    path = runs_dir(state) / check_run_id(run_id) / "transcript.jsonl"
    for line in reversed(read_tail(path, lines)):
        event = parse_json_line(line)  # None: the line being written, or a damaged one
        if event is not None and isinstance(event.get("so_far"), dict):
            return event["so_far"]
    return None


def recent_runs(state: Path, role: str, feature: str | None, n: int) -> list[dict[str, Any]]:
    """Manifests of the last `n` runs of `role` on `feature`, oldest first."""
    if n <= 0:
        return []
    pattern = f"*-{role}-{feature or 'mission'}"
    folders = [*runs_dir(state).glob(pattern), *runs_dir(state).glob(f"{pattern}-*")]
    manifests = []
    for folder in folders:
        try:
            manifests.append(load_manifest(state, folder.name))
        except UsageError:
            continue
    manifests.sort(key=lambda m: (m.get("started_at") or "", m["run_id"]))
    return manifests[-n:]


def last_run_id(state: Path, role: str, feature: str) -> str | None:
    """The id of the latest run of `role` on `feature`, None before the first."""
    last = recent_runs(state, role, feature, 1)
    return last[0]["run_id"] if last else None


def list_runs(state: Path) -> list[dict[str, Any]]:
    """Manifests of all runs, oldest first; a folder without a readable manifest is skipped."""
    out = []
    folder = runs_dir(state)
    if not folder.is_dir():
        return out
    for child in sorted(folder.iterdir(), key=lambda p: p.name):
        if (child / "manifest.json").is_file():
            try:
                out.append(load_manifest(state, child.name))
            except UsageError as e:
                out.append(damaged_run(child.name, e))
    out.sort(key=lambda m: (m.get("started_at") or "", m["run_id"]))
    return out
