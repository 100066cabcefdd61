"""Across ranks: which rank the inf/NaN was born on, and which received it (docs/diagnose.md).

Within one step a NaN reaches the other ranks only through communication. A rank whose first
non-finite value is the output of a communication op with finite inputs received it; a rank
whose first non-finite value appears anywhere else (so its inputs to the first affected
collective were already bad) is where it was born.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from graphboard.diagnose.nonfinite import kinds
from graphboard.diagnose.origin import OUTPUT, Op, Origin, find_origin
from graphboard.dump.records import Role
from graphboard.overflow import expected_anomaly
from graphboard.store.graph_views import GraphKey
from graphboard.store.reader import VisDb, node_data
from graphboard.store.reader import peers as reader_peers

BORN, RECEIVER, CLEAN = "born", "receiver", "clean"


@dataclass(slots=True)
class PeerState:
    rank: int
    node: str | None
    inputs_bad: bool | None  # None: the peer's call is not in the file


@dataclass(slots=True)
class RankState:
    rank: int
    state: str  # born | receiver | clean
    origin: Origin | None
    collective: str | None = None  # the first communication op holding inf/NaN
    collective_inputs_bad: bool | None = None
    peers: list[PeerState] = field(default_factory=list)


def is_communication(name: str) -> bool:
    return name.startswith("Distributed.")


def _bad_inputs(op: Op) -> bool:
    return any(
        kinds(param) and not expected_anomaly(op.name, param)
        for param in op.params
        if param.role is Role.INPUT
    )


def _bad(op: Op) -> bool:
    return any(kinds(param) and not expected_anomaly(op.name, param) for param in op.params)


def rank_state(db: VisDb, key: GraphKey, ops: list[Op]) -> RankState:
    origin = find_origin(ops)
    if origin is None:
        return RankState(key.rank, CLEAN, None)
    first_comm = next((op for op in ops if is_communication(op.name) and _bad(op)), None)
    received = is_communication(origin.node) and origin.kind == OUTPUT
    state = RankState(key.rank, RECEIVER if received else BORN, origin)
    if first_comm is not None:
        state.collective = first_comm.name
        state.collective_inputs_bad = _bad_inputs(first_comm)
        state.peers = _peer_states(db, key, first_comm.name)
    return state


def _peer_states(db: VisDb, key: GraphKey, name: str) -> list[PeerState]:
    links = reader_peers.peer_links(db, key, name)
    if links is None:
        return []
    found: list[PeerState] = []
    for peer in links.peers:
        if peer.name is None or peer.node is None:
            found.append(PeerState(peer.rank, peer.name, None))
            continue
        params = node_data.params(db, GraphKey(key.side, key.step, peer.rank), peer.name) or []
        op = Op(peer.name, params)
        found.append(PeerState(peer.rank, peer.name, _bad_inputs(op)))
    return sorted(found, key=lambda peer: peer.rank)
