"""Links across ranks: a communication node's peers on other ranks, as they are now.

graphboard's files hold checked links (``gb_peer_links``, or ``gb_links`` in files built
before that view); msprobe's hold only its annotation (``matched_distributed``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphboard.store.graph_views import GraphKey
from graphboard.store.reader.graphs import has_graph
from graphboard.store.reader.opening import VisDb
from graphboard.store.reader.stored import json_or
from graphboard.store.reader.summaries import BY_GRAPH, NodeSummary, summary
from graphboard.store.rule_columns import MSPROBE


@dataclass(slots=True)
class Peer:
    rank: int
    name: str | None  # None: the peer's call was not found
    kind: str | None  # send | receive | send_receive
    stored_precision: str | None  # as msprobe's annotation recorded it
    verdict: str | None  # gb_links: consistent | mismatch | unknown
    reason: str | None
    node: NodeSummary | None  # the peer as it is now; None when not in the file


@dataclass(slots=True)
class PeerLinks:
    communication: str | None
    peers: list[Peer]


def peer_links(db: VisDb, key: GraphKey, name: str, rules: str = MSPROBE) -> PeerLinks | None:
    """A communication node's counterparts on other ranks, as they are now: graphboard's
    ``gb_links`` when the file has them, else msprobe's ``matched_distributed``."""
    row = db.conn.execute(
        "SELECT matched_distributed FROM main.tb_nodes t" + BY_GRAPH + " AND t.node_name = ?",
        (key.step, key.rank, key.side, name),
    ).fetchone()
    if row is None:
        return None
    communication, found = _annotated_peers(json_or(row[0], {}))
    if db.links_source is not None:
        linked = db.conn.execute(
            f"SELECT kind, peer_rank, peer_node, verdict, reason FROM main.{db.links_source} "
            "WHERE data_source = ? AND step = ? AND rank = ? AND node_name = ? "
            "ORDER BY op_index, id",
            (key.side, key.step, key.rank, name),
        ).fetchall()
        if linked:
            stored = {(peer_rank, peer): precision for peer_rank, peer, _k, precision in found}
            return PeerLinks(
                communication or str(linked[0][0]),
                [
                    _peer(
                        db,
                        key,
                        int(peer_rank),
                        peer,
                        str(kind),
                        stored.get((int(peer_rank), peer)),
                        verdict,
                        reason,
                        rules,
                    )
                    for kind, peer_rank, peer, verdict, reason in linked
                    if peer_rank is not None
                ],
            )
    return PeerLinks(
        communication,
        [
            _peer(db, key, peer_rank, peer, kind, precision, None, None, rules)
            for peer_rank, peer, kind, precision in found
        ],
    )


def _peer(
    db: VisDb,
    key: GraphKey,
    rank: int,
    name: str | None,
    kind: str | None,
    stored_precision: str | None,
    verdict: str | None,
    reason: str | None,
    rules: str,
) -> Peer:
    peer_key = GraphKey(key.side, key.step, rank)
    node = summary(db, peer_key, name, rules) if name and has_graph(db, peer_key) else None
    return Peer(rank, name, kind, stored_precision, verdict, reason, node)


def _annotated_peers(
    links: Any,
) -> tuple[str | None, list[tuple[int, str, str | None, str | None]]]:
    """(communication type, [(rank, peer, kind, stored precision)]) from matched_distributed."""
    entries = links if isinstance(links, list) else [links]
    communication: str | None = None
    found: list[tuple[int, str, str | None, str | None]] = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        kind = entry.get("communications_type")
        communication = communication or kind
        infos = entry.get("nodes_info")
        if not isinstance(infos, dict):
            continue
        for rank_text, info in infos.items():
            if isinstance(info, list) and len(info) >= 2 and str(rank_text).isdigit():
                precision = str(info[0]) if info[0] is not None else None
                found.append((int(rank_text), str(info[1]), kind, precision))
    return communication, found
