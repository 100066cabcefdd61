"""A heatmap's module nodes: each module call of a graph, placed in the tree.

Through the reader (:mod:`graphboard.store.reader`) alone: the module nodes of a graph and their
names from its rows, their depth, parent and execution order from the graph's columns
(manual matches applied). The parameter dicts of the few nodes a heatmap shows come from
:func:`~graphboard.store.reader.node_data.dicts_of`, a user's rescored pairing in the build's place.
"""

from __future__ import annotations

from collections.abc import Iterable

from graphboard.store.reader import GraphKey, VisDb, node_data, overlay
from graphboard.trends.modules import ModuleNode, split_module_name


def module_nodes(db: VisDb, key: GraphKey) -> list[ModuleNode]:
    """Every module node of the graph, in execution order."""
    return _module_nodes(db, key, node_data.module_names(db, key))


def calls_of(db: VisDb, key: GraphKey, module: str) -> list[ModuleNode]:
    """The nodes of one module (every pass and call)."""
    found = _module_nodes(db, key, node_data.module_names(db, key, module))
    return [node for node in found if node.module == module]


def _module_nodes(db: VisDb, key: GraphKey, rows: Iterable[tuple[int, str]]) -> list[ModuleNode]:
    columns = overlay.graph_view(db, key).columns
    depth, parent, exec_order = columns["depth"], columns["parent"], columns["exec_order"]
    found: list[ModuleNode] = []
    for order, name in rows:
        split = split_module_name(name)
        if split is None or not 0 <= order < len(depth):
            continue
        found.append(
            ModuleNode(
                order,
                name,
                *split,
                depth=int(depth[order]),
                parent=int(parent[order]),
                exec_order=int(exec_order[order]),
            )
        )
    found.sort(key=lambda node: node.exec_order)
    return found
