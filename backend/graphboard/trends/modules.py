"""Module rows: which node of a graph a heatmap row stands for, the same across ranks and steps.

A module node is named ``<module>.<pass>.<call>`` (``Module.decoder.layers.3.TransformerLayer
.forward.0``, ``Module.head.3.Linear.parameters_grad.0``): the module (its attribute path and
class) is the row, the same on every rank and step; the pass picks a column of the precision
map; the call count (a module run twice, or once per micro-step) is not part of the row.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum


class Pass(StrEnum):
    FORWARD = "forward"
    BACKWARD = "backward"
    PARAMETERS_GRAD = "parameters_grad"


_PASSES = frozenset(Pass)


@dataclass(frozen=True, slots=True)
class ModuleNode:
    """One module node of a graph, as a heatmap reads it."""

    order: int  # node_order
    name: str
    module: str  # the row: ``Module.blocks.0.ResidualBlock``
    pass_: Pass
    call: int
    depth: int  # in the graph's tree (the root is 0)
    parent: int  # node_order, -1 for the root
    exec_order: int


def split_module_name(name: str) -> tuple[str, Pass, int] | None:
    """(module, pass, call) of a module node's name; None for anything else (an API call,
    the root, ``optimizer``)."""
    head, _, call = name.rpartition(".")
    if not call.isdigit() or not call.isascii():
        return None
    module, _, pass_name = head.rpartition(".")
    if pass_name not in _PASSES or not module:
        return None
    return module, Pass(pass_name), int(call)


def module_class(module: str) -> str:
    """``Module.blocks.0.ResidualBlock`` -> ``ResidualBlock``."""
    return module.rpartition(".")[2]


def row_pass(nodes: Iterable[ModuleNode]) -> Pass:
    """The pass that places rows: forward, or in a graph without any forward module (a
    backward-only dump) backward. msprobe leaves some backward modules without their parent
    (reference-builder.md), so a row is placed by its forward call whenever there is one."""
    return Pass.FORWARD if any(n.pass_ is Pass.FORWARD for n in nodes) else Pass.BACKWARD


def row_nodes(nodes: Sequence[ModuleNode], depth: int | None = None) -> list[ModuleNode]:
    """The nodes that make the rows (at ``depth``, or at every depth)."""
    placing = row_pass(nodes)
    return [
        node for node in nodes if node.pass_ is placing and (depth is None or node.depth == depth)
    ]


def layers_depth(nodes: Sequence[ModuleNode]) -> int | None:
    """ "The model's layers": the depth where one parent holds the most modules of one class
    (``layers.0`` … ``layers.N`` of a TransformerBlock, ResNet's Bottlenecks of a stage);
    the shallowest such depth on a tie, so a model without repeated blocks shows its top
    modules. None when the graph has no module."""
    siblings: dict[tuple[int, int, str], set[str]] = defaultdict(set)
    for node in row_nodes(nodes):
        siblings[(node.depth, node.parent, module_class(node.module))].add(node.module)
    best: tuple[int, int] | None = None  # (most siblings, -depth)
    for (depth, _parent, _class), modules in siblings.items():
        score = (len(modules), -depth)
        if best is None or score > best:
            best = score
    return -best[1] if best is not None else None


def module_depths(nodes: Sequence[ModuleNode]) -> list[int]:
    """The depths holding row nodes, shallowest first (for an error naming what exists)."""
    return sorted({node.depth for node in row_nodes(nodes)})
