"""`run.sh import-notes FILE`: Ralph's progress.txt and memory files as the person's raw.md
notes, each naming its source; idempotent; bad input is exit 2 naming the file and line."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import run_sh

from harness.state.imports import find_notes
from harness.state.memory import parse_entry

PROGRESS = """\
# Ralph Progress Log
Started: 2026-01-10

## Codebase Patterns
- Use `sql<number>` template for aggregations
- Always use `IF NOT EXISTS` for migrations

## 2026-01-10 14:30 - US-001
- What was implemented: the login form
- Files changed
  - src/login.tsx
- **Learnings for future iterations:**
  - this codebase keeps API routes in app/api/*/route.ts
  - don't forget to update the zod schema when changing the form
    (the types come from it)
---
## [2026-01-23 01:16:17] - TST-002: hub test helpers
- **Learnings for future iterations:**
  - Patterns discovered
    - Socket actions route through services/hub/src/socket.js
  - Gotchas encountered
    - services/web tests fail on App.test.jsx expecting "GAME HUB"
- Files changed:
  - test-roadmap.md
---
"""

CLAUDE_MD = """\
# Project memory

Some prose that is no note.

## Commands
- Run `pnpm test --filter web` for the web tests
- Never run `pnpm install` at the root (run it per package)

```bash
- not a note: inside a fence
```
<!-- autonomous-harness:identity start -->
- TRICK: our own exported lesson
<!-- autonomous-harness:identity end -->
"""


def raw_notes(state: Path) -> list:
    lines = (state / "raw.md").read_text().splitlines()
    return [e for line in lines
            if (e := parse_entry(line)) and e.role == "user" and "[from " in e.text]


def test_ralph_progress_learnings_and_patterns(tmp_path: Path) -> None:
    path = tmp_path / "progress.txt"
    path.write_text(PROGRESS)
    found = [(f.line, f.kind, f.text) for f in find_notes(path)]
    assert found == [
        (5, "TRICK", "Use `sql<number>` template for aggregations"),
        (6, "TRICK", "Always use `IF NOT EXISTS` for migrations"),
        (13, "TRICK", "this codebase keeps API routes in app/api/*/route.ts"),
        (14, "GOTCHA", "don't forget to update the zod schema when changing the form "
                       "(the types come from it)"),
        (20, "TRICK", "Socket actions route through services/hub/src/socket.js"),
        (22, "GOTCHA", 'services/web tests fail on App.test.jsx expecting "GAME HUB"'),
    ]


def test_memory_file_bullets_skip_fences_and_the_managed_block(tmp_path: Path) -> None:
    path = tmp_path / "CLAUDE.md"
    path.write_text(CLAUDE_MD)
    found = [(f.line, f.kind, f.text) for f in find_notes(path)]
    assert found == [(6, "-", "Run `pnpm test --filter web` for the web tests"),
                     (7, "GOTCHA", "Never run `pnpm install` at the root (run it per package)")]
    memory = tmp_path / "feedback_testing.md"
    memory.write_text("---\nname: testing\ndescription: how to test\ntype: feedback\n---\n\n"
                      "Integration tests hit a real database,\nnot mocks.\n")
    assert [(f.line, f.kind, f.text) for f in find_notes(memory)] == [
        (7, "-", "Integration tests hit a real database, not mocks.")]


def test_import_through_run_sh_is_idempotent(project: Path, state: Path) -> None:
    progress = project / "progress.txt"
    progress.write_text(PROGRESS)
    result = run_sh("import-notes", str(progress), cwd=project)
    assert result.returncode == 0, result.stderr
    assert "imported 6 notes" in result.stdout
    notes = raw_notes(state)
    assert len(notes) == 6 and all(e.run is None and e.feature == "-" for e in notes)
    assert notes[0].text == ("Use `sql<number>` template for aggregations "
                             "[from progress.txt line 5]")
    again = run_sh("import-notes", str(progress), cwd=project)
    assert again.returncode == 0 and "imported 0 notes" in again.stdout
    assert "6 already imported" in again.stdout and len(raw_notes(state)) == 6
    progress.write_text("\n\n" + PROGRESS + "## US-002\n- Learnings for future iterations:\n"
                        "  - a new lesson (run 123-worker-F-001)\n---\n")
    grown = run_sh("import-notes", str(progress), cwd=project)
    assert "imported 1 note from" in grown.stdout
    last = raw_notes(state)[-1]
    assert last.run is None and "(run: 123-worker-F-001)" in last.text  # names no run


