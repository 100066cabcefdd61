"""A node's summary (a tree row): its ``tb_nodes`` row joined with the graph's columns.

Rows are read with msprobe's own indexes on (step, rank, data_source, ...); names of the few
other nodes a summary shows (its worst descendant, its counterpart) are looked up by node_order
without loading every name of a big graph.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from graphboard.compare.result import label_of_code
from graphboard.graph.sides import Side
from graphboard.store import arrays
from graphboard.store.graph_views import GraphKey, GraphView
from graphboard.store.reader.graphs import has_graph
from graphboard.store.reader.opening import VisDb
from graphboard.store.reader.rules import ruled_view
from graphboard.store.rule_columns import MSPROBE


@dataclass(slots=True)
class NodeSummary:
    """What a tree row needs: identity, verdicts and what the subtree holds."""

    name: str
    parent: str | None
    node_type: int
    node_order: int
    exec_order: int
    depth: int
    child_count: int
    micro_step: int
    precision_index: float | None
    level: str | None  # pass | warning | error; None when not scored
    overflow: str | None  # medium | high | critical
    matched: bool | None  # None in a build
    counterpart: str | None
    worst_level: str | None
    worst_node: str | None
    error_leaves: int
    warning_leaves: int
    unmatched_leaves: int
    overflow_leaves: int
    worst_overflow: str | None
    introduced: str | None  # a divergence starts here: its level
    manual: bool  # (un)paired by a user
    modified: bool  # re-matched in place by msprobe's viewer


@dataclass(slots=True)
class Page:
    items: list[NodeSummary]
    next_cursor: int | None
    total: int | None = None
    counts: dict[str, int] = field(default_factory=dict)


TB_SELECT = """SELECT t.node_name, t.up_node, t.node_type, t.node_order, t.micro_step_id,
    t.precision_index, t.overflow_level, t.modified FROM main.tb_nodes t"""
BY_GRAPH = " WHERE t.step = ? AND t.rank = ? AND t.data_source = ?"
_NAMES_SELECT = "SELECT t.node_order, t.node_name FROM main.tb_nodes t"
_CHUNK = 500  # under SQLite's bound-parameter limit


def summaries_of_rows(
    db: VisDb, key: GraphKey, rows: Sequence[Sequence[Any]], rules: str = MSPROBE
) -> list[NodeSummary]:
    if not rows:
        return []
    view = ruled_view(db, key, rules)
    other: GraphView | None = None
    if view.compared:
        other_key = GraphKey(Side.from_data_source(key.side).other.data_source, key.step, key.rank)
        if has_graph(db, other_key):
            other = ruled_view(db, other_key, rules)
    orders = [int(row[3]) for row in rows]
    worst = _names_at(db, view, [int(view.columns["worst_node"][order]) for order in orders])
    counterparts: dict[int, str] = {}
    if other is not None:
        wanted = [int(view.columns["counterpart"][order]) for order in orders]
        counterparts = _names_at(db, other, [order for order in wanted if order < len(other)])
    return [_summary(view, row, worst, counterparts) for row in rows]


def _names_at(db: VisDb, view: GraphView, orders: Sequence[int]) -> dict[int, str]:
    """Names of a few nodes by node_order, without loading every name of a big graph."""
    wanted = sorted({order for order in orders if order >= 0})
    if not wanted:
        return {}
    if view.names_loaded or len(wanted) > 2000:
        names = view.names
        return {order: names[order] for order in wanted}
    return {
        int(order): str(name)
        for order, name in rows_in(db, view.key, _NAMES_SELECT, "node_order", wanted)
    }


def _summary(
    view: GraphView,
    row: Sequence[Any],
    worst: dict[int, str],
    counterparts: dict[int, str],
) -> NodeSummary:
    name, parent, node_type, order, micro_step, precision, overflow, modified = row
    columns = view.columns
    order = int(order)
    if order in view.precision:
        precision = view.precision[order]
    matched = int(columns["matched"][order])
    counterpart_order = int(columns["counterpart"][order])
    worst_node = int(columns["worst_node"][order])
    return NodeSummary(
        name=str(name),
        parent=str(parent) if parent else None,
        node_type=int(node_type) if str(node_type).isdigit() else 0,
        node_order=order,
        exec_order=int(columns["exec_order"][order]),
        depth=int(columns["depth"][order]),
        child_count=int(columns["child_count"][order]),
        micro_step=int(micro_step or 0),
        precision_index=float(precision) if precision is not None else None,
        level=label_of_code(int(columns["level"][order])),
        overflow=str(overflow) if overflow else None,
        matched=None if matched < 0 else bool(matched),
        counterpart=counterparts.get(counterpart_order),
        worst_level=label_of_code(int(columns["worst_level"][order])),
        worst_node=worst.get(worst_node),
        error_leaves=int(columns["error_leaves"][order]),
        warning_leaves=int(columns["warning_leaves"][order]),
        unmatched_leaves=int(columns["unmatched_leaves"][order]),
        overflow_leaves=int(columns["overflow_leaves"][order]),
        worst_overflow=arrays.OVERFLOW_NAMES.get(int(columns["worst_overflow"][order])),
        introduced=label_of_code(int(columns["introduced"][order]) or -1),
        manual=order in view.manual,
        modified=bool(modified),
    )


def summary(db: VisDb, key: GraphKey, name: str, rules: str = MSPROBE) -> NodeSummary | None:
    row = db.conn.execute(
        TB_SELECT + BY_GRAPH + " AND t.node_name = ?", (key.step, key.rank, key.side, name)
    ).fetchone()
    return summaries_of_rows(db, key, [row], rules)[0] if row is not None else None


def summaries_by_order(
    db: VisDb, key: GraphKey, orders: Sequence[int], rules: str = MSPROBE
) -> list[NodeSummary]:
    """Summaries of nodes given by node_order, in the order given."""
    rows: dict[int, Sequence[Any]] = {
        int(row[3]): row
        for row in rows_in(db, key, TB_SELECT, "node_order", [int(order) for order in orders])
    }
    return summaries_of_rows(db, key, [rows[order] for order in orders if order in rows], rules)


def rows_in(
    db: VisDb, key: GraphKey, select: str, by: str, values: Sequence[object]
) -> Iterator[Sequence[Any]]:
    """Rows of ``select`` (a ``SELECT ... FROM main.tb_nodes t`` of the reader's own) of
    the graph's nodes whose column ``by`` is one of ``values``, one query per chunk."""
    for start in range(0, len(values), _CHUNK):
        chunk = values[start : start + _CHUNK]
        marks = ", ".join("?" * len(chunk))
        yield from db.conn.execute(
            select + BY_GRAPH + f" AND t.{by} IN ({marks})",
            (key.step, key.rank, key.side, *chunk),
        )
