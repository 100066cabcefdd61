"""Every gb_arrays column of a graph, and its gb_graphs counts, from the nodes' own facts.

The builder gathers those facts from its Graph, the overlay for msprobe's files from
``tb_nodes`` alone (store/msprobe_columns.py); both hand them here as plain sequences in
node_order, so a file reads the same whoever wrote it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from graphboard.compare.result import Level, level_of_precision
from graphboard.store import arrays

Columns = dict[str, npt.NDArray[Any]]


def graph_columns(
    parent: Sequence[int],
    counterpart: Sequence[int | None] | None,
    precision: Sequence[float | None],
    overflow: Sequence[str | None],
    introduced: Sequence[Level | None],
) -> Columns:
    """Every column of ``arrays.COLUMNS``, one entry per node in node_order.

    ``parent``: node_order of each node's parent, ``arrays.NONE`` for a root.
    ``counterpart``: None in a build; in a compare, per node, the node_order of its
    counterpart on the other side, None when unmatched (``arrays.NONE`` when matched to a
    node the other side does not hold). ``precision``: the precision index, None when not
    scored. ``overflow``: msprobe's overflow_level label or None. ``introduced``: the level of
    a divergence that starts at the node (``compare.result.divergence_level``), or None.
    """
    count = len(parent)
    columns = arrays.structure(parent)
    if counterpart is None:
        matched = np.full(count, arrays.NONE, np.int8)
        counterparts = np.full(count, arrays.NONE, np.int32)
    else:
        matched = np.fromiter((order is not None for order in counterpart), np.int8, count)
        counterparts = np.fromiter(
            (arrays.NONE if order is None else order for order in counterpart), np.int32, count
        )
    columns.update(
        matched=matched,
        counterpart=counterparts,
        level=np.fromiter(
            (_code(level_of_precision(value)) for value in precision), np.int8, count
        ),
        introduced=np.fromiter(
            (0 if level is None else level for level in introduced), np.int8, count
        ),
        overflow=np.fromiter(
            (arrays.OVERFLOW_CODES.get(label or "", 0) for label in overflow), np.int8, count
        ),
    )
    arrays.roll_up(columns, counterpart is not None)
    return columns


def _code(level: Level | None) -> int:
    return arrays.NONE if level is None else int(level)


def first_introduced(introduced: npt.NDArray[Any]) -> int | None:
    """The node_order of the first node where an error starts; failing that, where a warning
    starts; None when nothing starts anywhere."""
    for level in (Level.ERROR, Level.WARNING):
        found = np.flatnonzero(introduced == level)
        if len(found):
            return int(found[0])
    return None


@dataclass(frozen=True, slots=True)
class GraphCounts:
    """The counts of a graph's gb_graphs row; None in a build, which compares nothing."""

    matched: int | None
    unmatched: int | None
    by_level: dict[Level, int | None]
    first_error: int | None  # node_order (first_introduced)


def graph_counts(
    columns: Columns, borrowed: Sequence[bool] | npt.NDArray[np.bool_], compared: bool
) -> GraphCounts:
    """Counts from a graph's columns. ``borrowed`` marks, per node, those whose level is their
    children's worst (API collections): counted through those children, not again."""
    if not compared:
        return GraphCounts(None, None, dict.fromkeys(Level), None)
    matched = int((columns["matched"] == 1).sum())
    own = columns["level"][~np.asarray(borrowed, bool)]
    return GraphCounts(
        matched,
        len(columns["matched"]) - matched,
        {level: int((own == level).sum()) for level in Level},
        first_introduced(columns["introduced"]),
    )
