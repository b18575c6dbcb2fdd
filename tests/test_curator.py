"""The curator's pure rules: matching, L3/L2 compaction, promotion and the model check."""

from __future__ import annotations

import itertools
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.curator import matching
from harness.curator import text as norm_text
from harness.curator.book import Bounds, MemoryBook, clip, memory_ids, parse_item, topic_of
from harness.curator.identity import IdentityIndex, identity_lessons
from harness.curator.matching import LessonIndex, same_lesson
from harness.curator.promotion import Evidence, Promotion, PromotionTracker, plan_promotions
from harness.curator.record import Candidate, parse_candidate
from harness.curator.settings import ModelResult, ProposedPromotion, check_model_result
from harness.curator.text import normalize, stem
from harness.state.memory import Entry, estimate_tokens, parse_sections

ROOT = Path(__file__).resolve().parent.parent
T = 75.0  # the default similarity threshold
PSQL = "psql -f drizzle/*.sql applies migrations in filename order"
PSQL_OTHER_WORDS = "running `psql -f` on drizzle/*.sql applies the migrations sorted by file name"
# the same note with words added, none swapped: the rule joins it on its own (`matching`)
PSQL_MORE = "psql -f drizzle/*.sql applies migrations in filename order, one file at a time"


def entry(kind: str, text: str, *, role: str = "worker", feature: str = "F-001",
          run: str | None = "r1", ts: str = "2026-04-24T10:00:00Z") -> Entry:
    return Entry(ts, role, feature, kind, text, run)


def cand(text: str, *, kind: str = "TRICK", mission: str = "shop", role: str = "worker",
         feature: str = "F-001", run: str | None = "r1",
         ts: str = "2026-04-24T10:00:00Z") -> Candidate:
    return Candidate(ts, mission, role, kind, feature, run, text)


def book(memory: str = "", **bounds: int) -> MemoryBook:
    return MemoryBook(memory, Bounds(**bounds), similarity=T, topic_similarity=70.0)


# --- matching ---------------------------------------------------------------


def test_the_issue_paraphrase_is_one_lesson() -> None:
    assert same_lesson(PSQL, PSQL_OTHER_WORDS, T)
    assert same_lesson(PSQL_OTHER_WORDS, PSQL, T)


@pytest.mark.parametrize("other", [
    "psql -f seeds/*.sql loads the seed files in filename order",  # same command, other files
    "psql -v ON_ERROR_STOP=1 -f drizzle/0001_init.sql stops at the first failing statement",
    "docker compose up failed: port 6379 is already allocated",
    "pnpm test --coverage needs @vitest/coverage-v8 installed first",
])
def test_near_misses_of_the_psql_trick_are_other_lessons(other: str) -> None:
    assert not same_lesson(PSQL, other, T)


@pytest.mark.parametrize("a, b", [
    ("forgot to run pnpm lint before committing", "forgot to run pnpm typecheck before committing"),
    ("docker compose up failed: port 5432 is already allocated",
     "docker compose up failed: port 6379 is already allocated"),
    ("git log --oneline lists the commits on the current branch",
     "git log --oneline --all lists the commits on every branch, remotes included"),
    ("curl -s localhost:3000/api/health | jq . is the quickest way to check the API is up",
     "curl -s localhost:3000/api/health returns 503 until the migrations have run"),
    ("forgot to export the new component from components/index.ts",
     "forgot to export the new hook from hooks/index.ts"),
    ("the build needs node 18 in .nvmrc", "the build needs node 20 in .nvmrc"),
])
def test_different_subcommand_flag_number_or_path_means_different_lesson(a: str, b: str) -> None:
    assert not same_lesson(a, b, T)


@pytest.mark.parametrize("a, b", [
    ("uv run pytest uses the project venv without activating it",
     "no need to activate the venv: uv run pytest picks it up automatically"),
    ("next build failed: useSearchParams() should be wrapped in a suspense boundary",
     "next build fails because useSearchParams() is not wrapped in a Suspense boundary"),
    ("forgot to run pnpm db:generate after changing schema.ts",
     "changed schema.ts but forgot pnpm db:generate, so the types were stale"),
])
def test_paraphrases_match(a: str, b: str) -> None:
    assert same_lesson(a, b, T)


