"""Walking a graph's tree: its root, a page of children, ancestors, and where errors start."""

from __future__ import annotations

from typing import Any

from graphboard.store.columns import first_introduced
from graphboard.store.graph_views import GraphKey
from graphboard.store.reader.opening import VisDb
from graphboard.store.reader.overlay import graph_view
from graphboard.store.reader.rules import ruled_view
from graphboard.store.reader.summaries import (
    BY_GRAPH,
    TB_SELECT,
    NodeSummary,
    Page,
    summaries_by_order,
    summaries_of_rows,
    summary,
)
from graphboard.store.rule_columns import MSPROBE


def root(db: VisDb, key: GraphKey, rules: str = MSPROBE) -> NodeSummary | None:
    row = db.conn.execute(
        TB_SELECT + BY_GRAPH + " AND t.up_node = '' ORDER BY t.node_order DESC LIMIT 1",
        (key.step, key.rank, key.side),
    ).fetchone()
    return summaries_of_rows(db, key, [row], rules)[0] if row is not None else None


def children(
    db: VisDb,
    key: GraphKey,
    parent: str,
    *,
    after: int | None = None,
    limit: int | None = None,
    micro_step: int | None = None,
    rules: str = MSPROBE,
) -> Page:
    """A page of ``parent``'s children in sibling (execution) order. The cursor is the last
    child's node_order: keyset paging on msprobe's (step, rank, side, up_node, node_order)
    index, as fast for the millionth child as for the first."""
    sql = TB_SELECT + BY_GRAPH + " AND t.up_node = ? AND t.node_order > ?"
    params: list[Any] = [key.step, key.rank, key.side, parent, -1 if after is None else after]
    if micro_step is not None:
        sql += " AND t.micro_step_id = ?"
        params.append(micro_step)
    sql += " ORDER BY t.node_order"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit + 1)
    items = summaries_of_rows(db, key, db.conn.execute(sql, params).fetchall(), rules)
    if limit is not None and len(items) > limit:
        return Page(items[:limit], items[limit - 1].node_order)
    return Page(items, None)


def child_names(db: VisDb, key: GraphKey, parent: str) -> list[tuple[str, int]]:
    """(name, node type) of every child, in sibling order."""
    return [
        (str(name), int(node_type) if str(node_type).isdigit() else 0)
        for name, node_type in db.conn.execute(
            "SELECT node_name, node_type FROM main.tb_nodes WHERE step = ? AND rank = ? "
            "AND data_source = ? AND up_node = ? ORDER BY node_order",
            (key.step, key.rank, key.side, parent),
        )
    ]


def ancestors(
    db: VisDb, key: GraphKey, name: str, rules: str = MSPROBE
) -> list[NodeSummary] | None:
    """From the root down to ``name``'s parent; None when there is no such node."""
    node = summary(db, key, name, rules)
    if node is None:
        return None
    parent = graph_view(db, key).columns["parent"]
    chain: list[int] = []
    order = int(parent[node.node_order])
    while order >= 0 and len(chain) <= len(parent):
        chain.append(order)
        order = int(parent[order])
    chain.reverse()
    return summaries_by_order(db, key, chain, rules)


def first_error(db: VisDb, key: GraphKey, rules: str = MSPROBE) -> NodeSummary | None:
    """The first node, in node order, where an error starts; failing that, a warning."""
    order = first_introduced(ruled_view(db, key, rules).columns["introduced"])
    return None if order is None else summaries_by_order(db, key, [order], rules)[0]


def worst_descendant(
    db: VisDb, key: GraphKey, name: str, rules: str = MSPROBE
) -> NodeSummary | None:
    """The first node (itself or below, in execution order) at the subtree's worst level."""
    node = summary(db, key, name, rules)
    if node is None or node.worst_node is None:
        return None
    worst = int(ruled_view(db, key, rules).columns["worst_node"][node.node_order])
    return summaries_by_order(db, key, [worst], rules)[0]
