"""Communication ops linked across ranks (placeholder until linking lands)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any

from graphboard.dump.records import Param
from graphboard.graph.model import Graph


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


@dataclass(slots=True)
class LinkSummary:
    warnings: list[str] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=dict)


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
        )
        for node in graph.nodes.values()
        if node.name.startswith("Distributed.")
    ]


def link_ranks(
    conn: sqlite3.Connection, nodes: list[CommNode], overflow_check: bool
) -> LinkSummary:
    return LinkSummary()