@pytest.mark.parametrize("a, b", [
    # a runner (`run`) names no command of its own
    ("pnpm run lint --fix before pushing, or CI fails on formatting",
     "pnpm lint --fix before pushing, or CI fails on formatting"),
    # a measurement on one side only is a result, not another lesson
    ("pytest -x --lf reruns only the failed tests, 14s instead of 3min",
     "to rerun just what failed use pytest --lf -x"),
])
def test_a_runner_or_a_measurement_on_one_side_does_not_keep_a_lesson_apart(a: str,
                                                                            b: str) -> None:
    assert same_lesson(a, b, T) and same_lesson(b, a, T)


def test_the_threshold_decides() -> None:
    a, b = ("e2e tests failed because the dev server was not running on port 3000",
            "playwright e2e suite failed: nothing listening on port 3000, the dev server was "
            "never started")
    assert same_lesson(a, b, 70)
    assert not same_lesson(a, b, 95)


def test_normalize_drops_noise_and_keeps_technical_words() -> None:
    n = normalize(PSQL_OTHER_WORDS)
    assert n.key == "psql f drizzl sql apply migration sort fil nam"
    assert set(n.anchors.split()) == {"psql", "f", "drizzl", "sql"}
    assert n.strict == "f"  # a flag must be on both sides
    assert normalize("forgot to run pnpm lint").strict == "lint"  # a subcommand too
    assert normalize("the git folder is big").strict == ""  # "git" used as a noun


def test_the_signature_holds_the_terms_technical_by_their_shape() -> None:
    n = normalize("run `kubectl apply --prune` with PGPORT=5432 and k8s/deploy.yaml -> 14s "
                  "instead of 3min")
    # not the code word, the subcommand or the measurements; the flag, setting and file
    assert n.signature == "=5432 deploy k8s pgport prun yaml"
    assert {"kubectl", "apply", "14s", "3min"} <= set(n.anchors.split())
    assert n.strict == "5432 apply prun"  # a number inside a setting is strict; 14s is not
    assert normalize("python 3.11 is required").strict == ""  # a version alone: not strict
    assert normalize("uv run pytest -x").strict == "pytest x"  # nor a runner
    assert normalize("no technical words here").signature == ""


@pytest.mark.parametrize("word, root", [
    ("migrations", "migration"), ("sorted", "sort"), ("running", "run"), ("applies", "apply"),
    ("stashes", "stash"), ("files", "fil"), ("file", "fil"), ("pass", "pass"), ("3000", "3000"),
    ("stopped", "stop"), ("tool11", "tool11"), ("opt11", "opt11"), ("install", "install"),
])
def test_stem(word: str, root: str) -> None:
    assert stem(word) == root


def test_index_clusters_paraphrases_and_keeps_near_misses_apart() -> None:
    texts = [PSQL, "psql -f seeds/*.sql loads the seed files in filename order",
             PSQL_OTHER_WORDS, "git stash -u also stashes untracked files",
             "plain `git stash` leaves untracked files in place; add -u to stash them too",
             PSQL_MORE]
    # the score alone (as for identity lines): paraphrases join, near misses do not
    idx = LessonIndex(T, sure=False)
    assert [idx.assign("b", normalize(t), n) for n, t in enumerate(texts)] == [0, 1, 0, 3, 3, 0]
    assert idx.find("other bucket", normalize(PSQL)) is None
    # clustering notes, the rule joins only what it is sure of: words added, none swapped
    idx = LessonIndex(T)
    assert [idx.assign("b", normalize(t), n) for n, t in enumerate(texts)] == [0, 1, 2, 3, 3, 0]


def test_index_scores_a_bounded_shortlist_not_every_lesson(monkeypatch) -> None:
    idx = LessonIndex(T, sure=False)
    for n in range(3000):  # lessons sharing most words, each with its own file
        idx.assign("b", normalize(f"pnpm test src/mod{n}/case.ts needs the fixtures first"), n)
    calls = []
    real = matching.fuzz.token_set_ratio

    class Counting:
        token_sort_ratio = staticmethod(matching.fuzz.token_sort_ratio)

        @staticmethod
        def token_set_ratio(a, b, **kw):
            calls.append(b)
            return real(a, b, **kw)

    monkeypatch.setattr(matching, "fuzz", Counting)
    assert idx.find("b", normalize("pnpm test src/mod17/case.ts wants its fixtures first")) == 17
    assert idx.find("b", normalize("pnpm test src/new/case.ts needs the fixtures first")) is None
    assert 0 < len(calls) <= 2 * matching.SHORTLIST


