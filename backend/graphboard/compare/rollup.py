"""Where an error starts: the first node whose input tensors agree but which is flagged."""

from __future__ import annotations

from graphboard.compare.result import Level
from graphboard.graph.model import Graph, Node


def first_introduced_error(graph: Graph) -> Node | None:
    """The first node, in order of completion (node_order), where an error starts; failing
    that, the first where a warning starts."""
    best: dict[Level, Node] = {}
    for node in graph.nodes.values():
        comparison = node.comparison
        level = comparison.introduced_level if comparison is not None else None
        if level is not None and (level not in best or node.order < best[level].order):
            best[level] = node
    return best.get(Level.ERROR) or best.get(Level.WARNING)
