"""Micro-step ids: which forward+backward pass of a step each node belongs to."""

from __future__ import annotations

from graphboard.graph.model import Graph, NodeType


def assign_micro_steps(graph: Graph, megatron_count: int | None) -> int:
    """Give every node a micro-step id and return how many micro steps the graph has.

    With Megatron's construct.json the ids come from the file. Otherwise a new micro step
    starts at each root-level forward module that follows a backward one (msprobe's rule).
    Descendants without an id inherit their parent's.
    """
    root = graph.root
    if megatron_count is None:
        batch = 0
        backward_seen = False
        for child in root.children:
            if child.type is NodeType.MODULE:
                if ".forward." in child.name:
                    if backward_seen:
                        batch += 1
                        backward_seen = False
                else:
                    backward_seen = True
            child.micro_step = batch
        count = batch + 1
    else:
        count = megatron_count + 1
    root.micro_step = root.micro_step or 0
    stack = [root]
    highest = 0
    while stack:
        node = stack.pop()
        for child in node.children:
            if child.micro_step is None:
                child.micro_step = node.micro_step
            highest = max(highest, child.micro_step or 0)
            stack.append(child)
    return max(count, highest + 1)
