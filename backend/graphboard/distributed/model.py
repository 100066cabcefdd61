"""What the linker takes in and hands between its steps: communication nodes, link ends, links."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from graphboard.distributed.verdicts import Verdict
from graphboard.dump.records import Param
from graphboard.graph.model import Graph

DISTRIBUTED_PREFIX = "Distributed."


@dataclass(slots=True)
class CommNode:
    """What the linker needs of one ``Distributed.*`` node, small enough to pass between processes."""

    side: str
    step: int
    rank: int
    name: str
    order: int
    params: list[Param]
    precision: float | None
    overflow: str | None
    batch_p2p: list[dict[str, Any]] | None = None  # {op, peer, group_id} per op of a batch


@dataclass(slots=True)
class LinkSummary:
    warnings: list[str] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=dict)
    # id(target CommNode) -> the calls its output is made of (distributed/peer_verdicts.py)
    peer_sources: dict[int, list[CommNode]] = field(default_factory=dict)


def collect_comm_nodes(graph: Graph) -> list[CommNode]:
    return [
        CommNode(
            graph.side,
            graph.step,
            graph.rank,
            node.name,
            node.order,
            node.params or [],
            node.precision,
            node.overflow,
            node.batch_p2p,
        )
        for node in graph.nodes.values()
        if node.name.startswith(DISTRIBUTED_PREFIX)
    ]


@dataclass(slots=True)
class Endpoint:
    """One end of a link: a rank, and its call there if that was found."""

    rank: int
    node: CommNode | None
    api: str  # the call's API; the inner op (isend/irecv) for a batch
    op_index: int = 0  # inner op of a batch_isend_irecv


@dataclass(slots=True)
class Link:
    """Data going from ``source`` to ``target``: point-to-point, or root↔member of a rooted
    collective (many↔many calls are kept whole, as ``group_call.GroupCall``)."""

    side: str
    step: int
    group_key: str
    occurrence: int
    source: Endpoint
    target: Endpoint
    verdict: Verdict
    call_id: int | None = None  # gb_comm_calls.id of a rooted collective

    @property
    def linked(self) -> bool:
        return self.source.node is not None and self.target.node is not None

    @property
    def api(self) -> str:
        return self.source.api if self.source.node is not None else self.target.api
