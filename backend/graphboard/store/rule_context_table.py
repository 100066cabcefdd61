"""gb_rule_context: the graph facts each error-introducing node was judged with under the
dtype-aware rules (compare/dtype_context.py), so the detail panel, the node API and
``graphboard verdict`` explain the stored verdict with the build's own judgement.

One row per target node the build marks as introducing an error (a few per file): JSON of
:class:`RuleContext`. Files without the table (msprobe's, graphboard's before it) explain a
node by its own records, as they did. msprobe's tables are untouched.
"""

from __future__ import annotations

import json
import sqlite3

from graphboard.compare.dtype_context import RuleContext
from graphboard.compare.dtype_graph import GraphVerdicts
from graphboard.graph.model import Graph
from graphboard.store import schema
from graphboard.store.statements import Statements

TABLE = "gb_rule_context"
DDL = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    graph_id TEXT NOT NULL,  -- the target graph's, as tb_nodes.graph_id
    node_name TEXT NOT NULL, -- a node introducing an error under the dtype-aware rules
    data TEXT NOT NULL,      -- JSON of compare/dtype_context.py RuleContext
    PRIMARY KEY (graph_id, node_name)
) WITHOUT ROWID
"""
INSERT = f"INSERT OR REPLACE INTO {TABLE} (graph_id, node_name, data) VALUES (?, ?, ?)"


def write(conn: Statements, graph: Graph) -> None:
    """The rows of ``graph`` (a compare's scored target); nothing, and no table, without any."""
    verdicts = graph.rule_verdicts
    if not isinstance(verdicts, GraphVerdicts) or not verdicts.context:
        return
    conn.execute(DDL)
    conn.executemany(
        INSERT,
        [
            (graph.graph_id, name, json.dumps(context.to_json()))
            for name, context in verdicts.context.items()
        ],
    )


def read(conn: sqlite3.Connection, graph_id: str, name: str) -> RuleContext | None:
    """The facts one node was judged with; None when the file or the node has none."""
    if not schema.has_table(conn, TABLE):  # a file from before the table, or msprobe's
        return None
    row = conn.execute(
        f"SELECT data FROM {TABLE} WHERE graph_id = ? AND node_name = ?", (graph_id, name)
    ).fetchone()
    return RuleContext.from_json(json.loads(row[0])) if row is not None else None
