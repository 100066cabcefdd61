"""Small builders of Params, Nodes and Graphs for compare tests."""

from __future__ import annotations

from typing import Any

from graphboard.dump.records import Param, Role
from graphboard.graph.model import ROOT_NAME, Graph, Node, NodeType, node_type_of


def tensor(
    key: str,
    stats: tuple[float, float, float, float] = (1.0, -1.0, 0.0, 2.0),
    *,
    dtype: str = "torch.float32",
    shape: tuple[int, ...] = (2, 3),
    requires_grad: bool | None = True,
    md5: str | None = None,
    data_name: str | None = None,
) -> Param:
    role = (
        Role.OUTPUT
        if key.startswith("output")
        else Role.PARAMETERS
        if key.startswith("parameters")
        else Role.INPUT
    )
    maximum, minimum, mean, norm = stats
    return Param(
        key,
        role,
        "torch.Tensor",
        dtype,
        shape,
        maximum,
        minimum,
        mean,
        norm,
        requires_grad,
        md5,
        data_name,
        None,
        None,
        True,
    )


def scalar(key: str, value: Any) -> Param:
    stat = value
    return Param(
        key,
        Role.OUTPUT if key.startswith("output") else Role.INPUT,
        type(value).__name__,
        f"<class '{type(value).__name__}'>",
        (),
        stat,
        stat,
        stat,
        stat,
        value=value,
    )


def node(name: str, params: list[Param] | None = None, children: list[Node] | None = None) -> Node:
    created = Node(name, node_type_of(name), params=params)
    for child in children or []:
        child.attach(created)
    return created


def graph(side: str, *top: Node) -> Graph:
    root = Node(ROOT_NAME, NodeType.MODULE)
    for child in top:
        child.attach(root)
    nodes: dict[str, Node] = {}
    stack = [root]
    while stack:
        current = stack.pop()
        nodes[current.name] = current
        stack.extend(current.children)
    built = Graph(side=side, step=0, rank=0, root=root, nodes=nodes)
    built.number()
    return built
