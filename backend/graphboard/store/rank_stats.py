"""gb_rank_stats: each rank's own statistics of the parameters a parallel merge merged.

A TP-merged parameter holds the merged Max, Min, Mean and Norm (merge/stats.py); the merge
keeps each rank's own beside them (``NodeMerge.ranks``, graph/node_merge.py), and this table stores
them so the node view can show which rank departs (the usual culprit is one TP rank).

Rows are gb_params' (store/param_table.py): up to ``CHUNK`` consecutive merged nodes a row,
keyed by the first one's node_order, the data one JSON array of columns in gb_params'
encoding: the nodes' orders, their merged-parameter counts, the parameters' keys, their rank
counts, then the ranks and their Max, Min, Mean and Norm, one entry per (parameter, rank).

The table exists only in a file with merged nodes: an unmerged build has none (not an empty
one), and the reader treats a file without it, older files included, as holding no breakdown.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import accumulate
from typing import Any

from graphboard.graph.model import Graph
from graphboard.graph.node_merge import RankStats
from graphboard.store.param_table import CHUNK, dump_columns, has_non_finite, load_columns
from graphboard.store.statements import Statements

TABLE = "gb_rank_stats"
DDL = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    graph_id TEXT NOT NULL,        -- "{{data_source}}_{{step}}_{{rank}}", as tb_nodes.graph_id
    first_order INTEGER NOT NULL,  -- tb_nodes.node_order of the row's first node
    data BLOB NOT NULL,            -- JSON columns of its nodes' per-rank statistics
    PRIMARY KEY (graph_id, first_order)
) WITHOUT ROWID
"""
INSERT = f"INSERT INTO {TABLE} (graph_id, first_order, data) VALUES (?, ?, ?)"

NodeRanks = dict[str, list[RankStats]]  # a node's parameter key -> each rank's statistics


def encode(nodes: list[tuple[int, NodeRanks]]) -> bytes | str:
    """The ``data`` of one row: (node_order, per-rank statistics) of its nodes."""
    keys = [key for _order, ranks in nodes for key in ranks]
    entries = [entry for _order, ranks in nodes for stats in ranks.values() for entry in stats]
    statistics = [[entry[field] for entry in entries] for field in range(1, 5)]
    columns: list[list[Any]] = [
        [order for order, _ranks in nodes],
        [len(ranks) for _order, ranks in nodes],
        keys,
        [len(stats) for _order, ranks in nodes for stats in ranks.values()],
        [entry[0] for entry in entries],
        *statistics,
    ]
    return dump_columns(columns, any(has_non_finite(column) for column in statistics))


def decode(data: bytes | str) -> dict[int, NodeRanks]:
    """The per-rank statistics a row holds, by node_order, as ``encode`` was given them."""
    orders, counts, keys, rank_counts, ranks, *statistics = load_columns(data)
    entries: list[RankStats] = list(zip(ranks, *statistics, strict=True))
    by_key: list[tuple[str, list[RankStats]]] = []
    start = 0
    for key, end in zip(keys, accumulate(rank_counts), strict=True):
        by_key.append((str(key), entries[start:end]))
        start = end
    found: dict[int, NodeRanks] = {}
    start = 0
    for order, end in zip(orders, accumulate(counts), strict=True):
        found[int(order)] = dict(by_key[start:end])
        start = end
    return found


def graph_rows(graph: Graph) -> Iterator[tuple[str, int, bytes | str]]:
    """(graph_id, first_order, data) of each row of ``graph``'s merged nodes."""
    nodes = [
        (node.order, node.merge.ranks)
        for node in graph.ordered()
        if node.merge is not None and node.merge.ranks
    ]
    for start in range(0, len(nodes), CHUNK):
        chunk = nodes[start : start + CHUNK]
        yield graph.graph_id, chunk[0][0], encode(chunk)


def write(conn: Statements, graphs: Iterable[Graph]) -> None:
    """The per-rank statistics of ``graphs``' merged nodes; the table only if there are any."""
    rows = [row for graph in graphs for row in graph_rows(graph)]
    if rows:
        conn.execute(DDL)
        conn.executemany(INSERT, rows)
