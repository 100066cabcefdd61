"""SQL of cross-rank links: msprobe's ``tb_nodes.matched_distributed`` plus graphboard's tables.

``graphboard.distributed`` decides what is linked and whether the data agrees; this module only
holds the DDL and the writes. Rows are NamedTuples so they bind straight to ``executemany``.

Tables (all keyed by msprobe's graph coordinates, so a reader joins them to ``tb_nodes`` and
``gb_nodes`` on (data_source, step, rank, node_name)):

* ``gb_links``: one row per (communication node, peer): what msprobe's annotation lists, plus
  the rows msprobe cannot make (a peer rank missing from the dump, or a peer that made fewer
  calls: ``peer_node`` is NULL) and the verdict on the data.
* ``gb_comm_nodes``: one row per communication node: its worst verdict and how many peers it
  reached or missed. This is the per-node flag the API and the viewer show, indexed by verdict;
  "which links disagree" goes through it to ``gb_links`` (indexed by node), which keeps the
  largest table to a single index.
* ``gb_topology``: per side and step, one row per directed rank pair that exchanged data.
* ``gb_topology_ranks``: per side and step, one row per rank seen in the traffic or the dump.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import NamedTuple

LINK_TABLES = """
CREATE TABLE IF NOT EXISTS gb_links (
    id INTEGER PRIMARY KEY,
    data_source TEXT NOT NULL,
    step INTEGER NOT NULL,
    rank INTEGER NOT NULL,
    node_name TEXT NOT NULL,
    op_index INTEGER NOT NULL,     -- inner op of a batch_isend_irecv; 0 otherwise
    api TEXT NOT NULL,             -- send, irecv, all_reduce ... (the inner op for a batch)
    kind TEXT NOT NULL,            -- send | receive | send_receive, as msprobe's communications_type
    group_key TEXT NOT NULL,       -- process-group id, "default", or "p2p"
    occurrence INTEGER NOT NULL,   -- 0-based call number the pairing used
    peer_rank INTEGER,             -- NULL when the call names no usable peer
    peer_node TEXT,                -- NULL when the peer's call was not found
    verdict TEXT NOT NULL,         -- consistent | mismatch | unknown
    reason TEXT                    -- why, for mismatch and unknown
);
CREATE TABLE IF NOT EXISTS gb_comm_nodes (
    data_source TEXT NOT NULL,
    step INTEGER NOT NULL,
    rank INTEGER NOT NULL,
    node_name TEXT NOT NULL,
    api TEXT NOT NULL,
    kind TEXT NOT NULL,
    group_key TEXT NOT NULL,
    linked_peers INTEGER NOT NULL,
    missing_peers INTEGER NOT NULL,
    verdict TEXT NOT NULL,         -- worst over the node's links; unknown if it has none
    reason TEXT,
    PRIMARY KEY (data_source, step, rank, node_name)
);
CREATE TABLE IF NOT EXISTS gb_topology (
    data_source TEXT NOT NULL,
    step INTEGER NOT NULL,
    src_rank INTEGER NOT NULL,     -- the rank whose data travelled
    dst_rank INTEGER NOT NULL,
    ops INTEGER NOT NULL,          -- transfers on this edge, linked or not (the edge weight)
    mismatches INTEGER NOT NULL,
    unknown INTEGER NOT NULL,
    unlinked INTEGER NOT NULL,     -- transfers whose peer call was not found
    apis TEXT NOT NULL,            -- JSON {api: transfers}
    status TEXT NOT NULL,          -- missing | mismatch | unlinked | ok
    PRIMARY KEY (data_source, step, src_rank, dst_rank)
);
CREATE TABLE IF NOT EXISTS gb_topology_ranks (
    data_source TEXT NOT NULL,
    step INTEGER NOT NULL,
    rank INTEGER NOT NULL,
    in_dump INTEGER NOT NULL,      -- 0: a peer named by others, absent from the dump
    out_ops INTEGER NOT NULL,
    in_ops INTEGER NOT NULL,
    peers INTEGER NOT NULL,        -- distinct ranks it exchanged data with
    component INTEGER NOT NULL,    -- weakly connected component, numbered from 0 by lowest rank
    PRIMARY KEY (data_source, step, rank)
);
"""

LINK_INDEXES = """
CREATE INDEX IF NOT EXISTS gb_links_by_node ON gb_links (data_source, step, rank, node_name);
CREATE INDEX IF NOT EXISTS gb_comm_nodes_by_verdict ON gb_comm_nodes (data_source, step, verdict);
"""


# One gb_links row, in column order (data_source, step, rank, node_name, op_index, api, kind,
# group_key, occurrence, peer_rank, peer_node, verdict, reason): a plain tuple, as a large run
# has millions of them and a NamedTuple costs twenty times as much to build.
LinkRow = tuple[
    str, int, int, str, int, str, str, str, int, int | None, str | None, str, str | None
]


class CommNodeRow(NamedTuple):
    data_source: str
    step: int
    rank: int
    node_name: str
    api: str
    kind: str
    group_key: str
    linked_peers: int
    missing_peers: int
    verdict: str
    reason: str | None


class EdgeRow(NamedTuple):
    data_source: str
    step: int
    src_rank: int
    dst_rank: int
    ops: int
    mismatches: int
    unknown: int
    unlinked: int
    apis: str
    status: str


class RankRow(NamedTuple):
    data_source: str
    step: int
    rank: int
    in_dump: int
    out_ops: int
    in_ops: int
    peers: int
    component: int


class Annotation(NamedTuple):
    matched_distributed: str  # msprobe's JSON
    node_id: str  # tb_nodes.id: "{data_source}_{step}_{rank}_{node_name}"


def node_id(data_source: str, step: int, rank: int, node_name: str) -> str:
    """tb_nodes' primary key, which the annotation UPDATE finds without any index."""
    return f"{data_source}_{step}_{rank}_{node_name}"


def create_link_tables(conn: sqlite3.Connection) -> None:
    conn.executescript(LINK_TABLES)


def write_links(
    conn: sqlite3.Connection,
    annotations: Iterable[Annotation],
    links: Iterable[LinkRow],
    comm_nodes: Iterable[CommNodeRow],
    edges: Iterable[EdgeRow],
    ranks: Iterable[RankRow],
) -> None:
    """Everything in one transaction, then the indexes (cheaper after a bulk insert)."""
    create_link_tables(conn)
    conn.execute("BEGIN")
    try:
        conn.executemany("UPDATE tb_nodes SET matched_distributed = ? WHERE id = ?", annotations)
        conn.executemany(
            "INSERT INTO gb_links (data_source, step, rank, node_name, op_index, api, kind,"
            " group_key, occurrence, peer_rank, peer_node, verdict, reason)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            links,
        )
        conn.executemany("INSERT INTO gb_comm_nodes VALUES (?,?,?,?,?,?,?,?,?,?,?)", comm_nodes)
        conn.executemany("INSERT INTO gb_topology VALUES (?,?,?,?,?,?,?,?,?,?)", edges)
        conn.executemany("INSERT INTO gb_topology_ranks VALUES (?,?,?,?,?,?,?,?)", ranks)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    conn.executescript(LINK_INDEXES)
