"""Plans in Ralph's `prd.json` format, brought in and written back.

A Ralph plan is `{"userStories": [{id, title, description, acceptanceCriteria, priority,
passes, notes}]}`. On import, stories become features in priority order (ties keep file
order) with ids `F-NNN` (a story imported before keeps its feature; a new one takes the next
free number), the story's id kept as `source_id`, `passes: true` as `done`, and notes
appended to the description. The result is validated and merged like a planner's proposal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.errors import UsageError
from harness.state import plan as plan_mod
from harness.state.reading import parse_json

STORY_KEYS = {"id": str, "title": str, "description": str, "acceptanceCriteria": list,
              "priority": int, "passes": bool, "notes": str}
REQUIRED = ("id", "title", "acceptanceCriteria")


def check_story(story: Any, n: int, source: str) -> dict[str, Any]:
    """A story with every key of the right type, or a UsageError naming the story and key."""
    where = f"{source}: userStories[{n}]"
    if not isinstance(story, dict):
        raise UsageError(f"{where}: a story must be an object")
    where += f" ({story['id']})" if isinstance(story.get("id"), str) else ""
    for key in REQUIRED:
        if key not in story:
            raise UsageError(f"{where}: missing key {key!r}")
    for key, kind in STORY_KEYS.items():
        value = story.get(key)
        if value is not None and (not isinstance(value, kind) or
                                  (kind is int and isinstance(value, bool))):
            raise UsageError(f"{where}: key {key!r} must be {kind.__name__}")
    criteria = story["acceptanceCriteria"]
    if not criteria or not all(isinstance(c, str) and c.strip() for c in criteria):
        raise UsageError(f"{where}: key 'acceptanceCriteria' must be a non-empty list of text")
    return story


def read_stories(text: str, source: str) -> list[dict[str, Any]]:
    """The checked stories of a prd.json, in priority order."""
    data = parse_json(text, source)
    if not isinstance(data, dict) or not isinstance(data.get("userStories"), list):
        raise UsageError(f"{source}: expected an object with a 'userStories' list")
    stories = [check_story(s, n, source) for n, s in enumerate(data["userStories"])]
    ids = [s["id"] for s in stories]
    if dup := next((i for i in ids if ids.count(i) > 1), None):
        raise UsageError(f"{source}: story id {dup!r} appears twice")
    return sorted(stories, key=lambda s: s.get("priority") if s.get("priority") is not None
                  else float("inf"))


def to_features(stories: list[dict[str, Any]], existing: list[plan_mod.Feature],
                source: str) -> list[dict[str, Any]]:
    """Feature records for `stories`: ids kept for stories imported before, else new ones."""
    # a story imported before, or one our export wrote (its id is the feature's)
    known = {f.id: f.id for f in existing} | {f.source_id: f.id for f in existing if f.source_id}
    next_number = max((int(f.id[2:]) for f in existing), default=0) + 1
    out = []
    for story in stories:
        fid = known.get(story["id"])
        if fid is None:
            fid, next_number = f"F-{next_number:03d}", next_number + 1
        notes = (story.get("notes") or "").strip()
        description = (story.get("description") or story["title"]).strip()
        out.append({"id": fid, "title": story["title"],
                    "source_id": story["id"] if story["id"] != fid else None,
                    "description": description + (f"\n\nNotes: {notes}" if notes else ""),
                    "acceptance_criteria": story["acceptanceCriteria"],
                    "status": "done" if story.get("passes") else "pending"})
    return out


def import_prd(state: Path, text: str, source: str) -> tuple[list[plan_mod.Feature], int]:
    """Merge a prd.json into the plan; (the plan, how many stories came in as new features).

    Features already in the plan keep their place, status and attempts (a story imported
    before is updated in place); new ones go at the end, `passes: true` ones as done.
    """
    stories = read_stories(text, source)
    if not stories:
        raise UsageError(f"{source}: 'userStories' is empty")
    with plan_mod.locked_plan(state) as plan:
        records = to_features(stories, plan, source)
        imported = {r["id"]: plan_mod.validate_plan(
            [r], f"{source}: story {r['source_id'] or r['id']}")[0] for r in records}
        proposed = [imported.pop(f.id, f) for f in plan] + list(imported.values())
        new = set(imported)
        done = {r["id"] for r in records if r["status"] == "done"} & new
        plan[:] = [f.model_copy(update={"status": "done"}) if f.id in done else f
                   for f in plan_mod.merge_plan(plan, proposed)]
        return list(plan), len(new)


def export_prd(features: list[plan_mod.Feature], project: str) -> dict[str, Any]:
    """The plan as a Ralph prd.json: plan order as priority, `done` as `passes`."""
    return {"project": project, "userStories": [
        {"id": f.source_id or f.id, "title": f.title, "description": f.description,
         "acceptanceCriteria": f.acceptance_criteria, "priority": n,
         "passes": f.status == "done", "notes": f.blocked_reason or ""}
        for n, f in enumerate(features, 1)]}
