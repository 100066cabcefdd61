"""Where an error starts: the first node whose inputs pass and whose outputs fail."""

from __future__ import annotations

from graphboard.graph.model import Graph, Node


def first_introduced_error(graph: Graph) -> Node | None:
    """The first such node in order of completion (node_order): its outputs went wrong first."""
    best: Node | None = None
    for node in graph.nodes.values():
        comparison = node.comparison
        if comparison is not None and comparison.introduces_error and (best is None or node.order < best.order):
            best = node
    return best
