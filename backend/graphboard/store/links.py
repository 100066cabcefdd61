"""SQL of cross-rank links: msprobe's ``tb_nodes.matched_distributed`` plus graphboard's tables.

``graphboard.distributed`` decides what is linked and whether the data agrees; this module only
holds the DDL, the compatible view and the writes (bound parameters, one transaction). Rows are
plain tuples, in column order, so they bind straight to ``executemany`` and cost little to build
by the hundred thousand. The package docstring of ``graphboard.distributed`` documents every
column.

Tables (keyed by msprobe's graph coordinates, so a reader joins them to ``tb_nodes`` and
``gb_nodes`` on (data_source, step, rank, node_name)):

* ``gb_comm_calls``: one row per collective call of a process group (the same API, direction
  and call number on every member): members, root, verdict; for a many↔many call also the
  verdict every pair of members shares unless ``gb_call_pairs`` says otherwise.
* ``gb_call_pairs``: the pairs of members of a many↔many call whose verdict is not the call's
  ``pair_verdict``: none when the data agrees, so a healthy call costs one row, not N·(N−1).
* ``gb_links``: one row per (communication node, peer) for point-to-point ops, each op of a
  batch_isend_irecv, and root↔member links of one→many / many→one collectives, including
  peers that could not be found (``peer_node`` NULL).
* ``gb_comm_nodes``: one row per communication node: its worst verdict, how many peers it
  reached or missed, and its collective call (``call_id``).
* ``gb_peer_links`` (a view): gb_links' rows plus one row per (node, peer) of every many↔many
  call, expanded from the three tables above: what gb_links held before calls were stored
  once.
* ``gb_topology`` / ``gb_topology_ranks``: per side and step, rank pairs and ranks.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass, field

LINK_TABLES = """
CREATE TABLE IF NOT EXISTS gb_comm_calls (
    id INTEGER PRIMARY KEY,
    data_source TEXT NOT NULL,
    step INTEGER NOT NULL,
    group_key TEXT NOT NULL,       -- process-group id, or "default"
    api TEXT NOT NULL,
    direction TEXT NOT NULL,       -- forward | backward | '' (counted apart)
    occurrence INTEGER NOT NULL,   -- 0-based call number of this API and direction in the group
    family TEXT NOT NULL,          -- one_to_many | many_to_one | many_to_many
    members TEXT NOT NULL,         -- JSON list of the group's ranks, in group order
    present INTEGER NOT NULL,      -- members whose call was found
    absent TEXT NOT NULL,          -- JSON {"rank": why it has no call} for the other members
    root_rank INTEGER,             -- one/many: the root the members named; NULL otherwise
    verdict TEXT NOT NULL,         -- worst over the call's links: consistent | mismatch | unknown
    reason TEXT,
    pair_verdict TEXT,             -- many↔many: every pair's verdict unless in gb_call_pairs
    pair_reason TEXT
);
CREATE TABLE IF NOT EXISTS gb_call_pairs (
    call_id INTEGER NOT NULL,
    rank_a INTEGER NOT NULL,       -- the lower rank of the pair
    rank_b INTEGER NOT NULL,
    verdict TEXT NOT NULL,
    reason TEXT,
    PRIMARY KEY (call_id, rank_a, rank_b)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS gb_links (
    id INTEGER PRIMARY KEY,
    data_source TEXT NOT NULL,
    step INTEGER NOT NULL,
    rank INTEGER NOT NULL,
    node_name TEXT NOT NULL,
    op_index INTEGER NOT NULL,     -- inner op of a batch_isend_irecv; 0 otherwise
    api TEXT NOT NULL,             -- send, irecv, broadcast ... (the inner op for a batch)
    kind TEXT NOT NULL,            -- send | receive | send_receive, as msprobe's communications_type
    group_key TEXT NOT NULL,       -- process-group id, "default", or "p2p"
    occurrence INTEGER NOT NULL,   -- 0-based call number the pairing used
    peer_rank INTEGER,             -- NULL when the call names no usable peer
    peer_node TEXT,                -- NULL when the peer's call was not found
    verdict TEXT NOT NULL,         -- consistent | mismatch | unknown
    reason TEXT,                   -- why, for mismatch and unknown
    call_id INTEGER                -- gb_comm_calls.id of a collective; NULL for point-to-point
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
    call_id INTEGER                -- gb_comm_calls.id of a collective; NULL for point-to-point
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
-- Every (node, peer) link as one row, as gb_links held them all before many↔many calls were
-- stored once: gb_links, then each present peer of a many↔many call (id is the peer rank, so
-- ORDER BY op_index, id lists a node's peers by rank), then each member without the call.
CREATE VIEW IF NOT EXISTS gb_peer_links AS
SELECT id, data_source, step, rank, node_name, op_index, api, kind, group_key, occurrence,
       peer_rank, peer_node, verdict, reason, call_id
FROM gb_links
UNION ALL
SELECT peer.rank, node.data_source, node.step, node.rank, node.node_name, 0, c.api,
       'send_receive', c.group_key, c.occurrence, peer.rank, peer.node_name,
       CASE WHEN x.call_id IS NULL THEN c.pair_verdict ELSE x.verdict END,
       CASE WHEN x.call_id IS NULL THEN c.pair_reason ELSE x.reason END,
       c.id
FROM gb_comm_nodes AS node
JOIN gb_comm_calls AS c ON c.id = node.call_id AND c.family = 'many_to_many'
JOIN gb_comm_nodes AS peer ON peer.call_id = node.call_id AND peer.rank != node.rank
LEFT JOIN gb_call_pairs AS x ON x.call_id = node.call_id
    AND x.rank_a = min(node.rank, peer.rank) AND x.rank_b = max(node.rank, peer.rank)
UNION ALL
SELECT CAST(absent.key AS INTEGER), node.data_source, node.step, node.rank, node.node_name, 0,
       c.api, 'send_receive', c.group_key, c.occurrence, CAST(absent.key AS INTEGER), NULL,
       'unknown', absent.value, c.id
FROM gb_comm_nodes AS node
JOIN gb_comm_calls AS c ON c.id = node.call_id AND c.family = 'many_to_many'
JOIN json_each(c.absent) AS absent;
"""

# Built after the bulk insert, which is cheaper than keeping them up to date row by row: that
# is why gb_comm_nodes' key is a unique index rather than a PRIMARY KEY.
LINK_INDEXES = """
CREATE UNIQUE INDEX IF NOT EXISTS gb_comm_nodes_by_node
    ON gb_comm_nodes (data_source, step, rank, node_name);
CREATE INDEX IF NOT EXISTS gb_links_by_node ON gb_links (data_source, step, rank, node_name);
CREATE INDEX IF NOT EXISTS gb_comm_nodes_by_verdict ON gb_comm_nodes (data_source, step, verdict);
CREATE INDEX IF NOT EXISTS gb_comm_nodes_by_call ON gb_comm_nodes (call_id, rank);
"""


# One gb_links row, in column order (data_source, step, rank, node_name, op_index, api, kind,
# group_key, occurrence, peer_rank, peer_node, verdict, reason, call_id): a plain tuple, as a
# large run has hundreds of thousands and a NamedTuple costs twenty times as much to build.
LinkRow = tuple[
    str, int, int, str, int, str, str, str, int, int | None, str | None, str, str | None, int | None
]
# One gb_comm_calls row, in column order.
CallRow = tuple[
    int,  # id
    str,  # data_source
    int,  # step
    str,  # group_key
    str,  # api
    str,  # direction
    int,  # occurrence
    str,  # family
    str,  # members (JSON)
    int,  # present
    str,  # absent (JSON)
    int | None,  # root_rank
    str,  # verdict
    str | None,  # reason
    str | None,  # pair_verdict
    str | None,  # pair_reason
]
# One gb_call_pairs row: (call_id, rank_a, rank_b, verdict, reason).
PairRow = tuple[int, int, int, str, str | None]


# One gb_comm_nodes row, in column order (data_source, step, rank, node_name, api, kind,
# group_key, linked_peers, missing_peers, verdict, reason, call_id): one per node.
CommNodeRow = tuple[str, int, int, str, str, str, str, int, int, str, str | None, int | None]
COMM_NODE_LINKED, COMM_NODE_VERDICT = 7, 9  # positions of linked_peers and verdict


# One gb_topology row: (data_source, step, src_rank, dst_rank, ops, mismatches, unknown,
# unlinked, apis, status); a plain tuple, as a world group has a million of them.
EdgeRow = tuple[str, int, int, int, int, int, int, int, str, str]
# One gb_topology_ranks row: (data_source, step, rank, in_dump, out_ops, in_ops, peers,
# component).
RankRow = tuple[str, int, int, int, int, int, int, int]


# (matched_distributed: msprobe's JSON, node id: tb_nodes.id) for the annotation UPDATE
Annotation = tuple[str, str]


@dataclass(slots=True)
class LinkTables:
    """Every row ``write_links`` writes, gathered by the linker."""

    annotations: list[Annotation] = field(default_factory=list)
    calls: list[CallRow] = field(default_factory=list)
    pairs: list[PairRow] = field(default_factory=list)
    links: list[LinkRow] = field(default_factory=list)
    comm_nodes: list[CommNodeRow] = field(default_factory=list)
    edges: Iterable[EdgeRow] = ()
    ranks: Iterable[RankRow] = ()


def node_id(data_source: str, step: int, rank: int, node_name: str) -> str:
    """tb_nodes' primary key, which the annotation UPDATE finds without any index."""
    return f"{data_source}_{step}_{rank}_{node_name}"


def create_link_tables(conn: sqlite3.Connection) -> None:
    conn.executescript(LINK_TABLES)


def write_links(conn: sqlite3.Connection, tables: LinkTables) -> None:
    """Everything in one transaction, then the indexes (cheaper after a bulk insert)."""
    create_link_tables(conn)
    conn.execute("BEGIN")
    try:
        conn.executemany(
            "UPDATE tb_nodes SET matched_distributed = ? WHERE id = ?", tables.annotations
        )
        conn.executemany(
            "INSERT INTO gb_comm_calls VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", tables.calls
        )
        conn.executemany("INSERT INTO gb_call_pairs VALUES (?,?,?,?,?)", tables.pairs)
        conn.executemany(
            "INSERT INTO gb_links (data_source, step, rank, node_name, op_index, api, kind,"
            " group_key, occurrence, peer_rank, peer_node, verdict, reason, call_id)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            tables.links,
        )
        conn.executemany(
            "INSERT INTO gb_comm_nodes VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", tables.comm_nodes
        )
        conn.executemany("INSERT INTO gb_topology VALUES (?,?,?,?,?,?,?,?,?,?)", tables.edges)
        conn.executemany("INSERT INTO gb_topology_ranks VALUES (?,?,?,?,?,?,?,?)", tables.ranks)
    except BaseException:
        # SQLite may have rolled back already (a full disk does): a failing ROLLBACK must
        # not replace the error that says why
        if conn.in_transaction:
            with suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    conn.executescript(LINK_INDEXES)
