"""Roll-ups: what a module's subtree holds, so a collapsed module still shows its errors."""

from __future__ import annotations

from dataclasses import dataclass

from graphboard.compare.result import Level
from graphboard.graph.model import Graph, Node

OVERFLOW_LEVELS = {"medium": 1, "high": 2, "critical": 3}


@dataclass(slots=True)
class Rollup:
    worst_level: Level | None = None  # of this node and its descendants
    worst_node: Node | None = None  # the first leaf (else this node) at worst_level
    error_leaves: int = 0
    warning_leaves: int = 0
    unmatched_leaves: int = 0
    worst_overflow: int | None = None
    overflow_leaves: int = 0


def node_level(node: Node) -> Level | None:
    comparison = node.comparison
    return None if comparison is None else comparison.level


def roll_up(graph: Graph, compared: bool) -> None:
    """Fill ``node.rollup`` for every node, children before parents (linear)."""
    for node in graph.post_order():
        own_level = node_level(node)
        own_overflow = OVERFLOW_LEVELS.get(node.overflow) if node.overflow else None
        rollup = Rollup(worst_level=own_level, worst_overflow=own_overflow)
        if node.is_leaf:
            if own_level is Level.ERROR:
                rollup.error_leaves = 1
            elif own_level is Level.WARNING:
                rollup.warning_leaves = 1
            if compared and node.match is None:
                rollup.unmatched_leaves = 1
            if own_overflow:
                rollup.overflow_leaves = 1
            rollup.worst_node = node if own_level is not None else None
        else:
            leaf_worst: Level | None = None
            for child in node.children:
                sub: Rollup = child.rollup
                rollup.error_leaves += sub.error_leaves
                rollup.warning_leaves += sub.warning_leaves
                rollup.unmatched_leaves += sub.unmatched_leaves
                rollup.overflow_leaves += sub.overflow_leaves
                if sub.worst_overflow and (rollup.worst_overflow or 0) < sub.worst_overflow:
                    rollup.worst_overflow = sub.worst_overflow
                if sub.worst_level is not None and (
                    leaf_worst is None or sub.worst_level > leaf_worst
                ):
                    leaf_worst = sub.worst_level
                    rollup.worst_node = sub.worst_node
            if leaf_worst is not None and (own_level is None or leaf_worst >= own_level):
                rollup.worst_level = leaf_worst
            elif own_level is not None:
                rollup.worst_node = node
        node.rollup = rollup


def first_introduced_error(graph: Graph) -> Node | None:
    """The first node, in order of completion (node_order), whose inputs pass and outputs fail."""
    best: Node | None = None
    for node in graph.nodes.values():
        comparison = node.comparison
        if (
            comparison is not None
            and comparison.introduces_error
            and (best is None or node.order < best.order)
        ):
            best = node
    return best