def reference_shortlist(bucket, words: set[str], anchors: set[str] = frozenset(),
                        signature: str = "") -> list[int]:
    """shortlist_of's docstring, spelled out: the recent variants under three block words
    (the signature if any variant is filed under it, the rarest anchors, then the rarest
    other words; ties by word), scored 4, 2 and 1 for each of them they are under; best
    first, ties in the order the variants first appear under the first block word, then
    the next, then the third."""
    def rarest(pool):
        return sorted((bucket.df[w], w) for w in pool if bucket.df.get(w))
    block = rarest(anchors) + rarest(words - anchors)
    if signature in bucket.postings:
        block.insert(0, (0, signature))
    block = block[:matching.BLOCK_WORDS]
    score: dict[int, int] = {}
    for weight, (_, w) in zip((4, 2, 1), block, strict=False):  # block may have fewer
        for vid in bucket.postings[w][-matching.POSTING_CAP:]:
            score[vid] = score.get(vid, 0) + weight
    order = list(score)  # first appearance
    return sorted(order, key=lambda v: -score[v])[:matching.SHORTLIST]


SIGNATURES = ("", "", "=w1", "=w1 w2", "=w7")  # none, or one of a few (`text.Norm`)


def test_the_shortlist_ranks_as_documented() -> None:
    rng = random.Random(7)
    vocabulary = [f"w{n}" for n in range(40)]
    for trial in range(300):
        idx = LessonIndex(T)
        for n in range(rng.randrange(1, 120)):
            # skewed: a few words everywhere, most rare, so postings of every length occur
            words = {rng.choice(vocabulary[: rng.choice((3, 10, 40))]) for _ in range(6)}
            idx.add("b", norm_text.Norm(" ".join(sorted(words)),
                                        signature=rng.choice(SIGNATURES)), n)
        bucket = idx._buckets["b"]
        for _ in range(20):
            query = set(rng.sample(vocabulary, rng.randrange(1, 8)))
            anchors = set(rng.sample(sorted(query), rng.randrange(0, len(query) + 1)))
            signature = rng.choice(SIGNATURES)
            assert (matching.shortlist_of(bucket, query, anchors, signature)
                    == reference_shortlist(bucket, query, anchors, signature)), (
                trial, sorted(query), signature)


def test_a_rare_mishap_does_not_hide_the_lesson_behind_its_technical_words() -> None:
    # Its rarest words are the clause about what went wrong first, and the variants under
    # them are other lessons: the shortlist looks under the technical words first.
    idx = LessonIndex(T)
    idx.add("b", normalize("`pnpm test --runInBand` keeps the flaky suite green"), 0)
    for n in range(1, 7):  # the same command on other files: other lessons
        idx.add("b", normalize(f"`pnpm test --runInBand` on `src/mod{n}.ts` keeps the flaky "
                               "suite green"), n)
    for n in range(7, 12):  # lessons noted after the same mishap, whose words are rarer
        idx.add("b", normalize(f"staging went down again; `make deploy{n}` restores it"), n)
    note = normalize("staging went down again; `pnpm test --runInBand` keeps the flaky "
                     "suite green")
    assert idx.find("b", note) == 0


CROWDED = ("run `kubectl apply --prune` with `PGPORT=5432` and `k8s/deploy.yaml` in place, "
           "otherwise the rollout keeps the old config")
CROWDED_AGAIN = ("the rollout keeps the old config unless k8s/deploy.yaml and PGPORT=5432 are "
                 "set before kubectl apply --prune")


def crowd() -> Iterator[str]:
    """Notes of other lessons, each naming terms of CROWDED's, each term in more of them
    than a word's postings window holds."""
    for sub, flag, port, path in itertools.product(
            ("apply", "diff"), ("--prune", "--force", "--wait", "--server-side"),
            ("5432", "5433", "55432"), ("k8s/deploy.yaml", "k8s/svc.yaml", "values.yaml",
                                        "k8s/job.yaml")):
        if (sub, flag, port, path) != ("apply", "--prune", "5432", "k8s/deploy.yaml"):
            for effect in ("the pods restart twice", "the job hangs on a prompt"):
                yield (f"run `kubectl {sub} {flag}` with `PGPORT={port}` and `{path}` in "
                       f"place, otherwise {effect}")


def test_notes_naming_the_same_terms_meet_however_common_each_term_is() -> None:
    # every technical word of CROWDED_AGAIN (those it looks under) has more recent phrasings
    # than POSTING_CAP, none of them CROWDED's: only its signature still finds it
    idx = LessonIndex(T, sure=False)
    idx.assign("b", normalize(CROWDED), 0)
    for n, text in enumerate(crowd(), 1):
        idx.assign("b", normalize(text), n)
    bucket = idx._buckets["b"]
    anchors = normalize(CROWDED_AGAIN).anchors.split()
    assert len(anchors) > matching.BLOCK_WORDS
    assert all(0 not in bucket.postings[w][-matching.POSTING_CAP:] for w in anchors)
    assert idx.find("b", normalize(CROWDED_AGAIN)) == 0


