"""The docs say what the code does: the configuration reference is the models', and every
file a doc, docstring or test cites exists."""

import re
from pathlib import Path

from harness.ops import configdoc

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("README.md", "docs", "harness", "bench", "tests", "roles", "templates", "examples",
           "identity", "run.sh", "pyproject.toml", ".ci")
SUFFIXES = {".md", ".py", ".yaml", ".j2", ".toml", ".sh", ""}
# a file of the repository: docs/….md, harness/….py, bench/run (no placeholders like <role>)
CITED = re.compile(r"(?<![\w./<-])((?:docs|harness|bench|tests|examples|roles|templates|\.ci)"
                   r"/[\w./-]*\.(?:md|py|yaml|yml|j2|toml|json|sh|txt)"
                   r"|(?:bench|\.ci)/[\w-]+(?![\w./-]))")
# files that build a project of their own, whose tests/ are that project's, not ours
OWN_PROJECT = ("harness/ops/demo/", "tests/")
# a doc cited by its bare name, which must then be in docs/ or at the top
BARE = re.compile(r"(?<![\w./-])(DESIGN\.md|STYLE\.md|ARCHITECTURE\.md|SANDBOX\.md)")
LINK = re.compile(r"\]\(([^)#\s]+)")


def test_configuration_page_is_generated_from_the_models() -> None:
    text = configdoc.PAGE.read_text(encoding="utf-8")
    assert configdoc.page_with(text, configdoc.generate()) == text, (
        "docs/configuration.md and harness/config.py differ: run "
        ".venv/bin/python -m harness.ops.configdoc --write")


def test_the_generator_reads_each_fields_comment() -> None:
    page = configdoc.generate()
    assert "| `budget_usd` | float or null | `null` | >= 0" in page
    assert "mission-wide dollar budget" in page
    assert "| `caps.context_tokens` |" in page and "old tool results are cleared" in page


def scanned_files() -> list[Path]:
    """The repository's text files a reader or the code may cite from."""
    files = []
    for name in SCANNED:
        path = ROOT / name
        found = [path] if path.is_file() else sorted(path.rglob("*"))
        files += [f for f in found if f.is_file() and f.suffix in SUFFIXES
                  and "data" not in f.relative_to(ROOT).parts and "__pycache__" not in f.parts]
    return files


def missing_citations(path: Path) -> list[str]:
    """The repository files `path` cites that the repository lacks."""
    text = path.read_text(encoding="utf-8", errors="replace")
    missing = []
    own = str(path.relative_to(ROOT)).startswith(OWN_PROJECT)
    for cited in CITED.findall(text):
        if not (ROOT / cited).exists() and not (own and cited.startswith("tests/")):
            missing.append(cited)
    for name in BARE.findall(text):
        if not (ROOT / "docs" / name).exists() and not (ROOT / name).exists():
            missing.append(name)
    if path.suffix == ".md":
        for target in LINK.findall(text):
            if "://" not in target and not (path.parent / target).exists():
                missing.append(target)
    return missing


def test_nothing_cites_a_file_the_repository_lacks() -> None:
    missing = {str(p.relative_to(ROOT)): m for p in scanned_files()
               if p != Path(__file__) and (m := missing_citations(p))}
    assert not missing, missing



ROLE_FLAGS = {"--backend", "--preset", "--command", "--script", "--model", "--sandbox",
              "--dry-run"}  # the role runs' options, named once in the page's opening


def commands_page_rows() -> dict[str, str]:
    """docs/commands.md's table: each command named in a row's first cell -> its rows."""
    rows: dict[str, str] = {}
    for line in (ROOT / "docs" / "commands.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("| `"):
            cell = re.split(r"(?<!\\)\|", line)[1]
            for code in re.findall(r"`([^`]+)`", cell):
                rows[code.split()[0]] = rows.get(code.split()[0], "") + line
    return rows


def test_commands_page_names_every_command_and_option() -> None:
    """The README calls docs/commands.md "every command and option": it has a row for each
    command of `run.sh --help`, naming each of the command's options (note's are in
    `note --help`, the role runs' in the page's opening)."""
    import click

    from harness.cli.app import cli

    page = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    assert all(flag in page.split("| command |")[0] for flag in ROLE_FLAGS)
    rows = commands_page_rows()
    assert set(cli.commands) <= set(rows), set(cli.commands) - set(rows)
    lacking = []
    for name, command in cli.commands.items():
        for option in (p for p in command.params if isinstance(p, click.Option)):
            names = set(option.opts)
            if names & {"--help", "--state", "--workdir"} or names <= ROLE_FLAGS:
                continue
            if not any(re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", rows[name])
                       for n in names):
                lacking.append(f"{name} {option.opts[0]}")
    assert not lacking, lacking


def test_readme_is_read_in_five_minutes() -> None:
    """Issue 34: the README holds at most 200 lines; the rest is in docs/."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, len(lines)
