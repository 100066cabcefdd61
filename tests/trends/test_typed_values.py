"""Trends of a graphboard file read the parameters typed (gb_params), never parsing display
strings back, and give the values the display strings gave; msprobe's files still parse."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from trends_support import OpenFn

from fixture_cases import reference_db
from graphboard.store import param_parse
from graphboard.trends.heatmap import Axis, Heatmap, HeatmapQuery, heatmap
from graphboard.trends.modules import Pass
from graphboard.trends.values import RAW_STATISTICS, Statistic

QUERIES = [
    HeatmapQuery(Axis.MODULE, Axis.RANK, statistic, side=side, pass_=pass_, depth=2)
    for statistic in sorted(RAW_STATISTICS)
    for side in ("NPU", "Bench", "diff")
    for pass_ in (Pass.FORWARD, Pass.BACKWARD, Pass.PARAMETERS_GRAD)
] + [
    HeatmapQuery(Axis.MODULE, Axis.PASS, Statistic.NORM, depth=2),
    HeatmapQuery(Axis.RANK, Axis.STEP, Statistic.MEAN, module="Module.head.3.Linear"),
]


def _refuse_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: Any) -> Any:
        raise AssertionError(f"display strings parsed back: {args[:2]}")

    monkeypatch.setattr(param_parse, "param_from_display", refused)


def _same(typed: Heatmap, parsed: Heatmap) -> int:
    """Asserts the two heatmaps agree; returns how many cells hold a number."""
    assert (typed.rows, typed.cols, typed.nodes) == (parsed.rows, parsed.cols, parsed.nodes)
    numbers = 0
    for typed_row, parsed_row in zip(typed.values, parsed.values, strict=True):
        for value, again in zip(typed_row, parsed_row, strict=True):
            if value is None or again is None:
                assert value is again
            elif math.isnan(value):
                assert math.isnan(again)
            else:
                assert value == pytest.approx(again, rel=1e-12, abs=0)
                numbers += 1
    return numbers


def test_a_graphboard_files_trends_are_typed_and_the_same_as_parsed(
    ddp2_compare: Path, open_db: OpenFn, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as refusing:
        _refuse_parsing(refusing)
        with open_db(ddp2_compare) as db:
            typed = [heatmap(db, query) for query in QUERIES]
    with open_db(ddp2_compare) as db:
        db.typed_params = False  # read as a file without gb_params is
        parsed = [heatmap(db, query) for query in QUERIES]
    assert sum(_same(t, p) for t, p in zip(typed, parsed, strict=True)) > 100


def test_an_msprobe_files_trends_parse_its_display_strings(
    open_db: OpenFn, monkeypatch: pytest.MonkeyPatch
) -> None:
    _refuse_parsing(monkeypatch)
    with open_db(reference_db("convnet-ddp2")) as db, pytest.raises(AssertionError, match="parsed"):
        heatmap(db, QUERIES[0])
