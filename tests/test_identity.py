"""Identity files stay within what a prompt shows; the weakest promoted lessons move to
identity/archive/ verbatim and come back when they recur; a person's lines never move."""

from pathlib import Path

from harness.curator.curate import CuratorSettings, curate
from harness.curator.identity import bound_role_file, strength


def promoted(text: str, missions: str, features: str, count: int, last: str) -> str:
    return (f"- TRICK: {text} [promoted 2026-05-01; seen {count}x 2026-04-01..{last}; "
            f"missions: {missions}; features: {features}; runs: r1, r2]")


STRONG = promoted("uv run pytest -x stops at the first failure", "shop, blog", "F-001, F-002",
                  4, "2026-04-20")
MIDDLE = promoted("git stash -u keeps untracked files", "shop", "F-003, F-004, ...", 9,
                  "2026-04-22")
WEAK = promoted("npm ci installs exactly the lockfile", "shop", "F-005, F-006", 2, "2026-04-10")
HAND = "- Always run the linter before committing (written by hand)"


def test_strength_reads_the_provenance_and_counts_a_cut_list_as_one_more() -> None:
    assert strength(STRONG) == (2, 2, 4, "2026-04-20")
    assert strength(MIDDLE) == (1, 3, 9, "2026-04-22")
    assert strength(HAND) is None and strength("# worker") is None


def split_to_bound(folder: Path, text: str, bound: int) -> tuple[str, list[str]]:
    """What `bound_role_file` leaves of `text` in worker.md, and the lines it moves."""
    (folder / "worker.md").write_text(text)
    bound_role_file(folder, "worker", bound)
    archive = folder / "archive" / "worker.md"
    moved = archive.read_text().splitlines()[2:] if archive.exists() else []
    archive.unlink(missing_ok=True)
    return (folder / "worker.md").read_text(), moved


def test_the_weakest_promoted_lines_leave_and_hand_lines_stay(tmp_path: Path) -> None:
    text = "".join(line + "\n" for line in ("# worker", "", WEAK, HAND, STRONG, MIDDLE))
    bound = len(text) - len(WEAK) - 1
    kept, moved = split_to_bound(tmp_path, text, bound)
    assert moved == [WEAK] and len(kept) <= bound
    assert kept == "".join(line + "\n" for line in ("# worker", "", HAND, STRONG, MIDDLE))
    kept, moved = split_to_bound(tmp_path, text, len("# worker\n\n") + len(HAND) + 1)
    assert moved == [WEAK, STRONG, MIDDLE] and HAND in kept  # a person's line never moves
    assert split_to_bound(tmp_path, text, len(text)) == (text, [])


def test_of_two_equal_lines_the_newer_stays(tmp_path: Path) -> None:
    older, newer = WEAK, WEAK.replace("npm ci", "pnpm i --frozen-lockfile")
    text = f"# worker\n\n{older}\n{newer}\n"
    assert split_to_bound(tmp_path, text, len(text) - len(older) - 1) == (
        f"# worker\n\n{newer}\n", [older])


def test_moving_is_safe_to_redo_and_loses_nothing(tmp_path: Path) -> None:
    role_file = tmp_path / "worker.md"
    text = "".join(line + "\n" for line in ("# worker", "", WEAK, STRONG, MIDDLE))
    role_file.write_text(text)
    assert bound_role_file(tmp_path, "worker", len(text) - 10) == 1
    role_file.write_text(text)  # as if the rewrite had not happened before a crash
    assert bound_role_file(tmp_path, "worker", len(text) - 10) == 1
    archive = (tmp_path / "archive" / "worker.md").read_text().splitlines()
    assert archive.count(WEAK) == 1
    assert set(role_file.read_text().splitlines()) | set(archive) >= {WEAK, STRONG, MIDDLE}


def test_a_moved_line_never_joins_an_archive_line_left_without_its_newline(tmp_path: Path) -> None:
    archive = tmp_path / "archive" / "worker.md"
    archive.parent.mkdir()
    archive.write_text("# worker: a person's heading\n\n- kept by hand")
    text = "".join(line + "\n" for line in ("# worker", "", WEAK, STRONG))
    (tmp_path / "worker.md").write_text(text)
    assert bound_role_file(tmp_path, "worker", len(text) - 10) == 1
    assert archive.read_text() == f"# worker: a person's heading\n\n- kept by hand\n{WEAK}\n"


