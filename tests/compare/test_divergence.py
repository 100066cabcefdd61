"""One rule for "a divergence starts here", whether it reads the builder's rows or the display
strings a file stores (msprobe's own files, a row msprobe's viewer re-matched): each edge case
gives the same answer both ways."""

from __future__ import annotations

import math

import pytest
from compare_factories import node, scalar, tensor

from graphboard.compare.colors import node_colors
from graphboard.compare.engine import compare_pair
from graphboard.compare.result import (
    DataMode,
    Level,
    NodeComparison,
    ScoredParam,
    divergence_level,
    label_of_code,
    level_of_label,
    level_of_precision,
)
from graphboard.dump.records import Param, Role
from graphboard.store.display import node_display
from graphboard.store.msprobe_columns import introduced_level

IN = (1.0, -1.0, 0.1, 10.0)
OFF = (1.0, -1.0, 0.1, 16.0)  # a norm 60% off: an error on its own


def _masked(key: str) -> Param:
    return Param(key, Role.INPUT)


def _process_group(key: str, ranks: list[int]) -> Param:
    return Param(
        key, Role.INPUT, "torch.ProcessGroup", extra={"group_ranks": ranks, "group_id": "1"}
    )


def _compare(target: list[Param], golden: list[Param]) -> NodeComparison:
    name = "Functional.gelu.0.forward"
    comparison = compare_pair(node(name, target), node(name, golden), DataMode.SUMMARY)
    assert comparison is not None
    return comparison


def _from_display(comparison: NodeComparison, target: list[Param]) -> Level | None:
    """The rule as the overlay applies it: from the target's stored dicts alone."""
    inputs, outputs = node_display(
        target, "Functional.gelu.0.forward", DataMode.SUMMARY, comparison
    )
    level = -1 if comparison.level is None else int(comparison.level)
    code = introduced_level(level, inputs, outputs)
    return Level(code) if code else None


CASES = {
    "flagged output, input tensors pass": (
        [tensor("input.0", IN), tensor("output.0", OFF)],
        [tensor("input.0", IN), tensor("output.0", IN)],
        Level.ERROR,
    ),
    "an input tensor already differs": (
        [tensor("input.0", IN, dtype="torch.float16"), tensor("output.0", OFF)],
        [tensor("input.0", IN), tensor("output.0", IN)],
        None,
    ),
    "a non-tensor argument differs": (
        [tensor("input.0", IN), scalar("input.approximate", "tanh"), tensor("output.0", IN)],
        [tensor("input.0", IN), scalar("input.approximate", "none"), tensor("output.0", IN)],
        Level.ERROR,
    ),
    "a process group differs, input tensors pass": (
        [tensor("input.0", IN), _process_group("input.group", [0, 1]), tensor("output.0", OFF)],
        [tensor("input.0", IN), _process_group("input.group", [0, 2]), tensor("output.0", IN)],
        Level.ERROR,
    ),
    "an input tensor only the golden has": (
        [tensor("output.0", OFF)],
        [tensor("input.0", IN), tensor("output.0", IN)],
        Level.ERROR,
    ),
    "a masked input beside a flagged output": (
        [_masked("input.0"), tensor("output.0", OFF)],
        [tensor("input.0", IN), tensor("output.0", IN)],
        Level.ERROR,
    ),
    "only masked parameters on the target": (
        [_masked("input.0")],
        [tensor("input.0", IN), tensor("output.0", IN)],
        None,
    ),
    "every row passes": (
        [tensor("input.0", IN), tensor("output.0", IN)],
        [tensor("input.0", IN), tensor("output.0", IN)],
        None,
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_rows_and_stored_dicts_agree_where_a_divergence_starts(case: str) -> None:
    target, golden, expected = CASES[case]
    comparison = _compare(target, golden)
    assert comparison.introduced_level is expected
    assert _from_display(comparison, target) is expected


def test_a_node_without_scored_parameters_starts_nothing() -> None:
    """An API collection takes its children's index but has no rows of its own."""
    assert divergence_level(Level.ERROR, []) is None
    assert introduced_level(int(Level.ERROR), {}, {}) == 0
    assert _compare([], []).introduced_level is None  # nothing to score: level None


def test_the_rule_reads_inputs_tensors_and_levels() -> None:
    failing_input = ScoredParam(is_input=True, is_tensor=True, level=Level.WARNING)
    failing_output = ScoredParam(is_input=False, is_tensor=True, level=Level.ERROR)
    failing_argument = ScoredParam(is_input=True, is_tensor=False, level=Level.ERROR)
    assert divergence_level(Level.ERROR, [failing_output]) is Level.ERROR
    assert divergence_level(Level.ERROR, [failing_argument, failing_output]) is Level.ERROR
    assert divergence_level(Level.ERROR, [failing_output, failing_input]) is None
    assert divergence_level(Level.PASS, [failing_output]) is None
    assert divergence_level(None, [failing_output]) is None


def test_levels_from_precision_labels_and_codes() -> None:
    assert [level_of_precision(value) for value in (None, 0, 0.29, 0.3, 0.5, 0.59, 0.6, 1)] == [
        None,
        Level.PASS,
        Level.PASS,
        Level.WARNING,
        Level.WARNING,
        Level.WARNING,
        Level.ERROR,
        Level.ERROR,
    ]
    for level in Level:  # a level's own index falls in its own band
        assert level_of_precision(level.precision_index) is level
        assert level_of_label(level.label.capitalize()) is level
        assert label_of_code(int(level)) == level.label
    assert level_of_label("N/A") is None
    assert label_of_code(-1) is None and label_of_code(None) is None


def test_the_colour_bands_are_the_levels_bands() -> None:
    for band in node_colors(DataMode.SUMMARY).values():
        if not band["value"]:
            continue  # unmatched
        low, high = band["value"]
        level = level_of_precision(low)
        assert level is not None and level.label == band["accuracy_level"]
        below = level_of_precision(math.nextafter(high, -math.inf))
        assert below is level