def test_bad_input_is_exit_2_naming_file_and_line(project: Path, tmp_path: Path) -> None:
    cases = {
        "latin1.md": ("- ok\n- caf\xe9\n".encode("latin-1"), "latin1.md line 2: not UTF-8"),
        "blob.bin": (b"- a\n- b\n\x00\x01", "blob.bin line 3: a binary file"),
        "prose.md": (b"# Title\n\nJust prose.\n", "prose.md line 1: no recognisable section"),
    }
    for name, (data, said) in cases.items():
        (tmp_path / name).write_bytes(data)
        result = run_sh("import-notes", str(tmp_path / name), cwd=project)
        assert result.returncode == 2 and said in result.stderr, (name, result.stderr)
    folder = run_sh("import-notes", str(tmp_path), cwd=project)
    assert folder.returncode == 2 and "is a directory" in folder.stderr
    missing = run_sh("import-notes", str(tmp_path / "nope.txt"), cwd=project)
    assert missing.returncode == 2 and "nope.txt: file not found" in missing.stderr
    assert not (project / ".harness" / "imported-notes").exists()


def test_what_is_no_file_is_refused_not_read_forever(project: Path, tmp_path: Path) -> None:
    """A fifo waited for a writer for ever, /dev/zero filled the memory: neither is notes."""
    fifo = tmp_path / "progress.txt"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero")):
        result = run_sh("import-notes", str(path), cwd=project, timeout=30)
        assert result.returncode == 2, result.stderr
        assert f"{path}: not a regular file" in result.stderr
    assert not (project / ".harness" / "imported-notes").exists()


def test_ralphs_placeholder_bullet_is_no_note(tmp_path: Path) -> None:
    """Ralph's template starts Codebase Patterns with `- (add reusable patterns here)`."""
    progress = tmp_path / "progress.txt"
    progress.write_text("# Progress Log\n\n## Codebase Patterns\n- (add reusable patterns "
                        "here)\n- Use pnpm, not npm\n\n---\n")
    assert [f.text for f in find_notes(progress)] == ["Use pnpm, not npm"]


def test_a_memory_files_bullet_with_bullets_under_it_is_a_note_too(project: Path,
                                                                   state: Path) -> None:
    # "every bullet" of a memory file: a sentence with sub-bullets was taken for a heading
    # and dropped, and so was a bullet followed, after a paragraph, by an indented one
    memory = project / "CLAUDE.md"
    memory.write_text("## Conventions\n"
                      "- Always log through `app.log`, never print()\n"
                      "  - print() output is lost under systemd\n"
                      "- **Things to check before you push:**\n"
                      "  - run `make test` before pushing\n"
                      "- Use pnpm, not npm\n"
                      "\nSome prose.\n\n"
                      "    - keep lockfiles committed\n")
    result = run_sh("import-notes", str(memory), cwd=project)
    assert result.returncode == 0, result.stderr
    assert [e.text.split(" [from ")[0] for e in raw_notes(state)] == [
        "Always log through `app.log`, never print()", "print() output is lost under systemd",
        "run `make test` before pushing", "Use pnpm, not npm", "keep lockfiles committed"]


def test_codebase_patterns_under_subheadings_are_read(project: Path, state: Path) -> None:
    # Ralph's agents keep "## Codebase Patterns" in ### sections: a subheading ended the
    # section, and its patterns were never read
    progress = project / "progress.txt"
    progress.write_text("# Ralph Progress Log\n\n## Codebase Patterns\n### Database\n"
                        "- Always use `IF NOT EXISTS` for migrations\n### API\n"
                        "- API routes live in app/api/*/route.ts\n\n## Design notes\n"
                        "- not a pattern: its section is no Codebase Patterns\n")
    result = run_sh("import-notes", str(progress), cwd=project)
    assert result.returncode == 0, result.stderr
    assert [(e.kind, e.text.split(" [from ")[0]) for e in raw_notes(state)] == [
        ("TRICK", "Always use `IF NOT EXISTS` for migrations"),
        ("TRICK", "API routes live in app/api/*/route.ts")]