def notes(n: int, start: int = 0) -> str:
    """TRICKs on n lessons, each from two features: n promotions."""
    lines = []
    for i in range(start, start + n):
        for feature in (f"F-{100 + i:03d}", f"F-{500 + i:03d}"):
            run = f"{1776000000 + i}-worker-{feature}"
            lines.append(f"[2026-04-{10 + i % 18:02d}T10:00:00Z] worker {feature} TRICK: "
                         f"tool{i} --flag{i} fixes problem{i} (run {run})")
    return "".join(line + "\n" for line in lines)


def test_a_curator_pass_keeps_identity_within_its_bound_and_archives_the_rest(
        tmp_path: Path) -> None:
    state, identity = tmp_path / "state", tmp_path / "identity"
    state.mkdir()
    identity.mkdir()
    (identity / "worker.md").write_text(f"# worker\n\n{HAND}\n")
    (state / "raw.md").write_text(notes(30))
    settings = CuratorSettings(identity_chars=1500)
    report = curate(state, identity, "shop", settings)
    assert len(report.promoted) == 30
    kept = (identity / "worker.md").read_text()
    archived = (identity / "archive" / "worker.md").read_text().splitlines()
    assert len(kept) <= 1500 and HAND in kept
    lines = {line for line in kept.splitlines() if line.startswith("- TRICK")} | {
        line for line in archived if line.startswith("- TRICK")}
    assert {p.line for p in report.promoted} == lines  # every promotion in one place
    gone = next(line for line in archived if line.startswith("- TRICK"))
    lesson = gone.split("TRICK: ", 1)[1].split(" [", 1)[0]
    i = int(lesson.split()[0].removeprefix("tool"))
    with open(state / "raw.md", "a") as f:  # the archived lesson recurs, much later
        f.write(f"[2026-05-20T10:00:00Z] worker F-900 TRICK: {lesson} "
                f"(run 1779000000-worker-F-900)\n")
    back = curate(state, identity, "blog", settings, now="2026-05-21T00:00:00Z").promoted
    assert [p.text for p in back] == [lesson] and back[0].evidence.count == 3
    assert f"tool{i} --flag{i}" in (identity / "worker.md").read_text()


def test_a_worker_prompt_shows_every_line_of_its_identity_file(tmp_path: Path, invoke,
                                                               state: Path,
                                                               isolated_env: Path) -> None:
    (isolated_env / "worker.md").write_text(
        "".join(line + "\n" for line in ("# worker", "", HAND, STRONG, MIDDLE, WEAK)))
    (state / "raw.md").write_text(notes(40))
    assert invoke("curator").exit_code == 0
    result = invoke("worker", "F-004", "--dry-run")
    assert result.exit_code == 0, result.output
    prompt = next(state.glob("runs/*-worker-F-004/prompt.md")).read_text()
    identity = (isolated_env / "worker.md").read_text()
    assert len(identity) <= 4000 and (isolated_env / "archive" / "worker.md").exists()
    assert all(line in prompt for line in identity.splitlines() if line)


def test_without_a_judge_a_lesson_identity_may_hold_in_other_words_waits(
        tmp_path: Path) -> None:
    """Real agents restate a note with other details; the rules keep the two apart (each
    names a file or a symbol the other lacks), both become due, and only a judge can tell
    whether identity holds the second already: without one it is not promoted."""
    first = ("Pre-existing TypeScript errors (ArticleWithDuplicates types, hub:db:schema "
             "module) continue but don't affect new code")
    again = ("Pre-existing TypeScript and ESLint errors (ArticleWithDuplicates types, unused "
             "getLanguageFlag) don't affect new code")
    other = "make -n in ci/make.yml catches it early"  # shares words, names another command
    state, identity = tmp_path / "state", tmp_path / "identity"
    state.mkdir()
    lines = [f"[2026-01-11T1{n}:00:00Z] worker F-00{n} TRICK: {text} (run r{n}-worker-F-00{n})"
             for n, text in enumerate([first, first, again, again])]
    (state / "raw.md").write_text("".join(line + "\n" for line in lines))
    assert [p.text for p in curate(state, identity, "shop", CuratorSettings()).promoted] == [
        first]
    with open(state / "raw.md", "a") as f:  # and in a later pass, against identity's line
        f.write("".join(f"[2026-01-12T1{n}:00:00Z] worker F-01{n} TRICK: {text} "
                        f"(run r1{n}-worker-F-01{n})\n"
                        for n, text in enumerate([again, again, other, other])))
    assert [p.text for p in curate(state, identity, "shop", CuratorSettings()).promoted] == [
        other]
