"""gb_params: each node's parameters as the builder had them, typed.

tb_nodes keeps msprobe's display strings (every value a string) for tb_graph_ascend; what
graphboard itself reads back from its own files (a manual pairing's rescoring, trends, the
viewer's numbers) comes from here, so nothing parses those strings for a file we wrote.

A row holds the parameters of up to ``CHUNK`` consecutive nodes (in node order, those with
parameters), keyed by the first one's node_order, as one JSON array of columns: the nodes'
orders, their parameter counts, then each of ``FIELDS`` over all their parameters. Columns
and a few hundred rows a graph, not a row and an array per parameter, are what keep the
table cheap to write (bench/results/param_table.md); reading one node decodes one row.

orjson writes a row (BLOB) unless a value is one JSON cannot hold (NaN, an infinity, which
orjson would write as null, or an integer past 64 bits, which it refuses): such a row is
written by the standard json module, as TEXT (its NaN / Infinity tokens, exact integers),
and read back by it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import orjson

from graphboard.dump import param_columns
from graphboard.dump.records import Param
from graphboard.graph.model import Graph
from graphboard.store.statements import Statements

TABLE = "gb_params"
FIELDS = param_columns.FIELDS  # the order of the columns after orders and counts
INSERT = f"INSERT INTO {TABLE} (graph_id, first_order, data) VALUES (?, ?, ?)"
CHUNK = 256  # nodes a row: a node's read decodes ~0.1 MB at most, a graph writes few rows
_CONTAINERS = (list, tuple, dict)
_VALUE, _EXTRA = FIELDS.index("value"), FIELDS.index("extra")
_STATISTICS = [FIELDS.index(name) for name in ("max", "min", "mean", "norm")]


def _not_json(value: Any) -> bool:
    """Whether ``value`` holds a float JSON cannot write (NaN, an infinity)."""
    kind = value.__class__
    if kind is float:
        return not math.isfinite(value)
    if kind is list or kind is tuple:
        return any(_not_json(item) for item in value)
    if kind is dict:
        return any(_not_json(item) for item in value.values())
    return False


def has_non_finite(column: list[Any]) -> bool:
    """Whether a column of numbers (and other values) holds NaN or an infinity: the floats'
    exact sum is finite unless one is. fsum raises instead of returning when the column holds
    both infinities (ValueError: an overflowing fp16 run's Max and Min) or its partial sums
    overflow (OverflowError); either way the column takes the exact path."""
    floats = [value for value in column if value.__class__ is float]
    try:
        return not math.isfinite(math.fsum(floats))
    except (OverflowError, ValueError):
        return True


def encode(nodes: Sequence[tuple[int, list[Param]]]) -> bytes | str:
    """The ``data`` of one row: (node_order, parameters) of its nodes."""
    params = [param for _order, node_params in nodes for param in node_params]
    fields = param_columns.fields_of(params)
    values, extras = fields[_VALUE], fields[_EXTRA]
    columns: list[list[Any]] = [
        [order for order, _params in nodes],
        [len(node_params) for _order, node_params in nodes],
        *fields,
    ]
    exact = (
        any(has_non_finite(fields[index]) for index in _STATISTICS)
        or has_non_finite(values)
        or any(_not_json(value) for value in values if value.__class__ in _CONTAINERS)
        or any(_not_json(extra) for extra in extras if extra is not None)
    )
    return dump_columns(columns, exact)


def dump_columns(columns: list[list[Any]], exact: bool) -> bytes | str:
    """A row's columns as orjson's BLOB, or as the standard json module's TEXT when ``exact``
    (a NaN or an infinity in them) or orjson refuses a value (an integer past 64 bits); the
    encoding of gb_params, shared by the other columnar gb_* tables (store/rank_stats.py)."""
    if exact:
        return json.dumps(columns, ensure_ascii=False)
    try:
        return orjson.dumps(columns)
    except orjson.JSONEncodeError:  # an integer past 64 bits
        return json.dumps(columns, ensure_ascii=False)


def load_columns(data: bytes | str) -> list[Any]:
    """The columns ``dump_columns`` wrote."""
    loaded: list[Any] = json.loads(data) if isinstance(data, str) else orjson.loads(data)
    return loaded


def decode(data: bytes | str) -> dict[int, list[Param]]:
    """The parameters a row holds, by node_order, field for field as they were written."""
    orders, counts, *fields = load_columns(data)
    params = param_columns.params_of(fields)
    found: dict[int, list[Param]] = {}
    start = 0
    for order, count in zip(orders, counts, strict=True):
        found[order] = params[start : start + count]
        start += count
    return found


def graph_rows(graph: Graph) -> Iterator[tuple[str, int, bytes | str]]:
    """(graph_id, first_order, data) of each row of ``graph``'s nodes with parameters."""
    nodes = [(node.order, node.params) for node in graph.ordered() if node.params]
    for start in range(0, len(nodes), CHUNK):
        chunk = nodes[start : start + CHUNK]
        yield graph.graph_id, chunk[0][0], encode(chunk)


def write(conn: Statements, graphs: Iterable[Graph]) -> None:
    """Every node's parameters of ``graphs``, in one batch per graph."""
    for graph in graphs:
        conn.executemany(INSERT, graph_rows(graph))
