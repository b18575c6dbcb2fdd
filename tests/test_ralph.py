"""`run.sh import PRD.json` (a Ralph plan) and `run.sh export --format prd`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

PRD = {"project": "shop", "branchName": "ralph/shop", "userStories": [
    {"id": "US-002", "title": "Cart", "description": "A cart.", "acceptanceCriteria": ["adds"],
     "priority": 2, "passes": False, "notes": ""},
    {"id": "US-001", "title": "Login", "description": "Log in.",
     "acceptanceCriteria": ["works", "fails well"], "priority": 1, "passes": True,
     "notes": "uses the session cookie"},
]}


def write(tmp_path: Path, data: object) -> str:
    path = tmp_path / "prd.json"
    path.write_text(json.dumps(data))
    return str(path)


def plan_of(state: Path) -> list[dict]:
    return json.loads((state / "features.json").read_text())


def test_import_maps_stories_to_features_by_priority(invoke, state: Path,
                                                     tmp_path: Path) -> None:
    before = plan_of(state)
    result = invoke("import", write(tmp_path, PRD))
    assert result.exit_code == 0 and "6 features, 2 new" in result.output
    plan = plan_of(state)
    assert plan[:4] == before  # existing features keep their place and status
    login, cart = plan[4:]
    assert (login["id"], login["source_id"], login["status"]) == ("F-005", "US-001", "done")
    assert login["description"] == "Log in.\n\nNotes: uses the session cookie"
    assert login["acceptance_criteria"] == ["works", "fails well"]
    assert (cart["id"], cart["source_id"], cart["status"]) == ("F-006", "US-002", "pending")


def test_a_second_import_updates_in_place(invoke, state: Path, tmp_path: Path) -> None:
    invoke("import", write(tmp_path, PRD))
    invoke("worker", "F-006", "--dry-run")
    changed = json.loads(json.dumps(PRD))
    changed["userStories"][0]["title"] = "Shopping cart"
    changed["userStories"].append({"id": "US-003", "title": "Pay", "description": "Pay.",
                                   "acceptanceCriteria": ["paid"], "priority": 3})
    assert "7 features, 1 new" in invoke("import", write(tmp_path, changed)).output
    plan = plan_of(state)
    assert [(f["id"], f["title"]) for f in plan[5:]] == [("F-006", "Shopping cart"),
                                                         ("F-007", "Pay")]


@pytest.mark.parametrize(("story", "message"), [
    ({"title": "t", "acceptanceCriteria": ["a"]}, "userStories[0]: missing key 'id'"),
    ({"id": "US-9", "title": "t", "acceptanceCriteria": []},
     "userStories[0] (US-9): key 'acceptanceCriteria' must be a non-empty list"),
    ({"id": "US-9", "title": "t", "acceptanceCriteria": ["a"], "priority": "high"},
     "userStories[0] (US-9): key 'priority' must be int"),
    ({"id": "US-9", "title": "t", "acceptanceCriteria": ["a"], "passes": "yes"},
     "userStories[0] (US-9): key 'passes' must be bool"),
    ({"id": "US-9", "title": " ", "acceptanceCriteria": ["a"]},
     "story US-9: feature [0] (F-005) key 'title': must not be empty"),
])
def test_bad_stories_exit_2_naming_story_and_key(invoke, state: Path, tmp_path: Path,
                                                 story: dict, message: str) -> None:
    before = (state / "features.json").read_bytes()
    result = invoke("import", write(tmp_path, {"userStories": [story]}))
    assert result.exit_code == 2 and message in result.output
    assert (state / "features.json").read_bytes() == before


def test_not_a_prd_file_exits_2(invoke, tmp_path: Path) -> None:
    assert "expected an object with a 'userStories' list" in invoke(
        "import", write(tmp_path, [1])).output
    bad = tmp_path / "bad.json"
    bad.write_text("{\n oops")
    result = invoke("import", str(bad))
    assert result.exit_code == 2 and f"{bad} line 2" in result.output


def test_export_writes_a_prd_that_imports_back(invoke, state: Path, tmp_path: Path) -> None:
    invoke("import", write(tmp_path, PRD))
    out = tmp_path / "out.json"
    assert invoke("export", "--format", "prd", "-o", str(out)).exit_code == 0
    prd = json.loads(out.read_text())
    stories = prd["userStories"]
    assert prd["project"] == "textstats" and len(stories) == 6
    assert [s["priority"] for s in stories] == [1, 2, 3, 4, 5, 6]
    assert stories[4]["id"] == "US-001" and stories[4]["passes"] is True
    assert stories[3] == {"id": "F-004", "title": plan_of(state)[3]["title"],
                          "description": plan_of(state)[3]["description"],
                          "acceptanceCriteria": plan_of(state)[3]["acceptance_criteria"],
                          "priority": 4, "passes": False, "notes": ""}
    assert "6 features, 0 new" in invoke("import", str(out)).output
