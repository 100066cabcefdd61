"""One graph of a .vis.db as the diagnosis reads it: the ops holding records, innermost
first, in execution order, each with its module's parameters."""

from __future__ import annotations

from functools import partial

from graphboard.diagnose.origin import Op
from graphboard.dump.records import Param, Role
from graphboard.graph.model import ROOT_NAME, NodeType, node_type_of
from graphboard.store.graph_views import GraphKey
from graphboard.store.reader import VisDb, node_data, overlay


def graph_ops(db: VisDb, key: GraphKey) -> list[Op]:
    """Every node with a record that holds no node with a record (the ops: APIs, or leaf
    modules of a module-level dump), in execution order, with the parameters of the nearest
    module above it that has any (the weights it may have been handed)."""
    view = overlay.graph_view(db, key)
    count = len(view)
    params = node_data.params_by_order(db, key, range(count))
    parent = view.columns["parent"]
    names = view.names
    has_children: set[int] = set()
    for order, recorded in params.items():
        if recorded and int(parent[order]) >= 0:
            has_children.add(int(parent[order]))
    ops: list[Op] = []
    for position in view.exec_perm:
        order = int(position)
        held = params.get(order)
        if not held or order in has_children:
            continue
        ops.append(
            Op(
                str(names[order]),
                held,
                len(ops),
                order,
                partial(_module_weights, order, parent, names, params),
            )
        )
    return ops


def _module_weights(
    order: int, parent: object, names: object, params: dict[int, list[Param]]
) -> tuple[str | None, list[Param]]:
    up = int(parent[order])  # type: ignore[index]
    while up >= 0:
        name = str(names[up])  # type: ignore[index]
        if name == ROOT_NAME:
            break
        if node_type_of(name) is NodeType.MODULE:
            weights = [p for p in params.get(up, []) if p.role is Role.PARAMETERS]
            return name, weights
        up = int(parent[up])  # type: ignore[index]
    return None, []
