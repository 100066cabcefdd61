"""A node's stored data: its parameter dicts, stack and links, one node or a whole graph.

A user's pairing rescores its nodes' parameters: the overlay's dicts
(:func:`~graphboard.store.reader.overlay.manual_data`) stand in for the stored ones wherever
they are read, except :func:`stored_data`, which is the build's.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from graphboard.dump.records import Param
from graphboard.store import param_table
from graphboard.store import rank_stats as rank_table
from graphboard.store.graph_views import GraphKey
from graphboard.store.param_parse import params_from_display
from graphboard.store.reader.opening import Source, VisDb, table_names
from graphboard.store.reader.overlay import manual_data
from graphboard.store.reader.stored import json_or
from graphboard.store.reader.summaries import BY_GRAPH, NodeSummary, rows_in, summary
from graphboard.store.rule_columns import MSPROBE


@dataclass(slots=True)
class NodeRecord:
    """A node in full: its summary, stored parameter dicts, stack and links."""

    summary: NodeSummary
    input_data: dict[str, Any]
    output_data: dict[str, Any]
    stack: list[str]
    parallel_merge_info: list[str]
    matched_distributed: Any
    dump_data_dir: str | None

    @property
    def name(self) -> str:
        return self.summary.name


class StoredNode(NamedTuple):
    """A node's stored parameter dicts (and stack), for tables over a whole graph."""

    node_order: int
    name: str
    input_data: dict[str, Any]
    output_data: dict[str, Any]
    stack: list[str]


def _node_row(
    db: VisDb, key: GraphKey, name: str, columns: str, join: str = ""
) -> tuple[Any, ...] | None:
    """``columns`` of the node ``name`` of graph ``key`` (``join``: tables they come from
    besides tb_nodes, which is ``t``); both are this module's constants, never input."""
    row: tuple[Any, ...] | None = db.conn.execute(
        f"SELECT {columns} FROM main.tb_nodes t{join}" + BY_GRAPH + " AND t.node_name = ?",
        (key.step, key.rank, key.side, name),
    ).fetchone()
    return row


def node(db: VisDb, key: GraphKey, name: str, rules: str = MSPROBE) -> NodeRecord | None:
    found = summary(db, key, name, rules)
    if found is None:
        return None
    row = _node_row(
        db,
        key,
        name,
        "t.input_data, t.output_data, s.stack_info, t.parallel_merge_info, "
        "t.matched_distributed, t.dump_data_dir",
        " LEFT JOIN main.tb_stack s ON s.id = t.stack_id",
    )
    assert row is not None  # the summary found the node
    input_text, output_text, stack, merge_info, distributed, dump_dir = row
    if found.manual:
        overlaid = manual_data(db, key, name).get(found.node_order)
        if overlaid is not None:
            input_text = overlaid[0] or input_text
            output_text = overlaid[1] or output_text
    return NodeRecord(
        summary=found,
        input_data=json_or(input_text, {}),
        output_data=json_or(output_text, {}),
        stack=[str(frame) for frame in json_or(stack, [])],
        parallel_merge_info=[str(item) for item in json_or(merge_info, [])],
        matched_distributed=json_or(distributed, {}) or None,
        dump_data_dir=str(dump_dir) if dump_dir else None,
    )


def stored_data(
    db: VisDb, key: GraphKey, name: str
) -> tuple[dict[str, Any], dict[str, Any], str | None] | None:
    """(input_data, output_data, dump_data_dir) exactly as ``tb_nodes`` holds them."""
    row = _node_row(db, key, name, "t.input_data, t.output_data, t.dump_data_dir")
    if row is None:
        return None
    return json_or(row[0], {}), json_or(row[1], {}), str(row[2]) if row[2] else None


def _has_typed_params(db: VisDb) -> bool:
    """Whether the file keeps its nodes' parameters typed (gb_params): graphboard's files
    since that table, never msprobe's; asked once per file."""
    if db.typed_params is None:
        db.typed_params = db.source is Source.GRAPHBOARD and param_table.TABLE in (
            table_names(db.conn)
        )
    return db.typed_params


def params(db: VisDb, key: GraphKey, name: str) -> list[Param] | None:
    """A node's parameters as the builder had them (None: no node of that name): from
    gb_params, or parsed back from the display strings of a file without it."""
    if not _has_typed_params(db):
        stored = stored_data(db, key, name)
        if stored is None:
            return None
        return params_from_display(name, stored[0], stored[1])
    row = _node_row(db, key, name, "t.graph_id, t.node_order")
    if row is None:
        return None
    return _typed_rows(db, str(row[0]), [int(row[1])])[int(row[1])]


