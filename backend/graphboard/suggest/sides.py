"""One side of a compare graph as the proposer walks it: names, tree, match state and the
parameters of the nodes still unmatched, read once through the store's reader."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from graphboard.dump.records import Param
from graphboard.graph.model import API_COLLECTION_PREFIX, NodeType
from graphboard.store.arrays import NameTable
from graphboard.store.reader import GraphKey, VisDb, node_data, overlay


@dataclass(slots=True)
class SideArrays:
    """One side's graph as the proposals read it: names, tree and pairing as arrays by
    node_order (graph.sides.Side is the side itself)."""

    key: GraphKey
    names: Sequence[str]
    parent: npt.NDArray[np.int32]
    node_type: list[int]
    matched: npt.NDArray[np.int8]  # 1 paired (by the build or a user), 0 grey
    counterpart: npt.NDArray[np.int32]  # node_order on the other side, -1
    children: list[list[int]]  # node orders, in execution order
    descendants: list[int]  # how many nodes below each
    params: dict[int, list[Param]] = field(default_factory=dict)  # of unmatched nodes
    roots: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.names)


def load_side(db: VisDb, key: GraphKey) -> SideArrays:
    """The side's columns with users' matches applied (the reader's view), each node's type
    and the parameters of every unmatched node (one bulk read)."""
    view = overlay.graph_view(db, key)
    columns = view.columns
    names = view.names
    if isinstance(names, NameTable):  # read by index over and over: one list, not a blob
        names = names.as_list()
    count = len(view)
    modules = {order for order, _name in node_data.module_names(db, key)}
    node_type = [
        int(NodeType.MODULE)
        if order in modules
        else int(NodeType.API_COLLECTION)
        if names[order].startswith(API_COLLECTION_PREFIX)
        else int(NodeType.API)
        for order in range(count)
    ]
    parent = np.asarray(columns["parent"], dtype=np.int32)
    children: list[list[int]] = [[] for _ in range(count)]
    roots: list[int] = []
    for order in view.exec_perm.tolist():  # pre-order: each list comes out in execution order
        up = int(parent[order])
        (children[up] if up >= 0 else roots).append(order)
    descendants = [0] * count
    for order in reversed(view.exec_perm.tolist()):  # children before their parent
        up = int(parent[order])
        if up >= 0:
            descendants[up] += descendants[order] + 1
    matched = np.asarray(columns["matched"], dtype=np.int8)
    unmatched = np.flatnonzero(matched != 1).tolist()
    return SideArrays(
        key=key,
        names=names,
        parent=parent,
        node_type=node_type,
        matched=matched,
        counterpart=np.asarray(columns["counterpart"], dtype=np.int32),
        children=children,
        descendants=descendants,
        params=node_data.params_by_order(db, key, unmatched) if unmatched else {},
        roots=roots,
    )
