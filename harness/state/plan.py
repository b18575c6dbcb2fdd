"""The plan, `<state>/features.json`: load, validate, select, merge, flip status.

Validation and selection are pure; `update_plan` is the one locked
read-modify-write through which the harness changes a feature.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness import names
from harness.errors import UsageError
from harness.state.reading import parse_json, read_text
from harness.state.store import hold_lock, lock_path, write_json

ID_PATTERN = names.FEATURE_ID  # fullmatch: F- and 3 to 9 ASCII digits
Status = Literal["pending", "in_progress", "done", "failed", "blocked"]
VERIFY_MAX_BYTES = 100_000  # Linux refuses one exec argument over 128 KiB (MAX_ARG_STRLEN)


class Feature(BaseModel):
    """One planned feature; only the harness changes `status` and `attempts`."""

    model_config = ConfigDict(extra="forbid")

    id: str
    title: str
    description: str
    acceptance_criteria: list[str]
    verify: str | None = None
    status: Status = "pending"
    attempts: int = Field(default=0, ge=0, le=1_000_000)  # max_attempts' own range
    blocked_reason: str | None = None
    source_id: str | None = None  # the id in the plan it was imported from (a Ralph prd.json)

    @field_validator("id")
    @classmethod
    def _id_form(cls, v: str) -> str:
        return names.check_feature_id(v)

    @field_validator("title", "description")
    @classmethod
    def _non_empty(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must not be empty")
        return v

    @field_validator("verify")
    @classmethod
    def _runnable(cls, v: str | None) -> str | None:
        if v is not None and "\x00" in v:  # no shell command can hold one: every run would fail
            raise ValueError("must not hold a NUL byte")
        if v is not None and (size := len(v.encode("utf-8", "replace"))) > VERIFY_MAX_BYTES:
            raise ValueError(f"{size:,} bytes, more than a command can hold "
                             f"({VERIFY_MAX_BYTES:,}): put it in a script and run that")
        return v

    @field_validator("acceptance_criteria")
    @classmethod
    def _criteria(cls, v: list[str]) -> list[str]:
        if not v or not all(c.strip() for c in v):
            raise ValueError("must be a non-empty list of non-empty strings")
        return v


def plan_path(state: Path) -> Path:
    return state / "features.json"


def check_feature_id(fid: str) -> str:
    """`fid` if it has the F-001 form, else UsageError (so it can never name a path)."""
    try:
        return names.check_feature_id(fid)
    except ValueError as e:
        raise UsageError(str(e)) from None


def validate_plan(data: object, source: str) -> list[Feature]:
    """Features from parsed JSON; UsageError names `source`, the feature and the key."""
    if not isinstance(data, list):
        raise UsageError(f"{source}: expected a JSON list of features")
    features: list[Feature] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(data):
        where = f"{source}: feature [{i}]"
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            fid = item["id"]
            where += f" ({fid if fid.isprintable() and len(fid) <= 40 else names.shown(fid)})"
        try:
            feature = Feature.model_validate(item)
        except ValidationError as e:
            err = e.errors()[0]
            key = ".".join(str(p) for p in err["loc"]) or "(item)"
            msg = err["msg"].removeprefix("Value error, ")
            raise UsageError(f"{where} key '{key}': {msg}") from None
        if feature.id in seen:
            first = seen[feature.id]
            raise UsageError(f"{where} key 'id': duplicate id {feature.id} (as feature [{first}])")
        seen[feature.id] = i
        features.append(feature)
    return features


def parse_plan(text: str, source: str) -> list[Feature]:
    """Features from JSON text; a syntax error names the line and column."""
    return validate_plan(parse_json(text, source), source)


def load_plan(state: Path) -> list[Feature]:
    """The validated plan; a missing file is an empty plan."""
    path = plan_path(state)
    try:
        text = read_text(path)
    except FileNotFoundError:
        return []
    if not text.strip():
        raise UsageError(f"{path}: empty file (an empty plan is [])")
    return parse_plan(text, str(path))


def find_feature(features: list[Feature], fid: str, source: str = "features.json") -> Feature:
    """The feature with id `fid`; UsageError when the plan has none."""
    check_feature_id(fid)
    for f in features:
        if f.id == fid:
            return f
    raise UsageError(f"{source}: no feature {fid} in the plan")


def select_next(features: list[Feature], status: str) -> Feature | None:
    """The first feature with `status` (worker: pending; validator: in_progress)."""
    return next((f for f in features if f.status == status), None)


def merge_plan(existing: list[Feature], proposed: list[Feature]) -> list[Feature]:
    """Proposed features in their order, keeping the status and attempts of ones that exist.

    Existing features the proposal leaves out are kept at the end: a re-plan
    never silently deletes work.
    """
    old = {f.id: f for f in existing}
    merged = []
    for f in proposed:
        prior = old.pop(f.id, None)
        if prior is not None:
            f = f.model_copy(update={
                "status": prior.status,
                "attempts": prior.attempts,
                "blocked_reason": prior.blocked_reason,
            })
        else:
            f = f.model_copy(update={"status": "pending", "attempts": 0, "blocked_reason": None})
        merged.append(f)
    merged.extend(old.values())
    return merged


def dump_plan(features: list[Feature]) -> list[dict]:
    return [f.model_dump(exclude_none=True) for f in features]


@contextmanager
def locked_plan(state: Path) -> Iterator[list[Feature]]:
    """Load the plan under its lock; changes made to the yielded list are saved on exit."""
    with hold_lock(lock_path(state, "features")):
        features = load_plan(state)
        yield features
        write_json(plan_path(state), dump_plan(features))


def update_feature(state: Path, fid: str, change: Callable[[Feature], Feature]) -> Feature:
    """Apply `change` to one feature under the plan lock and save; returns the new feature."""
    with locked_plan(state) as features:
        for i, f in enumerate(features):
            if f.id == fid:
                features[i] = change(f)
                return features[i]
    raise UsageError(f"{plan_path(state)}: no feature {fid} in the plan")
