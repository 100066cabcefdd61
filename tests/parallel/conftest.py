"""Real tensor/pipeline/data-parallel dumps, made once per test session.

``parallel_dump("tp2", "mix")`` is tests/parallel/megatron_gpt.py trained one step in that
layout under msprobe's torchrun and dumped by msprobe's dumper (parallel_dumps.py);
``parallel_reference("tp2", "mix")`` is msprobe's own merged .vis.db of that dump
(``graph_visualize --rank_size --tp --pp``), kept beside it in pytest's tmp dir. Both are made
on first use, so a session pays only for the layouts its tests ask for.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from parallel_dumps import (
    LAYOUTS,
    CompareFn,
    DumpFn,
    ParallelDump,
    ReferenceFn,
    compare_flags,
    make_dump,
)

from msprobe_runner import graph_visualize


@pytest.fixture(scope="session")
def parallel_dump(tmp_path_factory: pytest.TempPathFactory) -> DumpFn:
    cache: dict[tuple[str, str], ParallelDump] = {}

    def dump(name: str, level: str = "mix") -> ParallelDump:
        if (name, level) not in cache:
            folder = tmp_path_factory.mktemp(f"parallel-{name}-{level}")
            cache[name, level] = make_dump(LAYOUTS[name], level, folder)
        return cache[name, level]

    return dump


@pytest.fixture(scope="session")
def parallel_reference(parallel_dump: DumpFn) -> ReferenceFn:
    """msprobe's merged build of a layout's dump; ``reference(name, level, "-oc")`` with its
    overflow check."""
    cache: dict[tuple[str, ...], Path] = {}

    def reference(name: str, level: str = "mix", *options: str) -> Path:
        key = (name, level, *options)
        if key not in cache:
            made = parallel_dump(name, level)
            out = made.root.parent / ("msprobe" + "".join(options))
            out.mkdir()
            cache[key] = graph_visualize(
                out, "-tp", str(made.root), *made.layout.merge_flags(), *options
            )
        return cache[key]

    return reference


@pytest.fixture(scope="session")
def parallel_compare_reference(parallel_dump: DumpFn) -> CompareFn:
    """msprobe's merged compare of two layouts' dumps (``--rank_size a b --tp a b --pp a b``)."""
    cache: dict[tuple[str, str, str], Path] = {}

    def reference(target: str, golden: str, level: str = "mix") -> Path:
        if (target, golden, level) not in cache:
            made, against = parallel_dump(target, level), parallel_dump(golden, level)
            out = made.root.parent / f"msprobe-vs-{golden}"
            out.mkdir()
            flags = compare_flags(made.layout, against.layout)
            cache[target, golden, level] = graph_visualize(
                out, "-tp", str(made.root), "-gp", str(against.root), *flags
            )
        return cache[target, golden, level]

    return reference