# --- L3: MEMORY.md ------------------------------------------------------------


def test_recurring_lesson_is_one_line_with_exact_count_and_capped_ids() -> None:
    b = book()
    for n in range(6):
        text = PSQL if n % 2 else PSQL_MORE
        b.add(entry("TRICK", text, feature=f"F-00{n}", run=f"run{n}",
                    ts=f"2026-04-2{n}T10:00:00Z"))
    lessons = parse_sections(b.compact().memory)["Lessons"]
    assert len(lessons) == 1
    assert lessons[0] == (f"- [L1] TRICK x6 2026-04-25 worker: {PSQL_MORE} "
                          "(from: run5, run4, run3, ...)")


def test_lessons_rank_by_recurrence_and_recency() -> None:
    b = book()
    b.add(entry("TRICK", "old single: make -n prints the commands", ts="2026-01-01T00:00:00Z"))
    for n in range(4):  # recurring, a month old
        b.add(entry("TRICK", "jq -r .id prints the raw id", run=f"r{n}",
                    ts="2026-03-01T00:00:00Z"))
    b.add(entry("TRICK", "fresh single: rg --hidden finds dotfiles", ts="2026-03-20T00:00:00Z"))
    lessons = parse_sections(b.compact().memory)["Lessons"]
    assert [line.split(": ", 1)[1][:10] for line in lessons] == [
        "jq -r .id ", "fresh sing", "old single"]  # x4 weighs 28 days; 19 days newer loses


def test_memory_stays_in_bounds_and_overflow_goes_to_history_then_archive() -> None:
    memory, archived_all = "", []
    for batch in range(6):
        b = book(memory, memory_max_lines=40)
        for n in range(30):
            k = batch * 30 + n
            b.add(entry("GOTCHA", f"service{k} needs port {4000 + k} free", run=f"r{k}",
                        ts=f"2026-04-{1 + batch:02d}T00:{n:02d}:00Z"))
            b.add(entry("-", f"note {k}", ts=f"2026-04-{1 + batch:02d}T00:{n:02d}:00Z"))
            b.add(entry("DECISION", f"topic{k}: choose option {k}",
                        ts=f"2026-04-{1 + batch:02d}T00:{n:02d}:00Z"))
        out = b.compact()
        assert len(out.memory.splitlines()) <= 40
        sections = parse_sections(out.memory)
        assert sections["History"]
        archived_all += out.archived
        # every line that left MEMORY.md is returned for the archive, verbatim
        old = {line for line in memory.splitlines() if line.startswith("- ")}
        assert old - set(out.memory.splitlines()) <= set(out.archived) | _same_items(old, out)
        memory = out.memory
    assert archived_all


def _same_items(old: set[str], out) -> set[str]:
    """Old lines whose item is still in the new MEMORY.md (updated or compressed)."""
    ids = memory_ids(out.memory)
    return {line for line in old if parse_item(line).letter and parse_item(line).ref() in ids}


def test_compaction_is_a_fixed_point() -> None:
    b = book(memory_max_lines=30)
    for n in range(40):
        day = f"2026-04-{1 + n % 20:02d}"
        b.add(entry("TRICK" if n % 3 else "FAIL", f"tool{n % 13} --flag{n % 13} does {n % 13}",
                    run=f"r{n}", ts=f"{day}T00:00:00Z"))
        b.add(entry("DECISION", f"area{n % 7}: option {n}", ts=f"{day}T01:00:00Z"))
        b.add(entry("-", f"note {n}", ts=f"{day}T02:00:00Z"))
    first = b.compact()
    again = book(first.memory, memory_max_lines=30)
    second = again.compact()
    assert second.memory == first.memory
    assert second.summary == first.summary
    assert second.archived == []


def test_history_lesson_recurring_comes_back_with_its_count() -> None:
    memory = ("# Memory\n\n## Decisions\n\n## Context\n\n## History\n"
              "- [L3] TRICK x2 2026-03-01 worker: make -n prints the commands it would run\n\n"
              "## Lessons\n")
    b = book(memory)
    b.add(entry("TRICK", "make -n prints the commands it would run without running them",
                run="r9", ts="2026-04-24T00:00:00Z"))
    sections = parse_sections(b.compact().memory)
    assert sections["History"] == [""] or not any(s.strip() for s in sections["History"])
    assert sections["Lessons"][0].startswith("- [L3] TRICK x3 2026-04-24 worker: make -n")


