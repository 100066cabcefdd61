"""msprobe's ``matched_distributed`` annotation and the per-node flag, from a node's links.

msprobe's JSON, with json's default separators as msprobe writes it::

    {"communications_type": "send" | "receive" | "send_receive",
     "nodes_info": {"<peer rank>": ["<peer precision_index, or overflow_level with -oc>",
                                    "<peer node>"]}}

or a list of those for a batch_isend_irecv that linked several ops. A many↔many call lists
every other member on every member: N−1 entries on each of N nodes. Those are cut from one
text per call (``CallAnnotations``) rather than serialised N times.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from json.encoder import encode_basestring_ascii
from typing import Any

from graphboard.distributed.model import CommNode, Link
from graphboard.distributed.verdicts import (
    CONSISTENT,
    CONSISTENT_STATUS,
    MISMATCH_STATUS,
    STATUS_TEXT,
    Verdict,
    mismatch,
    unknown,
)
from graphboard.store.links import LinkRow

MISSING_INDEX = "Nan"  # msprobe's text for a peer without precision_index / overflow_level
_SEPARATOR = ", "  # between items, as json.dumps writes them

# json.dumps' own string escaping (C): texts assembled from escaped pieces equal json.dumps'
_escape = encode_basestring_ascii


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

    # op index -> (communications_type, {peer rank: its nodes_info value, as JSON text})
    ops: dict[int, tuple[str, dict[int, str]]] = field(default_factory=dict)
    linked: int = 0
    missing: int = 0
    mismatch: str | None = None  # the first disagreement, with the peer it concerns
    consistent: bool = False  # some link could be checked and agreed
    unknown: str | None = None  # why the first unchecked link could not be

    def add(self, verdict: Verdict, peer_rank: int, peer_name: str | None) -> None:
        status = verdict.status
        if status is MISMATCH_STATUS:
            if self.mismatch is None:
                self.mismatch = f"with rank {peer_rank} ({peer_name}): {verdict.reason}"
        elif status is CONSISTENT_STATUS:
            self.consistent = True
        elif self.unknown is None:
            self.unknown = verdict.reason

    def annotation(self) -> str | None:
        """msprobe's JSON (json's default separators, as msprobe writes it): one object, or a
        list of them for a batch_isend_irecv that linked several ops."""
        if len(self.ops) == 1:  # the usual case, a send or a receive: no sorting, no list
            ((kind, peers),) = self.ops.values()
            return _annotation(
                kind, _SEPARATOR.join(f'"{rank}": {info}' for rank, info in peers.items())
            )
        ops = [
            _annotation(kind, _SEPARATOR.join(f'"{rank}": {info}' for rank, info in peers.items()))
            for _index, (kind, peers) in sorted(self.ops.items())
        ]
        if not ops:
            return None
        return ops[0] if len(ops) == 1 else f"[{_SEPARATOR.join(ops)}]"

    def verdict(self) -> Verdict:
        """Worst over the links, as ``combine`` would give: mismatch, consistent, unknown."""
        if self.mismatch is not None:
            return mismatch(self.mismatch)
        if self.consistent:
            return CONSISTENT
        return unknown(self.unknown or "not linked")


class PeerInfos:
    """Each node's ``nodes_info`` value as JSON text (``["<index>", "<name>"]``), made once: a
    node is the peer of up to group-size others."""

    def __init__(self, overflow_check: bool) -> None:
        self.overflow_check = overflow_check
        self.texts: dict[int, str] = {}

    def of(self, node: CommNode) -> str:
        text = self.texts.get(id(node))
        if text is None:
            index = _escape(_index_text(node, self.overflow_check))
            text = self.texts[id(node)] = f"[{index}, {_escape(node.name)}]"
        return text


def _annotation(kind: str, nodes_info: str) -> str:
    """One op's JSON object, around its ``nodes_info`` items."""
    return f'{{"communications_type": "{kind}", "nodes_info": {{{nodes_info}}}}}'


def call_annotations(peers: Sequence[CommNode], infos: PeerInfos) -> Iterator[tuple[int, str]]:
    """(rank, its annotation) for every member of a many↔many call, members in group order.

    The members' entries are joined once; each member's text is that string without its own
    entry: two slices, copied at C speed, instead of a dict and a json.dumps per member.
    """
    if len(peers) < 2:
        return
    entries = [f'"{node.rank}": {infos.of(node)}' for node in peers]
    joined = _SEPARATOR.join(entries)
    start = 0
    last = len(entries) - 1
    for position, (node, entry) in enumerate(zip(peers, entries, strict=True)):
        end = start + len(entry)
        if position == 0:
            others = joined[end + len(_SEPARATOR) :]
        elif position == last:
            others = joined[: start - len(_SEPARATOR)]
        else:
            others = joined[:start] + joined[end + len(_SEPARATOR) :]
        yield node.rank, _annotation("send_receive", others)
        start = end + len(_SEPARATOR)


def per_node(links: list[Link], infos: PeerInfos, rows: list[LinkRow]) -> dict[int, NodeLinks]:
    """Fill ``rows`` (one per node and peer); return what each node is linked to, by ``id``."""
    per_node: dict[int, NodeLinks] = {}
    for link in links:
        verdict = link.verdict
        status, reason = STATUS_TEXT[verdict.status], verdict.reason
        ends = ((link.source, link.target, "send"), (link.target, link.source, "receive"))
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
                    link.call_id,
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
            op[1][there.rank] = infos.of(peer)
    return per_node
