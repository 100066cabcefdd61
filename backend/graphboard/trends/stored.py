"""What a heatmap reads from a .vis.db: its module nodes and the stored dicts of a few.

Through :class:`~graphboard.store.reader.VisDb`'s connection and per-graph columns, as the
reader itself does: the module nodes of a graph come from ``tb_nodes`` (msprobe's index on
(step, rank, data_source, node_order); ``node_type`` 0 is a module in both tools' files),
their depth and level from the graph's columns (manual matches applied), and the parameter
dicts only for the nodes a heatmap shows, with a user's rescored pairing taking the place
of the build's dicts, as the node view shows it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import orjson

from graphboard.store.reader import GraphKey, VisDb
from graphboard.trends.modules import ModuleNode, split_module_name

_CHUNK = 500  # under SQLite's bound-parameter limit


def module_nodes(db: VisDb, key: GraphKey) -> list[ModuleNode]:
    """Every module node of the graph, in execution order."""
    return _module_nodes(
        db,
        key,
        db.conn.execute(
            "SELECT node_order, node_name FROM main.tb_nodes "
            "WHERE step = ? AND rank = ? AND data_source = ? AND node_type = '0'",
            (key.step, key.rank, key.side),
        ),
    )


def calls_of(db: VisDb, key: GraphKey, module: str) -> list[ModuleNode]:
    """The nodes of one module (every pass and call), found by name prefix on msprobe's
    (step, rank, data_source, node_name) index: no scan of the graph."""
    found = _module_nodes(
        db,
        key,
        db.conn.execute(
            "SELECT node_order, node_name FROM main.tb_nodes WHERE step = ? AND rank = ? "
            "AND data_source = ? AND node_name >= ? AND node_name < ? AND node_type = '0'",
            # every name starting "<module>." sorts in [module + ".", module + "/")
            (key.step, key.rank, key.side, module + ".", module + "/"),
        ),
    )
    return [node for node in found if node.module == module]


def _module_nodes(db: VisDb, key: GraphKey, rows: Iterable[Sequence[Any]]) -> list[ModuleNode]:
    columns = db.view(key).columns
    depth, parent, exec_order = columns["depth"], columns["parent"], columns["exec_order"]
    found: list[ModuleNode] = []
    for order, name in rows:
        split = split_module_name(str(name))
        if split is None or not 0 <= int(order) < len(depth):
            continue
        order = int(order)
        found.append(
            ModuleNode(
                order,
                str(name),
                *split,
                depth=int(depth[order]),
                parent=int(parent[order]),
                exec_order=int(exec_order[order]),
            )
        )
    found.sort(key=lambda node: node.exec_order)
    return found


def stored_dicts(
    db: VisDb, key: GraphKey, orders: Sequence[int], column: str
) -> dict[int, dict[str, Any]]:
    """``input_data`` or ``output_data`` (``column``) of the given nodes, by node_order."""
    assert column in ("input_data", "output_data")  # the only names spliced into SQL
    wanted = sorted({int(order) for order in orders})
    texts: dict[int, str | None] = {
        int(order): text
        for order, text in _rows_in(db, key, f"node_order, {column}", "node_order", wanted)
    }
    side = 0 if column == "input_data" else 1
    for order, overlaid in db.manual_data(key).items():
        if order in texts and overlaid[side]:
            texts[order] = overlaid[side]
    return {order: _json_dict(text) for order, text in texts.items()}


def _json_dict(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def orders_of_names(db: VisDb, key: GraphKey, names: Sequence[str]) -> dict[str, int]:
    """node_order of each named node the graph has (msprobe's name index)."""
    return {
        str(name): int(order)
        for name, order in _rows_in(
            db, key, "node_name, node_order", "node_name", sorted(set(names))
        )
    }


def _rows_in(
    db: VisDb, key: GraphKey, columns: str, by: str, values: Sequence[object]
) -> Iterator[Sequence[Any]]:
    """``columns`` of the graph's rows whose ``by`` is one of ``values``, a query per chunk
    under SQLite's bound-parameter limit (``columns`` and ``by`` are this module's own)."""
    for start in range(0, len(values), _CHUNK):
        chunk = values[start : start + _CHUNK]
        marks = ", ".join("?" * len(chunk))
        yield from db.conn.execute(
            f"SELECT {columns} FROM main.tb_nodes WHERE step = ? AND rank = ? "
            f"AND data_source = ? AND {by} IN ({marks})",
            (key.step, key.rank, key.side, *chunk),
        )
