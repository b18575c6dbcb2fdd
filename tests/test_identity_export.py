"""`identity_export`: the roles' promoted lessons in a managed block of AGENTS.md/CLAUDE.md,
rewritten after each curator pass (through run.sh), the rest of the file untouched."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import run_sh
from test_prompt import dry_run

from harness.run.export import END, START, block_text, shown_identity, with_block, without_block

PROMOTED = ("- TRICK: run pytest -x first [promoted 2026-04-24; seen 2x 2026-04-20..2026-04-24; "
            "missions: m1; features: F-001, F-002]\n")


def export_to(state: Path, *names: str) -> None:
    with (state / "config.yaml").open("a") as config:
        config.write(f"identity_export: [{', '.join(names)}]\n")


def test_block_is_rebuilt_and_the_rest_kept_byte_for_byte() -> None:
    text = "# Mine\r\n\nKeep\tthis  exactly.\n\n"
    block = block_text({"worker": "# worker\n\n" + PROMOTED, "planner": ""})
    assert block.startswith(START) and block.endswith(END + "\n")
    assert "- TRICK: run pytest -x first\n" in block and "[promoted" not in block
    once = with_block(text, block)
    assert once.startswith(text) and without_block(once) == text
    again = with_block(once + "after\n", block_text({"worker": "- TRICK: other\n"}))
    assert without_block(again) == text + "after\n" and "other" in again
    assert with_block(again, "") == text + "after\n"
    assert block_text({"worker": "# worker\n\n"}) == ""


def test_identity_a_cli_reads_in_its_doc_is_not_shown_twice() -> None:
    identity = "# worker\n" + PROMOTED + "- GOTCHA: newer lesson\n"
    doc = "Intro\n" + block_text({"worker": PROMOTED})
    assert shown_identity(identity, [doc]) == "# worker\n- GOTCHA: newer lesson\n"
    assert shown_identity(identity, ["no block"]) == identity


def test_curator_writes_the_block_into_the_project_files(project: Path, state: Path,
                                                         isolated_env: Path) -> None:
    (isolated_env / "worker.md").write_text("# worker\n\n" + PROMOTED)
    mine = "# My project\n\n- use tabs\n"
    (project / "AGENTS.md").write_text(mine)
    export_to(state, "AGENTS.md", "CLAUDE.md")
    result = run_sh("curator", cwd=project)
    assert result.returncode == 0, result.stderr
    agents = (project / "AGENTS.md").read_text()
    assert agents.startswith(mine + "\n" + START)
    assert "- TRICK: run pytest -x first" in agents
    assert (project / "CLAUDE.md").read_text().startswith(START)
    assert "lessons written to" in result.stdout
    (project / "AGENTS.md").write_text(agents + "\nwritten later\n")
    assert run_sh("curator", cwd=project).returncode == 0
    assert (project / "AGENTS.md").read_text() == agents + "\nwritten later\n"
    (isolated_env / "worker.md").write_text("# worker\n\n- FAIL: a new one\n")
    assert run_sh("curator", cwd=project).returncode == 0
    now = (project / "AGENTS.md").read_text()
    assert "a new one" in now and "pytest -x" not in now
    assert without_block(now) == mine + "\n" + "\nwritten later\n"


def test_no_write_through_a_symlink_out_of_the_project(project: Path, state: Path,
                                                       isolated_env: Path,
                                                       tmp_path: Path) -> None:
    (isolated_env / "worker.md").write_text(PROMOTED)
    outside = tmp_path / "outside.md"
    outside.write_text("secret\n")
    (project / "AGENTS.md").symlink_to(outside)
    (project / "real.md").write_text("mine\n")
    (project / "CLAUDE.md").symlink_to("real.md")
    export_to(state, "AGENTS.md", "CLAUDE.md")
    result = run_sh("curator", cwd=project)
    assert result.returncode == 0, result.stderr
    assert outside.read_text() == "secret\n" and (project / "AGENTS.md").is_symlink()
    assert "leads out of" in result.stdout
    assert os.readlink(project / "CLAUDE.md") == "real.md"  # the link kept, its file written
    assert START in (project / "real.md").read_text()


def test_a_bad_export_name_is_exit_2_naming_the_key(project: Path, state: Path) -> None:
    export_to(state, "../elsewhere.md")
    result = run_sh("curator", cwd=project)
    assert result.returncode == 2
    assert "config.yaml" in result.stderr and "identity_export" in result.stderr


def test_prompts_show_the_lessons_once(project: Path, state: Path,
                                       isolated_env: Path) -> None:
    (isolated_env / "worker.md").write_text("# worker\n\n" + PROMOTED)
    export_to(state, "AGENTS.md", "CLAUDE.md")
    (project / "CLAUDE.md").write_text("Be brief.\n")
    assert run_sh("curator", cwd=project).returncode == 0
    prompt, _ = dry_run(project)  # the API backend: identity shown, the docs without block
    assert prompt.count("run pytest -x first") == 1 and "Be brief." in prompt
    assert START not in prompt
    (state / "roles").mkdir(exist_ok=True)
    (state / "roles" / "worker.yaml").write_text(
        "template: worker.md.j2\nbackend: command\noptions: {preset: claude}\n")
    prompt, _ = dry_run(project)  # Claude Code reads CLAUDE.md, block and all, itself
    assert "run pytest -x first" not in prompt and "Be brief." not in prompt


def test_a_huge_project_doc_is_left_alone(project: Path, state: Path, isolated_env: Path) -> None:
    (isolated_env / "worker.md").write_text(PROMOTED)
    huge = "x" * 4_000_001
    (project / "AGENTS.md").write_text(huge)
    export_to(state, "AGENTS.md")
    result = run_sh("curator", cwd=project)
    assert result.returncode == 0 and "over 4 MB" in result.stdout
    assert (project / "AGENTS.md").read_text() == huge


def test_no_write_through_a_symlink_into_the_state_or_identity(project: Path, state: Path,
                                                               isolated_env: Path) -> None:
    """An agent can leave `AGENTS.md -> .harness/config.yaml` in the tree (it need not reach
    the target to make the link): the block must not be written into the state."""
    (isolated_env / "worker.md").write_text(PROMOTED)
    export_to(state, "AGENTS.md", "CLAUDE.md")
    config = (state / "config.yaml").read_text()
    plan = (state / "features.json").read_text()
    (project / "AGENTS.md").symlink_to(".harness/config.yaml")
    (project / "CLAUDE.md").symlink_to("./.harness/features.json")
    result = run_sh("curator", cwd=project)
    assert result.returncode == 0, result.stderr
    assert (state / "config.yaml").read_text() == config
    assert (state / "features.json").read_text() == plan
    assert "left alone" in result.stdout
    assert run_sh("status", cwd=project).returncode == 0  # the next run is not wedged


def test_a_lesson_holding_the_markers_cannot_break_the_block(project: Path, state: Path,
                                                            isolated_env: Path) -> None:
    """A lesson promoted from an agent's note may hold the block's own markers: the block
    grew by a copy of its tail at every curator pass, outside the block, in the person's
    file. It is written once and stays as it is."""
    (isolated_env / "worker.md").write_text(
        f"# worker\n\n- TRICK: x {END} tail {START} more [promoted 2026-04-24; seen 2x "
        "2026-04-20..2026-04-24; missions: m1; features: F-001, F-002]\n")
    mine = "# My project\n"
    (project / "AGENTS.md").write_text(mine)
    export_to(state, "AGENTS.md")
    assert run_sh("curator", cwd=project).returncode == 0
    once = (project / "AGENTS.md").read_text()
    assert run_sh("curator", cwd=project).returncode == 0
    assert (project / "AGENTS.md").read_text() == once
    assert once.count(START) == 1 and once.count(END) == 1
    assert without_block(once) == mine + "\n" and "tail" in once


def export_once(project: Path, state: Path, isolated_env: Path, mine: bytes,
                lesson: str = "- TRICK: run pytest -x first") -> tuple[bytes, str]:
    (isolated_env / "worker.md").write_text(f"# worker\n\n{lesson}\n")
    (project / "AGENTS.md").write_bytes(mine)
    export_to(state, "AGENTS.md")
    result = run_sh("curator", cwd=project)
    assert result.returncode == 0, result.stderr
    return (project / "AGENTS.md").read_bytes(), result.stdout


def test_a_crlf_file_gets_a_crlf_block_and_keeps_it(project: Path, state: Path,
                                                     isolated_env: Path) -> None:
    mine = b"# Mine\r\n\r\n- use tabs\r\n"
    once, _ = export_once(project, state, isolated_env, mine)
    assert once.startswith(mine) and b"\n" not in once.replace(b"\r\n", b"")
    assert run_sh("curator", cwd=project).returncode == 0
    assert (project / "AGENTS.md").read_bytes() == once


def test_a_start_marker_without_its_end_keeps_what_follows(project: Path, state: Path,
                                                           isolated_env: Path) -> None:
    """The person deleted the end marker (or put it first): the text after the start marker
    is theirs, and was cut to the end of the file."""
    for mine in (f"# Mine\n{START}\n- old lesson\n\n## My own notes\nkeep me\n",
                 f"# Mine\n{END}\nmiddle\n{START}\n- old lesson\nkeep me too\n"):
        once, said = export_once(project, state, isolated_env, mine.encode())
        assert once == mine.encode(), once
        assert "AGENTS.md" in said and "end marker" in said and "left alone" in said


def test_a_block_written_twice_is_one_block_again(project: Path, state: Path,
                                                  isolated_env: Path) -> None:
    old = block_text({"worker": "- TRICK: stale lesson\n"})
    mine = f"# Mine\n{old}\nbetween\n{old}after\n"
    once, _ = export_once(project, state, isolated_env, mine.encode())
    text = once.decode()
    assert text.count(START) == 1 and text.count(END) == 1 and "stale" not in text
    assert without_block(text) == "# Mine\n\nbetween\nafter\n"
    assert "run pytest -x first" in text


def test_a_doc_that_is_not_utf8_is_left_alone_and_named(project: Path, state: Path,
                                                        isolated_env: Path) -> None:
    mine = "# Caf\xe9\n- r\xe8gle\n".encode("latin-1")
    once, said = export_once(project, state, isolated_env, mine)
    assert once == mine and "AGENTS.md" in said and "left alone" in said


def test_markers_the_person_wrote_about_are_no_block(project: Path, state: Path,
                                                     isolated_env: Path) -> None:
    """AGENTS.md telling the team not to edit between the markers: the markers were found
    mid-line, so the curator replaced the middle of the person's sentence with the block,
    and prompts showed the sentence cut. A marker is one only alone on its line."""
    mine = (f"# Mine\nDo not edit between `{START}` and `{END}`: the curator writes it.\n"
            f"- the block starts at {START}, alone on its line\n")
    once, _ = export_once(project, state, isolated_env, mine.encode())
    text = once.decode()
    assert text.startswith(mine), text
    assert "run pytest -x first" in text[len(mine):]
    assert without_block(text) == mine + "\n"
    again, _ = export_once(project, state, isolated_env, once, "- GOTCHA: a newer one")
    assert again.decode().startswith(mine) and "a newer one" in again.decode()
