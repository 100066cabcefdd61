"""A collective's dtype-aware verdict from its group's inputs on every rank, once linked.

Each (step, rank) is judged alone (compare/dtype_graph.py): there, a collective's output
beyond the band its own rank's inputs explain is a warning, the rest being other ranks' data
(docs/dtype-aware.md §3.4). Once the linker has paired the calls across ranks, the inputs of
every source rank are known, target and golden: this works the band from them
(compare/dtype_peers.py), makes such a warning a pass or an introduced error, and writes the
new verdict into the target graph's dtype-aware columns (store/rule_columns.py). The sums it
used are kept in gb_meta (``peer_inputs``) so the detail panel explains the same verdict.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import numpy as np

from graphboard.compare.dtype_aware import (
    MSG_PEERS_BEYOND,
    MSG_PEERS_WITHIN,
    NodeVerdict,
    Verdict,
    takes_other_ranks,
)
from graphboard.compare.dtype_explain import explain_node
from graphboard.compare.dtype_peers import PeerInputs, peer_inputs
from graphboard.compare.result import DataMode, Level
from graphboard.distributed.calls import OUTPUT, Call
from graphboard.distributed.context import PairingContext
from graphboard.distributed.model import CommNode
from graphboard.graph.model import API_COLLECTION_PREFIX, GOLDEN_SIDE, TARGET_SIDE
from graphboard.store import arrays, rule_columns

META_KEY = "peer_inputs"  # gb_meta: {graph_id: {node name: PeerInputs as a list}}
_BY_PEERS = (MSG_PEERS_WITHIN, MSG_PEERS_BEYOND)

Sources = dict[int, list[CommNode]]  # id(target CommNode) -> the calls its output holds


def sources_of(ctx: PairingContext, calls: Sequence[Call]) -> Sources:
    """Per target call that takes other ranks' data, every call its output is made of: the
    present members of its group call (when none is missing), or the sender(s) linked to a
    received tensor. Calls with a source that may be missing from the dump are left out: a
    call without a ``group`` argument (gloo dumps carry none) runs on the default group, which
    the linker takes to be the ranks in the build; that is the whole group only where more
    than one rank is, no call names a rank outside them, and a gathered list holds one tensor
    per rank."""
    incomplete = {(side, step) for side, step, _rank in ctx.orphaned}
    senders: dict[int, list[CommNode | None]] = {}
    for link in ctx.links:
        if link.side == TARGET_SIDE and link.target.node is not None:
            senders.setdefault(id(link.target.node), []).append(link.source.node)
    found: Sources = {}
    for call in calls:
        node = call.node
        if node.side != TARGET_SIDE or not takes_other_ranks(node.name):
            continue
        if (node.side, node.step) in incomplete:
            continue
        if call.call_id is not None:
            group = ctx.group_calls[call.call_id - 1]
            gathered = len(call.tensor_list(OUTPUT, 0))
            if (
                not group.absent
                and len(group.present) > 1
                and gathered in (0, 1, len(group.present))
            ):
                found[id(node)] = [group.instance.calls[rank].node for rank in group.present]
        else:
            linked = senders.get(id(node))
            if linked and all(sender is not None for sender in linked):
                found[id(node)] = [sender for sender in linked if sender is not None]
    return found


def judge_with_peers(
    conn: sqlite3.Connection, nodes: Sequence[CommNode], sources: Sources, mode: DataMode
) -> dict[str, dict[str, list[float]]]:
    """Judge again every target collective left a warning for want of its peers' inputs,
    write the verdicts that change, and return what to keep in gb_meta[META_KEY]."""
    golden = {(n.step, n.rank, n.name): n for n in nodes if n.side == GOLDEN_SIDE}
    kept: dict[str, dict[str, list[float]]] = {}
    changed: dict[str, list[tuple[int, NodeVerdict]]] = {}
    for node in nodes:
        found_sources = sources.get(id(node))
        partner = golden.get((node.step, node.rank, node.name))
        if found_sources is None or partner is None:
            continue
        pairs = []
        for source in found_sources:
            source_golden = golden.get((source.step, source.rank, source.name))
            if source_golden is None:
                break
            pairs.append((source.params, source_golden.params))
        else:
            inputs = peer_inputs(pairs)
            if inputs is None:
                continue
            verdict = explain_node(node.name, node.params, partner.params, mode, peers=inputs)
            if verdict is None or not any(p.why in _BY_PEERS for p in verdict.params):
                continue
            graph_id = f"{node.side}_{node.step}_{node.rank}"
            kept.setdefault(graph_id, {})[node.name] = list(inputs)  # the panel's band
            deciding = verdict.deciding
            if verdict.introduced and (deciding is None or deciding.why != MSG_PEERS_BEYOND):
                # judged again without the graph's facts (dtype_explain.py): an error of
                # another parameter is not this stage's to make
                continue
            changed.setdefault(graph_id, []).append((node.order, verdict))
    for graph_id, verdicts in changed.items():
        _write(conn, graph_id, verdicts)
    return kept


def stored_peers(meta: dict[str, object], graph_id: str, name: str) -> PeerInputs | None:
    """The sums a node's verdict was judged with (gb_meta[META_KEY]), or None."""
    by_graph = meta.get(META_KEY)
    if not isinstance(by_graph, dict):
        return None
    found = by_graph.get(graph_id, {}).get(name)
    return PeerInputs(*found) if isinstance(found, list) and len(found) == 5 else None


def _write(
    conn: sqlite3.Connection, graph_id: str, verdicts: list[tuple[int, NodeVerdict]]
) -> None:
    stored = arrays.read(conn, graph_id)
    if stored is None or not rule_columns.has_rule_columns(stored.columns):
        return
    columns = stored.columns
    level = columns[rule_columns.LEVEL].copy()
    introduced = columns[rule_columns.INTRODUCED].copy()
    excess = columns[rule_columns.EXCESS].copy()
    parent = columns["parent"]
    names = stored.names
    for order, verdict in verdicts:
        if level[order] != int(Verdict.WARNING):  # judged otherwise on its own rank: kept
            continue
        level[order] = int(verdict.verdict)
        excess[order] = verdict.excess
        if not verdict.introduced:
            continue
        introduced[order] = int(Level.ERROR)
        # an error introduced inside a module is not the module's own (dtype_graph.py)
        above = int(parent[order])
        while above >= 0:
            if introduced[above]:
                introduced[above] = 0
                level[above] = int(Verdict.WARNING)
            above = int(parent[above])
    # a collection of calls takes its worst child's verdict (dtype_graph.py)
    for order, _verdict in verdicts:
        above = int(parent[order])
        if above >= 0 and names[above].startswith(API_COLLECTION_PREFIX):
            children = np.flatnonzero(parent == above)
            level[above] = max(int(level[child]) for child in children)
    conn.executemany(
        "UPDATE gb_arrays SET data = ? WHERE graph_id = ? AND name = ?",
        [
            (level.tobytes(), graph_id, rule_columns.LEVEL),
            (introduced.tobytes(), graph_id, rule_columns.INTRODUCED),
            (excess.tobytes(), graph_id, rule_columns.EXCESS),
        ],
    )