def test_foreign_lines_are_kept_in_history() -> None:
    memory = "# Memory\n\nWritten by hand: the staging box is shared.\n\n## Lessons\n- a note\n"
    out = book(memory).compact()
    history = parse_sections(out.memory)["History"]
    assert "Written by hand: the staging box is shared." in history
    assert "- a note" in history
    assert out.archived == []


def test_item_lines_round_trip() -> None:
    for line in [
        "- [L12] TRICK x3 2026-04-24 worker: psql -f x.sql applies them (from: r3, r2, ...)",
        "- [L2] FAIL x1 2026-04-24 validator: next build failed (turbopack)",
        "- [D4] 2026-04-24 planner -: db: move to postgres 17 (run R1)",
        "- [D1] 2026-04-20 planner -: db: use postgres 16 (superseded by D4)",
        "- [C9] 2026-04-24 validator F-023: F-023 verified via curl",
    ]:
        item = parse_item(line)
        assert item.letter and item.line(compressed=line.startswith("- [D1]")) == line
    assert parse_item("- [L2] FAIL x1 2026-04-24 validator: build (turbopack)").text == (
        "build (turbopack)")
    assert not parse_item("free text").letter


def test_clip() -> None:
    assert clip("abc", 5) == "abc"
    assert clip("abcdefgh", 5) == "abcd…"
    assert clip(clip("abcdefgh", 5), 5) == "abcd…"


# --- decisions ----------------------------------------------------------------


def test_topic_prefix() -> None:
    assert topic_of("db: use postgres 16") == "db"
    assert topic_of("Package  Manager: pnpm 9") == "package manager"
    assert topic_of("F-023 verified via curl on staging: ok") is None
    assert topic_of("use pnpm 9") is None


def test_a_later_decision_on_the_same_topic_supersedes() -> None:
    b = book()
    for day, text in enumerate(["db: use postgres 16", "auth: sessions in an http-only cookie",
                                "use pnpm 8 for every package", "db: move to postgres 17",
                                "use pnpm 9 for every package"], 1):
        b.add(entry("DECISION", text, run=None, ts=f"2026-04-0{day}T00:00:00Z"))
    out = b.compact()
    sections = parse_sections(out.memory)
    current = [line.split(": ", 1)[1] for line in sections["Decisions"] if line]
    assert current == ["use pnpm 9 for every package", "db: move to postgres 17",
                       "auth: sessions in an http-only cookie"]
    assert any("db: use postgres 16 (superseded by D" in line for line in sections["History"])
    summary = parse_sections(out.summary)["Decisions (current)"]
    assert not any("postgres 16" in line or "pnpm 8" in line for line in summary)
    assert any("postgres 17" in line for line in summary)


def test_supersession_across_runs() -> None:
    b = book()
    b.add(entry("DECISION", "db: use postgres 16", ts="2026-04-01T00:00:00Z"))
    first = b.compact().memory
    b2 = book(first)
    b2.add(entry("DECISION", "db: move to postgres 17", ts="2026-04-04T00:00:00Z"))
    sections = parse_sections(b2.compact().memory)
    assert [line for line in sections["Decisions"] if line] == [
        "- [D2] 2026-04-04 worker F-001: db: move to postgres 17 (run r1)"]
    assert sections["History"][0] == (
        "- [D1] 2026-04-01 worker F-001: db: use postgres 16 (superseded by D2)")


# --- L2: summary.md -----------------------------------------------------------


def test_estimate_tokens_is_a_quarter_of_the_characters_rounded_up() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("x" * 3200) == 800


def test_summary_bounds_sections_and_pointers() -> None:
    b = book()
    for n in range(120):
        kind = ("TRICK", "FAIL", "GOTCHA", "FORGOT")[n % 4]
        b.add(entry(kind, f"tool{n} --opt{n} " + "has a long explanation " * 8, run=f"r{n}",
                    ts=f"2026-04-{1 + n % 28:02d}T00:00:00Z"))
        b.add(entry("DECISION", f"area{n}: pick option {n} " + "for reasons " * 6,
                    ts=f"2026-04-{1 + n % 28:02d}T00:00:00Z"))
    out = b.compact()
    assert len(out.summary.splitlines()) <= 40
    assert estimate_tokens(out.summary) <= 800
    sections = parse_sections(out.summary)
    assert [name for name in sections if name] == ["Lessons", "Decisions (current)", "Avoid"]
    assert all(sections[name] != [""] for name in ("Lessons", "Decisions (current)", "Avoid"))
    ids = memory_ids(out.memory)
    refs = [line.rsplit(" ", 1)[1].rstrip(")") for line in out.summary.splitlines()
            if line.startswith("- ")]
    assert refs and all(ref in ids for ref in refs)
    assert all(line.startswith("- FAIL: ") or line.startswith("- GOTCHA: ")
               for line in sections["Avoid"] if line)


