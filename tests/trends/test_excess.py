"""Trends' default statistic, ``excess`` (issue 29): how many times its dtype-aware noise band
a node's own difference is, the largest in its subtree. On a real dump it points where the
viewer points; msprobe's worst relative error does not."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from trends_support import OpenFn

from dtype_dumps import Dumps, dtype_dumps
from fixture_cases import reference_db
from graphboard.trends.heatmap import Axis, HeatmapQuery, HeatmapRefused, heatmap
from graphboard.trends.values import Statistic
from graphboard.verdict_cli import file_verdict

__all__ = ["dtype_dumps"]

FAULTY = "Module.blocks.1.Block"  # the scaled target's layer-1 MLP output is 5% off


def _forward(found_values: list[list[float | None]]) -> list[float]:
    return [row[0] if row[0] is not None else -1.0 for row in found_values]


def test_the_faulty_block_is_the_hottest_and_the_only_one_beyond_its_band(
    dtype_dumps: Dumps, open_db: OpenFn, tmp_path: Path
) -> None:
    """A bf16 GPT of 4 layers (graphboard's probe) against fp32: every module's bf16 rounding
    stays inside its band (excess <= 1, graded, not 0), the faulty block's is several times
    beyond, and the viewer's first error (dtype-aware, the default) is inside it."""
    path = dtype_dumps.compare("graphboard", "gpt", 4, "scaled")
    with open_db(path) as db:
        found = heatmap(db, HeatmapQuery(Axis.MODULE, Axis.PASS, Statistic.EXCESS))
        error = heatmap(db, HeatmapQuery(Axis.MODULE, Axis.PASS, Statistic.ERROR))
    assert FAULTY in found.rows
    forward = _forward(found.values)
    hottest = found.rows[forward.index(max(forward))]
    assert hottest == FAULTY
    faulty = found.rows.index(FAULTY)
    assert found.values[faulty][0] is not None and found.values[faulty][0] > 2
    others = [
        value
        for row, values in enumerate(found.values)
        for col, value in enumerate(values)
        if value is not None and (row, col) != (faulty, 0)
    ]
    assert others and all(0 <= value <= 1 for value in others)
    assert any(value > 0 for value in others)  # graded within the band, not a flag
    assert found.nodes[faulty][0] == f"{FAULTY}.forward.0"
    first = file_verdict(path, cache_dir=tmp_path).first_error
    assert first is not None and first.name.startswith("Module.blocks.1.")
    # issue 29's complaint: the worst relative error paints other modules far hotter
    relative = _forward(error.values)
    assert error.rows[relative.index(max(relative))] != FAULTY
    assert max(relative) > 10 * relative[error.rows.index(FAULTY)]


def test_a_file_without_dtype_aware_verdicts_is_refused_with_the_reason(open_db: OpenFn) -> None:
    with open_db(reference_db("convnet-stats")) as db, pytest.raises(HeatmapRefused) as refused:
        heatmap(db, HeatmapQuery(Axis.MODULE, Axis.PASS, Statistic.EXCESS))
    assert "holds no dtype-aware excess" in str(refused.value)
    assert "rebuild it with graph_build" in str(refused.value)


def test_an_argument_that_starts_an_error_is_infinitely_beyond(
    dtype_dumps: Dumps, open_db: OpenFn
) -> None:
    """A tanh GELU in bf16 differs far inside bf16's rounding: only its argument says so
    (docs/dtype-aware.md §5), and no number says how far: every block calling it is at the
    top of the scale, the modules around them inside their bands."""
    path = dtype_dumps.compare("graphboard", "gpt", 2, "tanh")
    with open_db(path) as db:
        found = heatmap(db, HeatmapQuery(Axis.MODULE, Axis.PASS, Statistic.EXCESS))
    forward = dict(zip(found.rows, _forward(found.values), strict=True))
    blocks = {row: value for row, value in forward.items() if ".blocks." in str(row)}
    assert blocks and all(value == math.inf for value in blocks.values()), forward
    assert all(0 <= value <= 1 for row, value in forward.items() if row not in blocks), forward
