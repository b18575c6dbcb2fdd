"""bench/suite.py's table: its figures as they are printed."""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow  # a benchmark script's test, not the harness's


def load_suite():
    spec = importlib.util.spec_from_file_location("bench_suite", ROOT / "bench" / "suite.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    sys.path[:0] = [str(ROOT / "bench")]  # suite imports the benchmarks beside it
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.path[0]
    return module


def test_a_call_under_a_millisecond_is_not_printed_as_zero() -> None:
    ms = load_suite().ms
    assert ms(0.00042) == "0.4 ms"  # a bash tool call in a running shell
    assert ms(0.0116) == "12 ms"
    assert ms(1.5) == "1500 ms"