def rank_stats(db: VisDb, key: GraphKey, node_order: int) -> rank_table.NodeRanks:
    """Each rank's own statistics of the node's merged parameters, by parameter key (a
    parallel merge's gb_rank_stats; empty for an unmerged node or a file without it)."""
    if db.source is not Source.GRAPHBOARD or rank_table.TABLE not in table_names(db.conn):
        return {}
    row = db.conn.execute(_RANK_ROW, (key.graph_id, node_order)).fetchone()
    return rank_table.decode(row[0]).get(node_order, {}) if row is not None else {}


def params_by_order(db: VisDb, key: GraphKey, orders: Sequence[int]) -> dict[int, list[Param]]:
    """The parameters of the given nodes, by node_order, as :func:`params` gives them."""
    wanted = sorted({int(order) for order in orders})
    if _has_typed_params(db):
        found = [int(order) for (order,) in rows_in(db, key, _ORDERS, "node_order", wanted)]
        return _typed_rows(db, key.graph_id, found) if found else {}
    return {
        int(order): params_from_display(
            str(name), _dict_or_empty(json_or(inputs, {})), _dict_or_empty(json_or(outputs, {}))
        )
        for order, name, inputs, outputs in rows_in(
            db,
            key,
            "SELECT t.node_order, t.node_name, t.input_data, t.output_data FROM main.tb_nodes t",
            "node_order",
            wanted,
        )
    }


def _typed_rows(db: VisDb, graph_id: str, orders: list[int]) -> dict[int, list[Param]]:
    """gb_params' parameters of the nodes ``orders`` (nodes of the graph), decoding each
    row that holds one once; a node in no row has none."""
    decoded: dict[int, dict[int, list[Param]]] = {}
    found: dict[int, list[Param]] = {}
    # many nodes (a whole graph's worth: assisted matching): the rows' first orders read
    # once and searched here, instead of one query a node
    starts = (
        [int(first) for (first,) in db.conn.execute(_FIRST_ORDERS, (graph_id,))]
        if len(orders) > _MANY_ORDERS
        else None
    )
    for order in orders:
        if starts is not None:
            at = bisect.bisect_right(starts, order) - 1
            row = (starts[at],) if at >= 0 else None
        else:
            row = db.conn.execute(_ROW_OF_ORDER, (graph_id, order)).fetchone()
        if row is None:
            found[order] = []
            continue
        first = int(row[0])
        if first not in decoded:
            decoded[first] = _decoded_row(db, graph_id, first)
        found[order] = decoded[first].get(order, [])
    return found


def _decoded_row(db: VisDb, graph_id: str, first: int) -> dict[int, list[Param]]:
    """One gb_params row decoded, the last few kept for this open file: a manual match of
    many pairs (a .vis.config, accepted suggestions) reads neighbours' parameters one node
    at a time, and decoding the row each time cost ~5 ms a node. gb_params never changes
    in a built file (matching writes only its own tables); the Params are shared, not
    copied, so callers must not change them."""
    key = (graph_id, first)
    found = db.param_rows.get(key)
    if found is None:
        (data,) = db.conn.execute(_ROW_DATA, (graph_id, first)).fetchone()
        found = db.param_rows[key] = param_table.decode(data)
        if len(db.param_rows) > _ROWS_KEPT:
            db.param_rows.popitem(last=False)
    else:
        db.param_rows.move_to_end(key)
    return found


def stored_nodes(db: VisDb, key: GraphKey, *, stacks: bool = False) -> list[StoredNode]:
    """Every node of the graph holding parameters, in node order (a whole-graph table),
    with users' pairings' rescored dicts as ``node`` gives them; ``stacks`` adds each
    node's stack."""
    return list(iter_stored_nodes(db, key, stacks=stacks))


def iter_stored_nodes(db: VisDb, key: GraphKey, *, stacks: bool = False) -> Iterator[StoredNode]:
    """:func:`stored_nodes` one at a time, read by one query as they are used: a
    graph's nodes and their parsed parameters are never all in memory at once."""
    return _stored_rows(db, key, "ORDER BY t.node_order", (), stacks=stacks)


def stored_nodes_at(
    db: VisDb, key: GraphKey, orders: Sequence[int], *, stacks: bool = False
) -> dict[int, StoredNode]:
    """The nodes holding parameters among ``orders`` (a batch: a few hundred), by order,
    found on msprobe's (step, rank, data_source, node_order) index; ``stacks`` adds each
    node's stack."""
    if not orders:
        return {}
    marks = ", ".join("?" * len(orders))
    found = _stored_rows(db, key, f"AND t.node_order IN ({marks})", tuple(orders), stacks=stacks)
    return {node.node_order: node for node in found}