def test_summary_smaller_bounds_hold() -> None:
    b = book(summary_max_lines=12, summary_max_tokens=200)
    for n in range(30):
        b.add(entry("TRICK", f"tool{n} --opt{n} does the thing number {n}", run=f"r{n}"))
    summary = b.compact().summary
    assert len(summary.splitlines()) <= 12 and estimate_tokens(summary) <= 200


# --- promotion ------------------------------------------------------------------


def due(*cands: Candidate) -> list[Evidence]:
    tracker = PromotionTracker(T)
    for c in cands:
        tracker.add(c)
    return tracker.due()


def test_trick_from_two_workers_is_promoted_but_one_worker_twice_is_not() -> None:
    assert due(cand(PSQL, feature="F-003", run="r1"), cand(PSQL_MORE, feature="F-007",
                                                           run="r2"))
    assert not due(cand(PSQL, feature="F-003", run="r1"), cand(PSQL_MORE, feature="F-003",
                                                               run="r1"))
    # a retry on the same feature read the note: its repeat is an echo, not a second worker
    assert not due(cand(PSQL, feature="F-003", run="r1"), cand(PSQL, feature="F-003", run="r2"))
    assert due(cand(PSQL, feature="F-003", run="r1", mission="shop"),
               cand(PSQL, feature="F-003", run="r2", mission="blog"))
    # a person's notes (no run) are one source, however many features they name
    assert not due(cand(PSQL, feature="F-003", run=None), cand(PSQL, feature="F-004", run=None))
    assert not due(cand(PSQL, feature="F-003", run=None), cand(PSQL, feature="F-004", run="r1"))
    assert due(cand(PSQL, feature="F-003", run=None), cand(PSQL, feature="F-003", run="r1"),
               cand(PSQL, feature="F-004", run="r2"))


def test_roles_are_separate() -> None:
    assert not due(cand(PSQL, role="worker", run="r1"), cand(PSQL, role="validator", run="r2"))


def test_fail_is_promoted_across_missions_only() -> None:
    fail = "pnpm dev failed with EADDRINUSE: port 3000 was held by an old dev server"
    fail2 = "pnpm dev failed with EADDRINUSE: port 3000 was held by an old dev server again"
    assert not due(cand(fail, kind="FAIL", mission="shop", run="r1"),
                   cand(fail2, kind="FAIL", mission="shop", run="r2", feature="F-009"))
    assert due(cand(fail, kind="FAIL", mission="shop", run="r1"),
               cand(fail2, kind="FAIL", mission="blog", run="r2"))
    assert not due(cand(fail, kind="FAIL", mission="shop", run="r1"),
                   cand(fail2, kind="FAIL", mission="blog", run=None))


def test_forgot_is_promoted_when_it_recurs() -> None:
    forgot = "forgot to run pnpm db:generate after changing schema.ts"
    again = "forgot to run pnpm db:generate after changing schema.ts, so types were stale"
    assert not due(cand(forgot, kind="FORGOT"))
    assert not due(cand(forgot, kind="FORGOT", run="r1"), cand(again, kind="FORGOT", run="r1"))
    assert due(cand(forgot, kind="FORGOT", run="r1"), cand(again, kind="FORGOT", run="r2"))
    assert not due(cand(forgot, kind="FORGOT", run=None), cand(forgot, kind="FORGOT", run=None,
                                                               ts="2026-04-25T00:00:00Z"))


def test_other_kinds_are_never_due() -> None:
    tracker = PromotionTracker(T)
    for n in range(3):
        tracker.add(cand("the staging db resets nightly", kind="GOTCHA", run=f"r{n}",
                         mission=f"m{n}"))
    assert tracker.due() == []


def test_promoted_line_carries_provenance_with_capped_lists_and_exact_count() -> None:
    cands = [cand(PSQL if n % 2 else PSQL_MORE, mission=f"m{n % 2}", feature=f"F-00{n}",
                  run=f"run{n}", ts=f"2026-04-2{n}T10:00:00Z") for n in range(6)]
    (ev,) = due(*cands)
    assert Promotion(ev.role, ev.kind, ev.text, ev, "2026-05-01").line == (
        f"- TRICK: {PSQL_MORE} [promoted 2026-05-01; seen 6x 2026-04-20..2026-04-25; "
        "missions: m0, m1; features: F-000, F-001, F-002, ...; runs: run0, run1, run2, ...]")


