"""msprobe's ``matched_distributed`` annotation and the per-node flag, from a node's links."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from graphboard.distributed.model import CommNode, Link
from graphboard.distributed.verdicts import CONSISTENT, Consistency, Verdict, mismatch, unknown
from graphboard.store.links import LinkRow

MISSING_INDEX = "Nan"  # msprobe's text for a peer without precision_index / overflow_level


def _index_text(node: CommNode, overflow_check: bool) -> str:
    """The peer's overflow level with -oc, else its precision_index, as msprobe shows it."""
    value: Any = node.overflow if overflow_check else node.precision
    if value is None:
        return MISSING_INDEX
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # SQLite hands msprobe an INTEGER-affinity 0, not 0.0
    return str(value)


@dataclass(slots=True)
class NodeLinks:
    """Everything linked to one communication node: its annotation and flag come from here."""

    # op index -> (communications_type, {peer rank: [index text, peer node]})
    ops: dict[int, tuple[str, dict[str, list[str]]]] = field(default_factory=dict)
    linked: int = 0
    missing: int = 0
    mismatch: str | None = None  # the first disagreement, with the peer it concerns
    consistent: bool = False  # some link could be checked and agreed
    unknown: str | None = None  # why the first unchecked link could not be

    def add(self, verdict: Verdict, peer_rank: int, peer_name: str | None) -> None:
        status = verdict.status
        if status is Consistency.MISMATCH:
            if self.mismatch is None:
                self.mismatch = f"with rank {peer_rank} ({peer_name}): {verdict.reason}"
        elif status is Consistency.CONSISTENT:
            self.consistent = True
        elif self.unknown is None:
            self.unknown = verdict.reason

    def annotation(self) -> str | None:
        """msprobe's JSON (json's default separators, as msprobe writes it): one object, or a
        list of them for a batch_isend_irecv that linked several ops."""
        ops = [
            {"communications_type": kind, "nodes_info": peers}
            for _index, (kind, peers) in sorted(self.ops.items())
        ]
        if not ops:
            return None
        return json.dumps(ops[0] if len(ops) == 1 else ops)

    def verdict(self) -> Verdict:
        """Worst over the links, as ``combine`` would give: mismatch, consistent, unknown."""
        if self.mismatch is not None:
            return mismatch(self.mismatch)
        if self.consistent:
            return CONSISTENT
        return unknown(self.unknown or "not linked")


def per_node(links: list[Link], overflow_check: bool, rows: list[LinkRow]) -> dict[int, NodeLinks]:
    """Fill ``rows`` (one per node and peer); return what each node is linked to, by ``id``."""
    per_node: dict[int, NodeLinks] = {}
    index_text: dict[int, str] = {}  # a node is the peer of up to group-size others
    for link in links:
        kinds = ("send_receive", "send_receive") if link.mutual else ("send", "receive")
        verdict = link.verdict
        status, reason = verdict.status.value, verdict.reason
        ends = ((link.source, link.target, kinds[0]), (link.target, link.source, kinds[1]))
        for here, there, kind in ends:
            node, peer = here.node, there.node
            if node is None:
                continue
            peer_name = peer.name if peer is not None else None
            rows.append(
                (  # a LinkRow, as a plain tuple: there is one per node and peer
                    link.side,
                    link.step,
                    here.rank,
                    node.name,
                    here.op_index,
                    here.api,
                    kind,
                    link.group_key,
                    link.occurrence,
                    there.rank,
                    peer_name,
                    status,
                    reason,
                )
            )
            entry = per_node.get(id(node))
            if entry is None:
                entry = per_node[id(node)] = NodeLinks()
            entry.add(verdict, there.rank, peer_name)
            if peer is None:
                entry.missing += 1
                continue
            entry.linked += 1
            op = entry.ops.get(here.op_index)
            if op is None:
                op = entry.ops[here.op_index] = (kind, {})
            text = index_text.get(id(peer))
            if text is None:
                text = index_text[id(peer)] = _index_text(peer, overflow_check)
            op[1][str(there.rank)] = [text, peer.name]
    return per_node
