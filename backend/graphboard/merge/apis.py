"""API collections across ranks (every strategy): each rank's ``Apis_Between_Modules.k`` goes
under one ``Apis_Between_Modules_All_Ranks.k`` of the merged graph, renamed
``Apis_Between_Modules_Rank<r>.k``; the other ranks' APIs get ``_rank<r>`` after their API name
(``Torch.matmul_rank1.0.forward``) so that every name stays unique. As msprobe, a collection
only another rank has is dropped, and a rank's collections are merged only where the main rank
has one of the same index.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from graphboard.graph.model import API_COLLECTION_PREFIX, Graph, Node, NodeType

ALL_RANKS = f"{API_COLLECTION_PREFIX}_All_Ranks"
_RANK = re.compile(r"_Rank(\d+)")


def rank_name(name: str, rank: int) -> str:
    """An API's name on another rank: ``_rank<r>`` after its second segment."""
    parts = name.split(".")
    if len(parts) > 1:
        parts[1] += f"_rank{rank}"
    return ".".join(parts)


def _rename(graph: Graph, node: Node, name: str) -> None:
    graph.nodes.pop(node.name, None)
    node.name = name
    graph.nodes[name] = node


def _adopt(main: Graph, collection: Node, parent: Node, rank: int) -> None:
    """Another rank's collection, its APIs renamed, moved under ``parent`` in ``main``."""
    collection.parent = None
    index = collection.name.rsplit(".", 1)[-1]
    collection.name = f"{API_COLLECTION_PREFIX}_Rank{rank}.{index}"
    main.nodes[collection.name] = collection
    for child in collection.children:
        child.name = rank_name(child.name, rank)
        main.nodes[child.name] = child
    collection.attach(parent)


def merge_api_collections(graphs: Sequence[Graph], ranks: Sequence[int]) -> None:
    """Gather the collections of ``graphs`` (``ranks`` in the same order) into ``graphs[0]``."""
    main = graphs[0]
    children: list[Node] = []
    counter = 0
    for node in main.root.children:
        if node.name.startswith(ALL_RANKS):  # gathered before (per stage): gather those too
            children.append(node)
            for graph in graphs[1:]:
                other = graph.nodes.get(node.name)
                for collection in list(other.children) if other is not None else []:
                    collection.parent = None
                    collection.attach(node)
                    main.nodes[collection.name] = collection
                    rank = _rank_of(collection.name)
                    for child in collection.children:
                        # beyond msprobe: the APIs of another chain's own first stage get its
                        # rank too, where msprobe leaves their names to collide with the main's
                        if rank != ranks[0] and f"_rank{rank}" not in child.name:
                            child.name = rank_name(child.name, rank)
                        main.nodes[child.name] = child
            continue
        if node.type is not NodeType.API_COLLECTION:
            children.append(node)
            continue
        original = node.name
        gathered = Node(f"{ALL_RANKS}.{counter}", NodeType.API_COLLECTION, parent=main.root)
        counter += 1
        main.nodes[gathered.name] = gathered
        children.append(gathered)
        node.parent = None
        _rename(main, node, f"{API_COLLECTION_PREFIX}_Rank{ranks[0]}.{original.rsplit('.', 1)[-1]}")
        node.attach(gathered)
        for graph, rank in zip(graphs[1:], ranks[1:], strict=True):
            other = graph.nodes.get(original)
            if other is not None:
                _adopt(main, other, gathered, rank)
        # after its per-rank collections, as a compare settles them: children first (msprobe)
        main.nodes[gathered.name] = main.nodes.pop(gathered.name)
    main.root.children = children


def sort_by_rank(graph: Graph) -> None:
    """Each gathered collection's per-rank collections in rank order (TP+PP, full)."""
    for node in graph.root.children:
        if node.name.startswith(ALL_RANKS):
            node.children.sort(key=lambda child: _rank_of(child.name))


def _rank_of(name: str) -> int:
    found = _RANK.search(name)
    return int(found.group(1)) if found else -1
