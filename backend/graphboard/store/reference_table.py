"""gb_reference: a noise reference's (-nr) statistics and measured noise per target node.

One row per target node the reference has (matched by name; the reference's own node was
matched to the golden one named in the row): the reference's tensor parameters with their
dtype, shape, Max, Min, Mean and Norm, and ``d_R``, their measured difference from the golden
(compare/noise_reference.py), in gb_params' encoding (store/param_table.py): NaN and
infinities kept.

The table exists only in a compare built with -nr: other files (msprobe's, older ones) have
none, and the reader treats them as holding no reference. msprobe's tables are untouched, so
tb_graph_ascend opens the file as ever.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from graphboard.compare.dtype_graph import GraphVerdicts
from graphboard.compare.noise_reference import NodeNoise, ReferenceNode
from graphboard.dump.records import Param, Role
from graphboard.graph.model import Graph
from graphboard.store import schema
from graphboard.store.param_table import dump_columns, has_non_finite, load_columns
from graphboard.store.statements import Statements

TABLE = "gb_reference"
DDL = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    graph_id TEXT NOT NULL,  -- the target graph's, as tb_nodes.graph_id
    node_name TEXT NOT NULL, -- the target node (the reference's has the same name)
    data BLOB NOT NULL,      -- JSON [[golden node], [[key, dtype, shape, max, min, mean,
                             -- norm, d_R] ...], [{{argument key: value}}]] (param_table)
    PRIMARY KEY (graph_id, node_name)
) WITHOUT ROWID
"""
INSERT = f"INSERT INTO {TABLE} (graph_id, node_name, data) VALUES (?, ?, ?)"


@dataclass(frozen=True, slots=True)
class StoredReferenceParam:
    key: str
    dtype: str | None
    shape: list[Any] | None
    max: Any
    min: Any
    mean: Any
    norm: Any
    noise: float | None  # d_R

    def param(self) -> Param:
        """The reference's tensor as the rules read it (its statistics and shape)."""
        shape = tuple(self.shape) if self.shape is not None else None
        return Param(
            self.key,
            Role.INPUT,
            "torch.Tensor",
            self.dtype,
            shape,
            self.max,
            self.min,
            self.mean,
            self.norm,
            is_tensor=True,
        )


@dataclass(frozen=True, slots=True)
class StoredReference:
    golden: str
    params: dict[str, StoredReferenceParam]
    arguments: dict[str, object]

    def noise(self) -> NodeNoise:
        differences = {key: p.noise for key, p in self.params.items() if p.noise is not None}
        return NodeNoise(
            differences, self.arguments, {k: p.param() for k, p in self.params.items()}
        )


def encode(node: ReferenceNode) -> bytes | str:
    """A row's data in gb_params' encoding (param_table.dump_columns): orjson's BLOB, or
    the json module's TEXT where a statistic is NaN or infinite."""
    params = [
        [
            key,
            found.param.dtype,
            list(found.param.shape) if found.param.shape is not None else None,
            found.param.max,
            found.param.min,
            found.param.mean,
            found.param.norm,
            found.noise,
        ]
        for key, found in node.params.items()
    ]
    statistics = [value for row in params for value in row[3:]]
    return dump_columns([[node.golden], params, [node.arguments]], has_non_finite(statistics))


def decode(data: bytes | str) -> StoredReference:
    (golden,), params, (arguments,) = load_columns(data)
    return StoredReference(
        str(golden),
        {str(row[0]): StoredReferenceParam(*row) for row in params},
        dict(arguments),
    )


def write(conn: Statements, graph: Graph) -> None:
    """The reference's rows for ``graph`` (a compare's target scored with -nr); nothing, and
    no table, otherwise."""
    verdicts = graph.rule_verdicts
    if not isinstance(verdicts, GraphVerdicts) or verdicts.reference is None:
        return
    conn.execute(DDL)
    conn.executemany(
        INSERT,
        [
            (graph.graph_id, name, encode(node))
            for name, node in verdicts.reference.nodes.items()
            if name in graph.nodes
        ],
    )


def has_table(conn: sqlite3.Connection) -> bool:
    return schema.has_table(conn, TABLE)


def reference_noise(conn: sqlite3.Connection, graph_id: str, name: str) -> NodeNoise | None:
    """A node's measured noise per parameter key, as the build judged it; None without one."""
    found = read(conn, graph_id, name)
    return found.noise() if found is not None else None


def read(conn: sqlite3.Connection, graph_id: str, name: str) -> StoredReference | None:
    """The reference of one target node; None when the file or the node has none."""
    if not has_table(conn):
        return None
    row = conn.execute(
        f"SELECT data FROM {TABLE} WHERE graph_id = ? AND node_name = ?", (graph_id, name)
    ).fetchone()
    return decode(row[0]) if row is not None else None