def _stored_rows(
    db: VisDb, key: GraphKey, tail: str, bound: tuple[int, ...], *, stacks: bool = False
) -> Iterator[StoredNode]:
    stack_column = "s.stack_info" if stacks else "NULL"
    join = " LEFT JOIN main.tb_stack s ON s.id = t.stack_id" if stacks else ""
    rows = db.conn.execute(
        f"SELECT t.node_order, t.node_name, t.input_data, t.output_data, {stack_column} "
        f"FROM main.tb_nodes t{join}" + BY_GRAPH + " AND (t.input_data NOT IN ('', '{}') "
        f"OR t.output_data NOT IN ('', '{{}}')) {tail}",
        (key.step, key.rank, key.side, *bound),
    )
    overlaid = manual_data(db, key)
    stacks_read: dict[str | None, list[str]] = {}  # the calls of one line share a stack
    for order, name, input_text, output_text, stack_text in rows:
        if order in overlaid:
            input_text = overlaid[order][0] or input_text
            output_text = overlaid[order][1] or output_text
        stack = stacks_read.get(stack_text)
        if stack is None:
            stack = [str(frame) for frame in json_or(stack_text, [])]
            stacks_read[stack_text] = stack
        yield StoredNode(
            int(order),
            str(name),
            json_or(input_text, {}),
            json_or(output_text, {}),
            stack,
        )


def module_names(db: VisDb, key: GraphKey, module: str | None = None) -> list[tuple[int, str]]:
    """(node_order, name) of the graph's module nodes (``node_type`` 0 in both tools'
    files), or with ``module`` of those named ``<module>.…``, found on msprobe's
    (step, rank, data_source, node_name) index: no scan of the graph."""
    query = "SELECT node_order, node_name FROM main.tb_nodes t" + BY_GRAPH
    bound: tuple[object, ...] = (key.step, key.rank, key.side)
    if module is not None:
        # every name starting "<module>." sorts in [module + ".", module + "/")
        query += " AND t.node_name >= ? AND t.node_name < ?"
        bound += (module + ".", module + "/")
    return [
        (int(order), str(name))
        for order, name in db.conn.execute(query + " AND t.node_type = '0'", bound)
    ]


def dicts_of(
    db: VisDb, key: GraphKey, orders: Sequence[int], column: str
) -> dict[int, dict[str, Any]]:
    """``input_data`` or ``output_data`` (``column``) of the given nodes, by node_order,
    a user's pairing's rescored dicts standing in for the build's as :func:`node` shows."""
    assert column in ("input_data", "output_data")  # the only names spliced into SQL
    texts: dict[int, str | None] = {
        int(order): text
        for order, text in rows_in(
            db,
            key,
            f"SELECT t.node_order, t.{column} FROM main.tb_nodes t",
            "node_order",
            sorted({int(order) for order in orders}),
        )
    }
    side = 0 if column == "input_data" else 1
    for order, overlaid in manual_data(db, key).items():
        if order in texts and overlaid[side]:
            texts[order] = overlaid[side]
    return {order: _dict_or_empty(json_or(text, {})) for order, text in texts.items()}


def orders_of_names(db: VisDb, key: GraphKey, names: Sequence[str]) -> dict[str, int]:
    """node_order of each named node the graph has (msprobe's name index)."""
    return {
        str(name): int(order)
        for name, order in rows_in(
            db,
            key,
            "SELECT t.node_name, t.node_order FROM main.tb_nodes t",
            "node_name",
            sorted(set(names)),
        )
    }


_ORDERS = "SELECT t.node_order FROM main.tb_nodes t"
_ROW_OF_ORDER = (
    f"SELECT first_order FROM main.{param_table.TABLE} WHERE graph_id = ? AND first_order <= ? "
    "ORDER BY first_order DESC LIMIT 1"
)
_ROW_DATA = f"SELECT data FROM main.{param_table.TABLE} WHERE graph_id = ? AND first_order = ?"
_FIRST_ORDERS = (
    f"SELECT first_order FROM main.{param_table.TABLE} WHERE graph_id = ? ORDER BY first_order"
)
_RANK_ROW = (
    f"SELECT data FROM main.{rank_table.TABLE} WHERE graph_id = ? AND first_order <= ? "
    "ORDER BY first_order DESC LIMIT 1"
)
_MANY_ORDERS = 256
_ROWS_KEPT = 16  # decoded gb_params rows kept per open file (256 nodes' parameters each)


def _dict_or_empty(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
