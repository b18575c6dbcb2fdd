"""Run pages rendered across processes: the first report of a big mission is CPU-bound at
about 1 ms a page, and the pages are independent.

Forked workers inherit the report's renderer (templates compiled, cache read); each renders
a share of the runs and returns their cache entries and what it wrote.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Protocol

PARALLEL_FROM = 500  # fewer stale runs than this render in the process itself

Stamp = list[list[int]]
Entry = dict[str, Any]
Stale = list[tuple[str, Stamp]]


class Counts(Protocol):
    run_pages: int
    pages: int
    bytes: int


_render: Callable[[str, Stamp], Entry] | None = None  # set in the parent just before the fork
_written: Counts | None = None


def render_runs(render: Callable[[str, Stamp], Entry], written: Counts,
                stale: Stale) -> dict[str, Entry]:
    """The cache entries of `stale` runs, their pages written (and counted in `written`) by
    `render`; in forked processes when there are many."""
    workers = min(os.cpu_count() or 1, 8)
    if (len(stale) < PARALLEL_FROM or workers < 2
            or "fork" not in multiprocessing.get_all_start_methods()):
        return {name: render(name, now) for name, now in stale}
    global _render, _written
    _render, _written = render, written
    shares = [stale[i::workers] for i in range(workers)]
    entries: dict[str, Entry] = {}
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            for done, run_pages, pages, size in pool.map(render_share, shares):
                entries.update(done)
                written.run_pages += run_pages
                written.pages += pages
                written.bytes += size
    finally:
        _render = _written = None
    return entries


def render_share(share: Stale) -> tuple[dict[str, Entry], int, int, int]:
    """In a worker: render a share of the runs; their entries and what was written."""
    assert _render is not None and _written is not None
    _written.run_pages = _written.pages = _written.bytes = 0
    done = {name: _render(name, now) for name, now in share}
    return done, _written.run_pages, _written.pages, _written.bytes