def test_no_promotion_of_what_identity_holds_in_other_words() -> None:
    identity = IdentityIndex(T)
    identity.add_text("worker", "# worker\n\nHand-written: always read AGENTS.md first.\n"
                      f"- TRICK: {PSQL} [promoted 2026-04-01; seen 2x 2026-03-01; "
                      "missions: shop; features: F-001, F-002]\n")
    evs = due(cand(PSQL_OTHER_WORDS, run="r1"), cand(PSQL_OTHER_WORDS, run="r2", feature="F-9"),
              cand("git stash -u also stashes untracked files", run="r1"),
              cand("git stash -u also stashes untracked files", run="r3", feature="F-8"))
    planned = plan_promotions(evs, identity, "2026-05-01")
    assert [p.text for p in planned] == ["git stash -u also stashes untracked files"]


def test_identity_lessons_strip_bullets_kinds_and_provenance() -> None:
    text = ("# worker\n\n- TRICK: a b c [promoted 2026-04-01; seen 2x 2026-03-01; missions: x; "
            "features: F-1]\nplain line\n* FAIL: d e\n")
    assert list(identity_lessons(text)) == ["a b c", "plain line", "d e"]


def test_candidate_record_round_trips_and_rejects_malformed_lines() -> None:
    c = cand(PSQL, run=None)
    batch, seq, parsed = parse_candidate(c.line("ab12:7") + "\n")
    assert (batch, seq, parsed) == ("ab12", 7, c)
    for bad in ["", "x\ty", c.line("nocolon"), c.line("ab:x"),
                c.line("ab:1").replace("\tTRICK\t", "\tGOTCHA\t")]:
        assert parse_candidate(bad) is None


# --- the model check --------------------------------------------------------------


@pytest.fixture
def rules() -> tuple[str, str, list[Promotion]]:
    """The rules' MEMORY.md, summary.md and promotions for a small input."""
    b = book()
    tracker = PromotionTracker(T)
    for n in range(3):
        b.add(entry("TRICK", PSQL, run=f"r{n}", feature=f"F-00{n}"))
        tracker.add(cand(PSQL_MORE if n else PSQL, run=f"r{n}", feature=f"F-00{n}"))
    tracker.add(cand(GIT_STASH, run="r7", feature="F-007"))
    tracker.add(cand(GIT_STASH, run="r8", feature="F-008"))
    b.add(entry("DECISION", "db: use postgres 16"))
    b.add(entry("-", "F-001 verified via curl"))
    out = b.compact()
    promotions = plan_promotions(tracker.due(), IdentityIndex(T), "2026-05-01")
    assert [p.text for p in promotions] == [PSQL, GIT_STASH]
    return out.memory, out.summary, promotions


GIT_STASH = "git stash -u stashes untracked files"
REWORDED = [ProposedPromotion(1, "psql -f on drizzle/*.sql runs migrations in filename order"),
            ProposedPromotion(2, "`git stash -u` stashes the untracked files as well")]


def check(result: ModelResult, rules, identity: dict[str, str] | None = None) -> list[str]:
    memory, _, promotions = rules
    return check_model_result(result, rules_memory=memory, rules_promotions=promotions,
                              identity=identity or {}, bounds=Bounds(), similarity=T)


def test_model_check_accepts_the_rules_result_and_reworded_promotions(rules) -> None:
    memory, summary, _ = rules
    assert check(ModelResult(summary, memory), rules) == []
    assert check(ModelResult(summary, memory, REWORDED), rules) == []


def test_model_check_rejects_text_that_is_not_utf8(rules) -> None:
    # JSON may carry a lone surrogate ("\\ud800"); such text cannot be written to a file
    memory, summary, _ = rules
    lone = "\ud800"
    assert any("summary.md" in p and "UTF-8" in p
               for p in check(ModelResult(summary + lone, memory), rules))
    assert any("MEMORY.md" in p and "UTF-8" in p
               for p in check(ModelResult(summary, memory + lone), rules))
    words = [ProposedPromotion(p.number, p.text + lone) for p in REWORDED]
    assert any("promotion 1" in p and "UTF-8" in p
               for p in check(ModelResult(summary, memory, words), rules))


