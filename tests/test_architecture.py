"""The architecture holds: imports go down the layers of pyproject.toml, nothing imports in
a circle (imports inside functions included), modules and functions stay small, and ruff's
checks, complexity included, pass."""

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parent.parent
MAX_MODULE_LINES = 300
MAX_FUNCTION_LINES = 50


def test_packages_import_only_downwards(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True,
                        no_logo=True) == 0, "see the broken contract printed above"


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """One chain per import that the imported module leads back from."""
    cycles = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back:
                cycles.append([importer, *back])
    return cycles


def test_no_module_imports_itself_in_a_circle() -> None:
    graph = grimp.build_graph("harness", cache_dir=None)
    assert import_cycles(graph) == []


def test_the_cycle_check_finds_a_cycle_hidden_in_a_function(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "circle"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from circle import b\n")
    (package / "b.py").write_text("def late():\n    from circle import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    cycles = import_cycles(grimp.build_graph("circle", cache_dir=None))
    assert ["circle.a", "circle.b", "circle.a"] in cycles


def python_files() -> list[Path]:
    return [p for p in sorted((ROOT / "harness").rglob("*.py")) if "project" not in p.parts]


def test_modules_and_functions_stay_small() -> None:
    too_long = []
    for path in python_files():
        text = path.read_text()
        name = path.relative_to(ROOT)
        if text.count("\n") > MAX_MODULE_LINES:
            too_long.append(f"{name}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    too_long.append(f"{name}:{node.lineno} {node.name}: {lines} lines")
    assert too_long == []


@pytest.mark.skipif(shutil.which("ruff", path=str(Path(sys.executable).parent)) is None,
                    reason="ruff is not installed beside this Python (run.sh selftest installs it)")
def test_ruff_is_clean_with_its_complexity_rule() -> None:
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent))
    result = subprocess.run([ruff, "check", "--no-cache", "."], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
