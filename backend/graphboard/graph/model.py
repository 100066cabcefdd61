"""One rank's graph: nodes in a parent/children hierarchy under a ``DefaultModel`` root."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from graphboard.dump.records import Param
from graphboard.graph.sides import Side

ROOT_NAME = "DefaultModel"
API_COLLECTION_PREFIX = "Apis_Between_Modules"


class NodeType(IntEnum):
    MODULE = 0
    API = 1
    API_COLLECTION = 9


# Graph sides as msprobe writes them (graph keys, tb_nodes.data_source): "NPU" and "Bench".
TARGET_SIDE = Side.TARGET.data_source
GOLDEN_SIDE = Side.GOLDEN.data_source


# An API's name starts with one of these and a dot (msprobe's pattern).
_API_HEADS = frozenset(
    (
        "Tensor",
        "Torch",
        "Functional",
        "NPU",
        "VF",
        "Distributed",
        "Aten",
        "Mint",
        "Primitive",
        "Jit",
        "MintFunctional",
        "MindSpeed",
        "Triton",
    )
)


def node_type_of(name: str) -> NodeType:
    """msprobe's classification, with escaped dots and ``Triton.`` APIs counted as APIs."""
    if name.startswith(API_COLLECTION_PREFIX):
        return NodeType.API_COLLECTION
    head, dot, _ = name.partition(".")  # a set lookup, not a regex: once per node
    if dot and head in _API_HEADS:
        return NodeType.API
    return NodeType.MODULE


@dataclass(slots=True, eq=False)
class Node:
    name: str
    type: NodeType
    parent: Node | None = None
    children: list[Node] = field(default_factory=list)
    params: list[Param] | None = None  # None when dump.json has no record for the node
    stack: tuple[str, ...] | None = None
    micro_step: int | None = None
    batch_p2p: list[dict[str, Any]] | None = None
    # Filled by compare / overflow / distributed:
    counterpart: Node | None = None  # the other side's node it is paired with, in a compare
    precision: float | None = None
    overflow: str | None = None
    comparison: Any = None  # graphboard.compare.result.NodeComparison, matched target nodes
    distributed: Any = None  # msprobe's matched_distributed annotation, once linked
    order: int = -1  # post-order index, as msprobe's node_order
    merge: Any = None  # graphboard.graph.node_merge.NodeMerge: how a parallel merge made this node

    def attach(self, parent: Node) -> bool:
        """Become the last child of ``parent``; the first parent wins, as in msprobe."""
        if self.parent is not None or parent is self:
            return False
        self.parent = parent
        parent.children.append(self)
        return True

    def detach(self) -> None:
        if self.parent is not None:
            self.parent.children.remove(self)
            self.parent = None

    def ancestors(self) -> list[str]:
        """Names from the root down to the parent."""
        names: list[str] = []
        node = self.parent
        while node is not None:
            names.append(node.name)
            node = node.parent
        names.reverse()
        return names

    @property
    def is_leaf(self) -> bool:
        return not self.children


@dataclass(slots=True, eq=False)
class Graph:
    side: str
    step: int
    rank: int
    root: Node
    nodes: dict[str, Node]
    task: str = "statistics"
    level: str | None = None
    framework: str = "pytorch"
    dump_dir: str = ""  # the rank folder
    tensor_dir: str = ""  # dump_tensor_data, for tensor mode
    micro_steps: int = 1
    orphans: list[str] = field(default_factory=list)  # attached under the root by us
    rescued_grads: list[str] = field(default_factory=list)  # parameters_grad msprobe would drop
    warnings: list[str] = field(default_factory=list)
    has_md5: bool = False
    # graphboard's second rule set's verdicts (compare.dtype_graph.GraphVerdicts), a compare's
    # target only; msprobe's stay in each node's precision
    rule_verdicts: Any = None
    merged: bool = False  # made by a parallel merge (merge/): scored by its rule set
    _ordered: list[Node] = field(default_factory=list, repr=False)

    @property
    def graph_id(self) -> str:
        return f"{self.side}_{self.step}_{self.rank}"

    def __len__(self) -> int:
        return len(self.nodes)

    def walk(self) -> Iterator[Node]:
        """Pre-order (execution order: a module before what runs inside it)."""
        stack = [self.root]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def post_order(self) -> list[Node]:
        """Children before parents, siblings in order, root last: msprobe's node_order."""
        ordered: list[Node] = []
        stack: list[tuple[Node, bool]] = [(self.root, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                ordered.append(node)
                continue
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(node.children))
        return ordered

    def number(self) -> list[Node]:
        """Set ``order`` (msprobe's node_order) on every node; return them in that order."""
        ordered = self.post_order()
        for index, node in enumerate(ordered):
            node.order = index
        self._ordered = ordered
        return ordered

    def ordered(self) -> list[Node]:
        """Nodes in node_order (numbered by ``number``, renumbered if the tree changed)."""
        if len(self._ordered) != len(self.nodes):
            return self.number()
        return self._ordered

    def release(self) -> None:
        """Break the node cycles (parent <-> children, target <-> golden counterpart) once the graph
        is written, so reference counting frees it at once: left to the cyclic collector, its
        objects would be traversed again when the collector resumes, a cost that grows with the
        graph. The graph is unusable afterwards."""
        for node in self.nodes.values():
            node.parent = None  # children lists alone form a tree: no cycle
            node.counterpart = None
        self.nodes = {}
        self._ordered = []
