"""gb_params: each node's parameters as the builder had them, typed, one row per node.

tb_nodes keeps msprobe's display strings (every value a string) for tb_graph_ascend; what
graphboard itself reads back from its own files (a manual pairing's rescoring, trends, the
viewer's numbers) comes from here, so nothing parses those strings for a file we wrote.

A row's ``data`` is one JSON array per node, one array per parameter holding ``FIELDS`` in
order. orjson writes it (BLOB) unless a value is one JSON cannot hold (NaN, an infinity,
which orjson would write as null, or an integer past 64 bits, which it refuses): such a node
is written by the standard json module, as TEXT (its NaN / Infinity tokens, exact integers),
and read back by it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from graphboard.dump.records import Param, Role
from graphboard.graph.model import Graph
from graphboard.store.statements import Statements

TABLE = "gb_params"
FIELDS = (
    "key",
    "role",
    "type",
    "dtype",
    "shape",
    "max",
    "min",
    "mean",
    "norm",
    "requires_grad",
    "md5",
    "data_name",
    "value",
    "extra",
    "is_tensor",
)
INSERT = f"INSERT INTO {TABLE} (graph_id, node_order, data) VALUES (?, ?, ?)"
_ROLES = {role.value: role for role in Role}
_LARGEST_INT = 2**63 - 1


def _not_json(value: Any) -> bool:
    """Whether ``value`` holds a float JSON cannot write or an integer past 64 bits."""
    kind = value.__class__
    if kind is float:
        return not math.isfinite(value)
    if kind is int:
        return not -_LARGEST_INT - 1 <= value <= 2**64 - 1
    if kind is list or kind is tuple:
        return any(_not_json(item) for item in value)
    if kind is dict:
        return any(_not_json(item) for item in value.values())
    return False


def _needs_standard_json(params: list[Param]) -> bool:
    for param in params:
        for value in (param.max, param.min, param.mean, param.norm):
            if value.__class__ is float and not math.isfinite(value):
                return True
        if param.value is not None and _not_json(param.value):
            return True
        if param.extra is not None and _not_json(param.extra):
            return True
    return False


def encode(params: list[Param]) -> bytes | str:
    """One node's parameters as stored in ``gb_params.data``."""
    rows = [
        (
            p.key,
            p.role,
            p.type,
            p.dtype,
            p.shape,
            p.max,
            p.min,
            p.mean,
            p.norm,
            p.requires_grad,
            p.md5,
            p.data_name,
            p.value,
            p.extra,
            p.is_tensor,
        )
        for p in params
    ]
    if _needs_standard_json(params):
        return json.dumps(rows, ensure_ascii=False)
    return orjson.dumps(rows)


def decode(data: bytes | str) -> list[Param]:
    """The Params a ``gb_params.data`` value holds, field for field as they were written."""
    rows = json.loads(data) if isinstance(data, str) else orjson.loads(data)
    return [
        Param(
            key,
            _ROLES[role],
            kind,
            dtype,
            None if shape is None else tuple(shape),
            maximum,
            minimum,
            mean,
            norm,
            requires_grad,
            md5,
            data_name,
            value,
            extra,
            is_tensor,
        )
        for (
            key,
            role,
            kind,
            dtype,
            shape,
            maximum,
            minimum,
            mean,
            norm,
            requires_grad,
            md5,
            data_name,
            value,
            extra,
            is_tensor,
        ) in rows
    ]


def graph_rows(graph: Graph) -> Iterator[tuple[str, int, bytes | str]]:
    """(graph_id, node_order, data) of each node of ``graph`` with parameters."""
    graph_id = graph.graph_id
    for node in graph.ordered():
        if node.params:
            yield graph_id, node.order, encode(node.params)


def write(conn: Statements, graphs: Iterable[Graph]) -> None:
    """Every node's parameters of ``graphs``, in one batch per graph."""
    for graph in graphs:
        conn.executemany(INSERT, graph_rows(graph))
