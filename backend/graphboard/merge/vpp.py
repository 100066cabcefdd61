"""VPP merge: a pipeline chain's model chunks made one model, after the PP merge.

With a virtual pipeline each rank holds several model chunks, dumped as a list
(``Module.<chunk>.module...``): chunk 0 of the first stage feeds chunk 0 of the next, the last
stage's chunk 0 feeds the first stage's chunk 1, and so on. msprobe's rules (reference-builder.md
6.6), once the PP merge has joined each chunk's stages: a chunk-0 module takes its forward
output (its backward input) from the same-named module of the last chunk, since the model's
result leaves the last chunk; each chunk-0 module holding pipeline-split or joined nodes (a
layers container) receives the same container's children from the other chunks (appended
forward, prepended backward), the other chunks' top-level modules leave the graph, and the
moved children are renumbered into one run of layers with their chunk set to 0. What the
other chunks hold outside those containers (the last chunk's output layer) leaves with them,
as in msprobe.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from graphboard.graph.model import Graph, Node, NodeType
from graphboard.merge.pp import _with

LAYERS = re.compile(r"(layers\.|layer\.)(\d+)(\.)")
FORWARD = re.compile(r"\.forward\.\d+$")
CHUNK_0 = "0"


def _chunk(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[1].isdigit() else None


def with_chunk(name: str, chunk: str) -> str:
    """``name`` in model chunk ``chunk`` (its second segment replaced), if it names a chunk."""
    parts = name.split(".")
    if len(parts) < 2 or not parts[1].isdigit():
        return name
    parts[1] = chunk
    return ".".join(parts)


class _ChunkMerge:
    def __init__(self, graph: Graph, vpp: int, split: set[str], joined: set[Node]) -> None:
        self.graph, self.last = graph, str(vpp - 1)
        self.chunks = [str(chunk) for chunk in range(1, vpp)]
        self.split = {graph.nodes[name] for name in split if name in graph.nodes}
        self.joined = joined
        self.pipelined = self.split | joined

    def _modules(self, tops: list[Node]) -> Iterator[Node]:
        """Modules of ``tops`` in execution order, not entering the pipeline-merged ones."""
        stack = list(reversed(tops))
        while stack:
            node = stack.pop()
            if node in self.pipelined or node.type is not NodeType.MODULE:
                continue
            yield node
            stack.extend(reversed(node.children))

    def take_last_chunk_data(self) -> None:
        tops = [top for top in self.graph.root.children if _chunk(top.name) in (CHUNK_0, self.last)]
        for node in self._modules(tops):
            source = self.graph.nodes.get(with_chunk(node.name, self.last))
            if source is None or source is node:
                continue
            node.params = _with(node, source, take_outputs=bool(FORWARD.search(node.name)))

    def containers(self) -> list[Node]:
        """Chunk 0's modules holding pipeline-split or joined children, in execution order.
        As msprobe, a joined node whose parent is already found is walked through."""
        found: dict[str, Node] = {}
        tops = [top for top in self.graph.root.children if _chunk(top.name) == CHUNK_0]
        stack = list(reversed(tops))
        while stack:
            node = stack.pop()
            parent = node.parent
            if parent is not None and (
                node in self.split or (node in self.joined and parent.name not in found)
            ):
                found[parent.name] = parent
                continue
            stack.extend(reversed(node.children))
        return list(found.values())

    def move_chunks(self) -> None:
        removed: set[str] = set()
        for container in self.containers():
            forward = bool(FORWARD.search(container.name))
            for chunk in self.chunks:
                source = self.graph.nodes.get(with_chunk(container.name, chunk))
                if source is None:
                    continue
                moved = source.children
                source.children = []
                for child in moved:
                    child.parent = container
                container.children = (
                    container.children + moved if forward else moved + container.children
                )
                ancestors = source.ancestors()
                if len(ancestors) > 1:
                    removed.add(ancestors[1])
            self.renumber(container, forward)
        self.graph.root.children = [
            top for top in self.graph.root.children if top.name not in removed
        ]

    def renumber(self, container: Node, forward: bool) -> None:
        index = -1
        for child in container.children if forward else reversed(container.children):
            match = LAYERS.search(child.name)
            if match:
                index += 1
            if _chunk(child.name) in (None, CHUNK_0):
                continue
            prefix = ""
            if match:
                prefix = with_chunk(child.name[: match.start()] + f"{match[1]}{index}.", CHUNK_0)
                child.name = prefix + child.name[match.end() :]
            else:
                child.name = with_chunk(child.name, CHUNK_0)
            self._rename_inside(child, prefix)

    @staticmethod
    def _rename_inside(top: Node, prefix: str) -> None:
        """The modules under a moved child: its new layer prefix, or chunk 0 (APIs keep theirs)."""
        stack = list(top.children)
        while stack:
            node = stack.pop()
            if node.type is not NodeType.MODULE:
                continue
            stack.extend(node.children)
            match = LAYERS.search(node.name)
            if match and prefix:
                node.name = prefix + node.name[match.end() :]
            else:
                node.name = with_chunk(node.name, CHUNK_0)


def has_chunks(graph: Graph) -> bool:
    """Whether ``graph`` holds model chunks: a virtual pipeline's model is a list, so its
    top-level modules are named ``Module.<chunk>....``; a model without one has none."""
    return any(
        _chunk(node.name) is not None
        for node in graph.root.children
        if node.type is NodeType.MODULE
    )


def merge_vpp(graph: Graph, vpp: int, split: set[str], joined: set[Node]) -> None:
    """Merge the model chunks of the pipeline-merged ``graph`` into chunk 0; ``split`` and
    ``joined`` are what merge_pp returned for it."""
    if vpp < 2:
        return
    merge = _ChunkMerge(graph, vpp, split, joined)
    merge.take_last_chunk_data()
    merge.move_chunks()
    # the nodes still in the tree, under their new names, in their old order: the compare
    # settles nested API collections in this order (a Rank collection before its All_Ranks)
    kept = {id(node) for node in graph.walk()}
    graph.nodes = {node.name: node for node in graph.nodes.values() if id(node) in kept}
