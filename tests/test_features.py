import json
from pathlib import Path

import pytest

from harness.errors import UsageError
from harness.state.plan import (
    Feature,
    check_feature_id,
    load_plan,
    merge_plan,
    parse_plan,
    select_next,
    update_feature,
)


def feature(fid: str, status: str = "pending", **kw) -> dict:
    return {"id": fid, "title": f"title {fid}", "description": "d",
            "acceptance_criteria": ["holds"], "status": status, **kw}


def test_valid_plan_loads_with_defaults() -> None:
    plan = parse_plan(json.dumps([{"id": "F-001", "title": "t", "description": "d",
                                   "acceptance_criteria": ["a"]}]), "features.json")
    assert plan[0].status == "pending" and plan[0].attempts == 0 and plan[0].verify is None


@pytest.mark.parametrize("data, message", [
    ([feature("F-001"), feature("F-001")], r"feature \[1\] \(F-001\) key 'id': duplicate id F-001"),
    ([feature("F-1")], r"feature \[0\] \(F-1\) key 'id': bad feature id 'F-1' does not match"),
    ([feature("F-001", acceptance_criteria=[])], r"key 'acceptance_criteria': must be a non-empty"),
    ([feature("F-001", title=" ")], r"key 'title': must not be empty"),
    ([feature("F-001", status="finished")], r"key 'status'"),
    ([feature("F-001", colour="red")], r"key 'colour': Extra inputs are not permitted"),
    ({"id": "F-001"}, r"expected a JSON list"),
])
def test_invalid_plans_name_the_feature_and_key(data: object, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_plan(json.dumps(data), "features.json")


def test_json_syntax_error_names_line_and_column() -> None:
    with pytest.raises(UsageError, match=r"features.json line 2 column 1"):
        parse_plan('[{"id": "F-001",\n}]', "features.json")


def test_empty_file_is_an_error_and_missing_is_empty(tmp_path: Path) -> None:
    assert load_plan(tmp_path) == []
    (tmp_path / "features.json").write_text("")
    with pytest.raises(UsageError, match="empty file"):
        load_plan(tmp_path)


@pytest.mark.parametrize("bad", ["../../etc/passwd", "F-1", "f-001", "F-001/../x", ""])
def test_feature_ids_must_have_the_id_form(bad: str) -> None:
    with pytest.raises(UsageError):
        check_feature_id(bad)


def test_select_next_by_status() -> None:
    plan = [Feature(**feature("F-001", "done")), Feature(**feature("F-002", "in_progress")),
            Feature(**feature("F-003", "blocked")), Feature(**feature("F-004"))]
    assert select_next(plan, "pending").id == "F-004"
    assert select_next(plan, "in_progress").id == "F-002"
    assert select_next(plan, "failed") is None


def test_merge_keeps_status_and_attempts_and_never_drops_features() -> None:
    existing = [Feature(**feature("F-001", "done", attempts=2)), Feature(**feature("F-002"))]
    proposed = [Feature(**feature("F-001", "pending", title="renamed")),
                Feature(**feature("F-003", "done", attempts=9))]
    merged = merge_plan(existing, proposed)
    assert [(f.id, f.status, f.attempts, f.title) for f in merged] == [
        ("F-001", "done", 2, "renamed"), ("F-003", "pending", 0, "title F-003"),
        ("F-002", "pending", 0, "title F-002")]


def test_update_feature_saves_under_lock(tmp_path: Path) -> None:
    (tmp_path / "features.json").write_text(json.dumps([feature("F-001")]))
    update_feature(tmp_path, "F-001", lambda f: f.model_copy(update={"status": "in_progress"}))
    assert load_plan(tmp_path)[0].status == "in_progress"
    with pytest.raises(UsageError, match="no feature F-009"):
        update_feature(tmp_path, "F-009", lambda f: f)
