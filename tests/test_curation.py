"""`run.sh curator` end to end: the CLI over the curator's rules."""

import json
from pathlib import Path

import pytest

from harness.curator.settings import ModelResult, ProposedPromotion
from harness.state.memory import parse_entry
from harness.state.store import hold_lock, lock_path


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file's bytes, lock files aside (taking a lock is not a change)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*")
            if p.is_file() and p.parent.name != "locks"}


def test_curator_dry_run_prints_diffs_and_changes_nothing(invoke, state: Path,
                                                         isolated_env: Path) -> None:
    before, identity_before = snapshot(state), snapshot(isolated_env)
    result = invoke("curator", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "--- " in result.output and "+++ " in result.output
    assert "summary.md" in result.output and "would archive" in result.output
    assert snapshot(state) == before and snapshot(isolated_env) == identity_before


def test_curator_bounds_memory_archives_and_records_progress(invoke, state: Path) -> None:
    result = invoke("curator")
    assert result.exit_code == 0, result.output
    raw = (state / "raw.md").read_text().splitlines()
    assert sum(parse_entry(line) is not None for line in raw) == 10  # the last 10 entries
    assert any("this line was pasted by hand" in line for line in raw)  # kept, not dropped
    archived = "".join(p.read_text() for p in (state / "archive").glob("*.md")).splitlines()
    assert len(archived) + len(raw) == 36  # every line is in one place or the other
    assert len((state / "summary.md").read_text().splitlines()) <= 40
    assert (state / "progress.log").read_text().splitlines()[-1].split()[1] == "curator"
    again = invoke("curator")  # idempotent: nothing new, nothing changes
    assert again.exit_code == 0
    assert "0 new lines" in again.output


def test_second_curator_is_busy(invoke, state: Path) -> None:
    with hold_lock(lock_path(state, "curator")):
        result = invoke("curator")
    assert result.exit_code == 3 and "busy" in result.output


def test_curator_similarity_comes_from_config(invoke, state: Path) -> None:
    (state / "config.yaml").write_text("curator: {similarity: 101}\n")
    result = invoke("curator")
    assert result.exit_code == 2 and "curator.similarity" in result.output
    status = json.loads(invoke("status", "--json").output)
    assert status["memory"]["raw"]["entries"] == 36  # nothing was touched


@pytest.mark.parametrize(("written", "read"), [
    ("", "auto"), ("curator: {judge: off}\n", "off"), ("curator: {judge: no}\n", "off"),
    ("curator: {judge: auto}\n", "auto"), ("curator: {judge: on}\n", "auto"),
    # the pair model's switch is gone: an old config still loads
    ("curator: {second_opinion: false}\n", "auto")])
def test_curator_judge_comes_from_config(state: Path, written: str, read: str) -> None:
    from harness.config import load_mission_config

    (state / "config.yaml").write_text(written)
    assert load_mission_config(state).curator.judge == read


def test_a_bad_curator_judge_exits_2_naming_the_key(invoke, state: Path) -> None:
    (state / "config.yaml").write_text("curator: {judge: sometimes}\n")
    result = invoke("curator")
    assert result.exit_code == 2 and "curator.judge" in result.output


def test_curator_questions_come_from_config_and_a_bad_count_exits_2(invoke, state: Path) -> None:
    from harness.config import load_mission_config

    assert load_mission_config(state).curator.questions == 20
    (state / "config.yaml").write_text("curator: {questions: 5}\n")
    assert load_mission_config(state).curator.questions == 5
    for bad in ("-1", "many"):
        (state / "config.yaml").write_text(f"curator: {{questions: {bad}}}\n")
        result = invoke("curator")
        assert result.exit_code == 2 and "curator.questions" in result.output


def rules_only(state: Path, identity: Path, tmp_path: Path) -> dict[str, str]:
    """summary.md and MEMORY.md as the rules alone make them, from a copy of the state."""
    import shutil

    from harness.curator.curate import CuratorSettings, curate

    copy = tmp_path / "rules-copy"
    shutil.copytree(state, copy)
    ident = tmp_path / "rules-identity"
    shutil.copytree(identity, ident)
    curate(copy, ident, "project", CuratorSettings())
    return {n: (copy / n).read_text() for n in ("summary.md", "MEMORY.md")}


def test_a_model_rewrite_that_passes_the_checks_stands(state: Path, isolated_env: Path,
                                                       tmp_path: Path) -> None:
    from harness.curator.curate import CuratorSettings, curate

    expected = rules_only(state, isolated_env, tmp_path)
    seen = {}

    def refine(summary: str, memory: str, promotions: list) -> ModelResult:
        seen.update(summary=summary, memory=memory)
        return ModelResult(summary.replace("\n- ", "\n- Lesson: ", 1), memory)

    report = curate(state, isolated_env, "project", CuratorSettings(), refine=refine)
    assert seen["summary"] == expected["summary.md"]  # the model is shown the rules' result
    assert report.model == "accepted"
    assert "\n- Lesson: " in (state / "summary.md").read_text()
    assert (state / "summary.md").read_text() == expected["summary.md"].replace(
        "\n- ", "\n- Lesson: ", 1)


def test_a_model_rewrite_that_breaks_a_bound_is_replaced_by_the_rules(
        state: Path, isolated_env: Path, tmp_path: Path) -> None:
    from harness.curator.curate import CuratorSettings, curate

    expected = rules_only(state, isolated_env, tmp_path)

    def refine(summary: str, memory: str, promotions: list) -> ModelResult:
        return ModelResult(summary + "".join(f"- padding {i}\n" for i in range(60)), memory)

    report = curate(state, isolated_env, "project", CuratorSettings(), refine=refine)
    assert report.model.startswith("rejected: ") and "40 lines" in report.model
    assert (state / "summary.md").read_text() == expected["summary.md"]


UNITTEST = "python3 -m unittest from the project root imports the package without installing it"
REWORDED = "run `python3 -m unittest` from the project root: it imports the package uninstalled"


def test_the_models_words_for_a_promotion_reach_identity_with_the_rules_provenance(
        state: Path, isolated_env: Path, tmp_path: Path) -> None:
    from harness.curator.curate import CuratorSettings, curate

    rules_copy = tmp_path / "rules-identity"
    rules_only(state, isolated_env, tmp_path)  # the rules alone promote UNITTEST
    rules_line = next(line for line in (rules_copy / "worker.md").read_text().splitlines()
                      if UNITTEST in line)

    def refine(summary: str, memory: str, promotions: list) -> ModelResult:
        assert [p.text for p in promotions] == [UNITTEST]
        return ModelResult(summary, memory, [ProposedPromotion(1, REWORDED)])

    report = curate(state, isolated_env, "project", CuratorSettings(), refine=refine)
    assert report.model == "accepted" and [p.text for p in report.promoted] == [REWORDED]
    lines = (isolated_env / "worker.md").read_text().splitlines()
    assert UNITTEST not in "\n".join(lines)
    assert f"- TRICK: {REWORDED} [" + rules_line.split(" [", 1)[1] in lines


def test_a_model_that_drops_a_promotion_gets_the_rules_result(
        state: Path, isolated_env: Path, tmp_path: Path) -> None:
    from harness.curator.curate import CuratorSettings, curate

    expected = rules_only(state, isolated_env, tmp_path)

    def refine(summary: str, memory: str, promotions: list) -> ModelResult:
        return ModelResult(summary.replace("\n- ", "\n- Lesson: ", 1), memory, [])

    report = curate(state, isolated_env, "project", CuratorSettings(), refine=refine)
    assert report.model == "rejected: promotion 1 is missing (a lesson that met its rule is " \
                           "promoted)"
    assert (state / "summary.md").read_text() == expected["summary.md"]
    assert UNITTEST in (isolated_env / "worker.md").read_text()


def model_mode(state: Path, tmp_path: Path, answer: dict) -> None:
    """`curator.mode: model`, with a scripted curator that answers `answer`, then finishes."""
    script = tmp_path / "curator.yaml"
    script.write_text(json.dumps([{"tools": [{"name": "curation", "input": answer},
                                             {"name": "finish", "input": {"summary": "ok"}}]}]))
    (state / "config.yaml").write_text("curator: {mode: model}\n")
    (state / "roles").mkdir()
    (state / "roles" / "curator.yaml").write_text(
        f"template: curator.md.j2\nbackend: scripted\ntools: [curation, finish]\n"
        f"options: {{script: {script}}}\n")


def test_model_mode_end_to_end_records_the_run_and_why_its_answer_fell(
        invoke, state: Path, isolated_env: Path, tmp_path: Path) -> None:
    expected = rules_only(state, isolated_env, tmp_path)
    model_mode(state, tmp_path, {"summary": "no sections at all", "memory": "nor here"})
    result = invoke("curator")
    assert result.exit_code == 0, result.output
    assert "model's rewrite: rejected" in result.output
    assert (state / "summary.md").read_text() == expected["summary.md"]
    run = next(state.glob("runs/*-curator-mission"))
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "finished" and manifest["curation"].startswith("rejected")
    assert "### summary.md (rules)" in (run / "prompt.md").read_text()
    assert invoke("reconstruct", run.name, "--check").exit_code == 0
    assert (state / "progress.log").read_text().splitlines()[-1].split()[3] == run.name


def test_model_mode_end_to_end_with_new_words_for_the_promotions(
        invoke, state: Path, isolated_env: Path, tmp_path: Path) -> None:
    expected = rules_only(state, isolated_env, tmp_path)
    answer = {"summary": expected["summary.md"], "memory": expected["MEMORY.md"],
              "promotions": [{"number": 1, "text": REWORDED}]}
    model_mode(state, tmp_path, answer)
    result = invoke("curator")
    assert result.exit_code == 0, result.output
    assert "model's rewrite: accepted" in result.output
    run = next(state.glob("runs/*-curator-mission"))
    assert "1. identity/worker.md: - TRICK: " + UNITTEST in (run / "prompt.md").read_text()
    assert json.loads((run / "manifest.json").read_text())["curation"] == "accepted"
    assert f"- TRICK: {REWORDED} [promoted " in (isolated_env / "worker.md").read_text()


def test_a_curation_with_malformed_promotions_is_refused_and_a_good_one_kept(state: Path) -> None:
    import pytest

    from harness.errors import UsageError
    from harness.state import actions

    (state / "runs" / "r1").mkdir(parents=True)
    (state / "runs" / "r1" / "manifest.json").write_text("{}")
    for bad in ({"number": 1}, [{"number": "1", "text": "x"}], [{"text": "x"}], ["x"]):
        with pytest.raises(UsageError, match="list of {number: int, text: str}"):
            actions.record_curation(state, "r1", "s", "m", bad)
    for bad in ("1", [1, "2"], [True]):
        with pytest.raises(UsageError, match="same must be a list of pair numbers"):
            actions.record_curation(state, "r1", "s", "m", None, bad)
    assert actions.read_curation(state, "r1") is None
    actions.record_curation(state, "r1", "s", "m", [{"number": 1, "text": "new words"}], [2])
    assert actions.read_curation(state, "r1") == {
        "summary": "s", "memory": "m", "promotions": [{"number": 1, "text": "new words"}],
        "same": [2]}


class CuratingBackend:
    """Answers the curator's prompt with `answer` through the `curation` tool, at a cost, and
    notes what held while it ran: the garbage collector, and whether the curator's lock was
    free."""

    def __init__(self, answer: dict, cost: float = 0.25) -> None:
        self.answer, self.cost, self.seen = answer, cost, {}

    def run(self, prompt: str, session):
        import gc

        from harness.errors import BusyError
        from harness.state import actions
        from harness.types import FINISHED, Outcome

        self.seen["gc"] = gc.isenabled()
        try:
            with hold_lock(lock_path(session.state, "curator"), wait=False):
                self.seen["lock_free"] = True
        except BusyError:
            self.seen["lock_free"] = False
        actions.record_curation(session.state, session.run_id, self.answer["summary"],
                                self.answer["memory"], self.answer.get("promotions"))
        return Outcome(FINISHED, "ok", cost_usd=self.cost, turns=1)


def test_model_mode_calls_the_model_outside_the_curator_lock_with_the_collector_on(
        invoke, state: Path, isolated_env: Path, tmp_path: Path, monkeypatch) -> None:
    import harness.run.lifecycle

    expected = rules_only(state, isolated_env, tmp_path)
    backend = CuratingBackend({"summary": expected["summary.md"], "memory": expected["MEMORY.md"]})
    model_mode(state, tmp_path, {})
    monkeypatch.setattr(harness.run.lifecycle, "load_backend", lambda name: backend)
    result = invoke("curator")
    assert result.exit_code == 0, result.output
    assert backend.seen == {"gc": True, "lock_free": True}
    assert "model's rewrite: accepted" in result.output
    # the prompt asked "same lesson?" about pairs, but an answer without `same` records none
    from harness.curator import curatordb

    assert "### Same lesson?" in (next(state.glob("runs/*-curator-mission")) / "prompt.md"
                                  ).read_text()
    assert curatordb.read_answers(isolated_env) == {}
    run = next(state.glob("runs/*-curator-mission"))
    assert json.loads((run / "manifest.json").read_text())["cost_usd"] == 0.25
    assert json.loads((state / "spend.json").read_text())["usd"] == 0.25


def test_a_curator_failing_after_the_model_call_still_finishes_its_record_and_books_the_spend(
        invoke, state: Path, isolated_env: Path, tmp_path: Path, monkeypatch) -> None:
    import pytest

    import harness.run.curation
    import harness.run.lifecycle

    model_mode(state, tmp_path, {})
    backend = CuratingBackend({"summary": "s", "memory": "m"}, cost=0.5)
    monkeypatch.setattr(harness.run.lifecycle, "load_backend", lambda name: backend)
    real_curate = harness.run.curation.curate

    def curate_then_fail(*args, refine=None, **kwargs):
        if refine is not None:  # the pass that takes the model's answer
            raise RuntimeError("disk on fire")
        return real_curate(*args, **kwargs)

    monkeypatch.setattr(harness.run.curation, "curate", curate_then_fail)
    with pytest.raises(RuntimeError, match="disk on fire"):
        invoke("curator")
    manifest = json.loads(next(state.glob("runs/*-curator-mission/manifest.json")).read_text())
    assert manifest["status"] == "finished" and manifest["exit_code"] == 1
    assert "RuntimeError: disk on fire" in manifest["error"] and manifest["cost_usd"] == 0.5
    assert json.loads((state / "spend.json").read_text())["usd"] == 0.5
    assert (state / "progress.log").read_text().splitlines()[-1].split()[3] == manifest["run_id"]


class JudgingBackend:
    """Answers the curator's prompt through the `curation` tool: the rules' texts back, and
    `same` with the numbers of the pairs shown whose note A is `text`."""

    def __init__(self, text: str) -> None:
        self.text, self.prompt = text, ""

    def run(self, prompt: str, session):
        import re

        from harness.state import actions
        from harness.types import FINISHED, Outcome

        self.prompt = prompt
        same = [int(n) for n, a in re.findall(r"^(\d+)\. A worker note: (.*)$", prompt, re.M)
                if a == self.text]
        actions.record_curation(session.state, session.run_id, "unused", "unused", None, same)
        return Outcome(FINISHED, "ok", turns=1)


def test_model_mode_asks_same_lesson_and_its_answer_promotes_and_is_recorded(
        invoke, state: Path, isolated_env: Path, tmp_path: Path, monkeypatch) -> None:
    from conftest import UNSURE_FIRST, UNSURE_SECOND, unsure_pair_lines

    import harness.run.lifecycle
    from harness.curator import curatordb

    with open(state / "raw.md", "a") as raw:
        raw.write(unsure_pair_lines())
    backend = JudgingBackend(UNSURE_SECOND)
    model_mode(state, tmp_path, {})
    monkeypatch.setattr(harness.run.lifecycle, "load_backend", lambda name: backend)
    result = invoke("curator")
    assert result.exit_code == 0, result.output
    assert "### Same lesson?" in backend.prompt
    assert f"   B, an earlier worker TRICK note: {UNSURE_FIRST}" in backend.prompt
    assert f"- TRICK: {UNSURE_FIRST} [promoted" in (isolated_env / "worker.md").read_text()
    run = next(state.glob("runs/*-curator-mission"))
    assert "its same-lesson answers" in json.loads(
        (run / "manifest.json").read_text())["curation"]
    recorded = curatordb.read_answers(isolated_env)
    assert list(recorded.values()).count(True) == 1
    assert invoke("reconstruct", run.name, "--check").exit_code == 0


def test_model_mode_through_the_anthropic_sdk_answers_same_lesson_with_the_tool(
        invoke, api, state: Path, isolated_env: Path) -> None:
    from conftest import UNSURE_SECOND, assert_unsure_pair_judged_one, model_mode_curator
    from fake_api import tool_use

    model_mode_curator(state, "template: curator.md.j2\nbackend: anthropic\n"
                       "model: claude-haiku-4-5\ntools: [curation, finish]\n"
                       f"options: {{base_url: '{api.base_url}'}}\n")
    api.reply(tool_use("curation", {"summary": "s", "memory": "m", "same": [1]}))
    api.reply(tool_use("finish", {"summary": "judged one pair"}))
    result = invoke("curator")
    assert result.exit_code == 0, result.output
    request = api.requests[0]
    assert "same" in next(t for t in request["tools"]
                          if t["name"] == "curation")["input_schema"]["properties"]
    prompt = json.dumps(request["messages"])
    assert "Same lesson?" in prompt and UNSURE_SECOND in prompt
    assert_unsure_pair_judged_one(isolated_env)


def test_model_mode_answers_reach_an_identity_folder_that_does_not_exist_yet(
        invoke, state: Path, isolated_env: Path, tmp_path: Path, monkeypatch) -> None:
    # HARNESS_IDENTITY_DIR may name a folder nothing has written yet; the pass records the
    # model's answers before anything else would create it
    from conftest import UNSURE_SECOND, unsure_pair_lines

    import harness.run.lifecycle
    from harness.curator import curatordb

    identity = isolated_env / "shared" / "identity"
    monkeypatch.setenv("HARNESS_IDENTITY_DIR", str(identity))
    with open(state / "raw.md", "a") as raw:
        raw.write(unsure_pair_lines())
    model_mode(state, tmp_path, {})
    monkeypatch.setattr(harness.run.lifecycle, "load_backend",
                        lambda name: JudgingBackend(UNSURE_SECOND))
    result = invoke("curator")
    assert result.exit_code == 0, result.output
    assert list(curatordb.read_answers(identity).values()).count(True) == 1
    assert not list(state.glob("**/*journal*"))