def test_model_check_rejects_broken_bounds_and_sections(rules) -> None:
    memory, summary, _ = rules
    long_summary = summary + "".join(f"- x{n} (see MEMORY.md L1)\n" for n in range(40))
    problems = check(ModelResult(long_summary, memory), rules)
    assert any("over 40 lines" in p for p in problems)
    wordy = summary.replace("## Avoid", "- " + "word " * 900 + "(see MEMORY.md L1)\n## Avoid")
    assert any("tokens" in p for p in check(ModelResult(wordy, memory), rules))
    assert any("sections" in p for p in
               check(ModelResult(summary.replace("## Avoid", "## Later"), memory), rules))
    assert any("MEMORY.md sections" in p for p in
               check(ModelResult(summary, memory.replace("## History\n", "")), rules))


def test_model_check_rejects_loss_invention_and_dangling_pointers(rules) -> None:
    memory, summary, _ = rules
    lost = "\n".join(line for line in memory.splitlines() if not line.startswith("- [D1]"))
    assert "MEMORY.md lost D1" in check(ModelResult(summary, lost), rules)
    recount = memory.replace(" x3 ", " x4 ")
    assert any("changed the count of L1" in p for p in check(ModelResult(summary, recount), rules))
    invented = memory.replace("## Context\n", "## Context\n- [C77] 2026-04-24 worker -: made up\n")
    assert "MEMORY.md invents C77" in check(ModelResult(summary, invented), rules)
    hand = memory.replace("## History\n", "## History\nkept by hand\n")
    assert "MEMORY.md lost the line 'kept by hand'" in check_model_result(
        ModelResult(summary, memory), rules_memory=hand, rules_promotions=[], identity={},
        bounds=Bounds(), similarity=T)
    dangling = summary.replace("see MEMORY.md L1", "see MEMORY.md L9")
    assert any("points to L9" in p for p in check(ModelResult(dangling, memory), rules))
    unpointed = summary.replace(" (x3, see MEMORY.md L1)", "")
    assert any("does not point" in p for p in check(ModelResult(unpointed, memory), rules))


@pytest.mark.parametrize("promotions, why", [
    ([REWORDED[0]], "promotion 2 is missing"),
    ([], "promotion 1 is missing"),
    ([*REWORDED, ProposedPromotion(3, "pnpm lint --fix fixes imports")], "not one of the rules'"),
    ([*REWORDED, REWORDED[1]], "promotion 2 is given twice"),
    ([REWORDED[0], ProposedPromotion(2, "always write the tests first")], "not the same lesson"),
    ([REWORDED[0], ProposedPromotion(2, "git stash -u  \n ")], None),
    ([REWORDED[0], ProposedPromotion(2, " ")], "1 to 300 characters"),
    ([REWORDED[0], ProposedPromotion(2, GIT_STASH + " x" * 200)], "1 to 300 characters"),
])
def test_model_check_rejects_promotions_the_rules_do_not_back(rules, promotions, why) -> None:
    memory, summary, _ = rules
    problems = check(ModelResult(summary, memory, promotions), rules)
    if why is None:
        assert problems == []  # whitespace is folded; the words are still the lesson
    else:
        assert any(why in p for p in problems), problems


def test_model_check_rejects_new_words_identity_already_holds(rules) -> None:
    memory, summary, _ = rules
    identity = {"worker": "- TRICK: `git stash -u` stashes the untracked files as well\n"}
    assert any("already holds" in x for x in check(ModelResult(summary, memory, REWORDED), rules,
                                                    identity))
    # the rules' own words were checked against identity when the rules made the promotion
    same = [REWORDED[0], ProposedPromotion(2, GIT_STASH)]
    assert check(ModelResult(summary, memory, same), rules, identity) == []


def test_matching_does_not_depend_on_the_string_hash_seed() -> None:
    # Words of equal rarity used to be taken in set order, which differs from one process
    # to the next (PYTHONHASHSEED): the same notes could cluster differently run to run.
    script = (
        "from harness.curator.matching import LessonIndex\n"
        "from harness.curator.matching import shortlist_of\n"
        "from harness.curator.text import normalize\n"
        "idx = LessonIndex(75)\n"
        "for n, t in enumerate(['alpha one', 'bravo two', 'charlie three', 'delta four']):\n"
        "    idx.add('b', normalize(t), n)\n"
        "words = set(normalize('alpha bravo charlie delta').key.split())\n"
        "print(shortlist_of(idx._buckets['b'], words, (), ''))\n")
    seen = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           check=True, cwd=ROOT,
                           env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout
            for seed in range(6)}
    assert len(seen) == 1, seen
