"""PP merge: the graphs of one pipeline chain made one model, in the first stage's graph.

msprobe's rules (reference-builder.md 6.5), from each top-level module down by name: a module
every stage has whose inputs and outputs both differ and whose name has ``layers.N.`` is a
pipeline-split layer (a backward one too when its forward was): the other stages' copies join
it as siblings, whole subtrees. A forward module with equal inputs and different outputs takes
the last stage's output; a backward module with different inputs and equal outputs the last
stage's inputs. Children only other stages have join their parent. The joined siblings are
then ordered (forward: the first stage's, then the others' by rank; backward the other way
round), their layers renumbered by position into one model, their APIs suffixed ``_rank<r>``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from graphboard.dump.records import Param, Role
from graphboard.graph.model import Graph, Node, NodeType
from graphboard.merge.apis import rank_name
from graphboard.merge.tp import UNMERGED_PARENTS, _differing

LAYERS = re.compile(r"(layers\.|layer\.)\d+(\.)")
Mark = tuple[int, int]  # (position among the siblings on its own stage, rank)


class _PipelineMerge:
    def __init__(self, graphs: Sequence[Graph], ranks: Sequence[int]) -> None:
        self.main, self.others = graphs[0], graphs[1:]
        self.rank_of = {id(graph): rank for graph, rank in zip(graphs, ranks, strict=True)}
        self.marks: dict[Node, Mark] = {}
        self.split: set[str] = set()  # main's pipeline-split nodes, by name
        self.joined: set[Node] = set()  # the other stages' nodes joined as siblings (their tops)

    def mark(self, node: Node, rank: int, position: int) -> None:
        """Note a node (and its subtree) of another stage with its position and rank; each
        child's position is its index among its siblings, counted once per parent."""
        stack = [(node, position)]
        while stack:
            current, place = stack.pop()
            self.marks[current] = (place, rank)
            stack.extend(enumerate_children(current))

    def adopt(self, node: Node, position: int, parent: Node, rank: int) -> None:
        self.mark(node, rank, position)
        node.parent = None
        node.attach(parent)

    def merge(self, node: Node) -> None:
        counterparts: list[tuple[Node, int]] = []
        for graph in self.others:
            other = graph.nodes.get(node.name)
            if other is None:
                return  # only the main stage has it
            counterparts.append((other, self.rank_of[id(graph)]))
        inputs, outputs = _differing(node, [other for other, _ in counterparts], compare=True)
        split = bool(inputs and outputs and LAYERS.search(node.name))
        if ".backward." in node.name:
            split = split or node.name.replace(".backward.", ".forward.") in self.split
        if split and node.parent is not None:
            self.split.add(node.name)
            for other, rank in counterparts:
                position = other.parent.children.index(other) if other.parent else 0
                self.adopt(other, position, node.parent, rank)
            return
        last = counterparts[-1][0]
        if not inputs and outputs and ".forward." in node.name:
            node.params = _with(node, last, take_outputs=True)
        elif inputs and not outputs and ".backward." in node.name:
            node.params = _with(node, last, take_outputs=False)
        self.adopt_unique_children(node, counterparts)
        for child in list(node.children):
            if child.type is NodeType.MODULE and child not in self.marks:
                self.merge(child)

    def adopt_unique_children(self, node: Node, counterparts: list[tuple[Node, int]]) -> None:
        names = [{child.name for child in node.children}] + [
            {child.name for child in other.children} for other, _ in counterparts
        ]
        for index, (other, rank) in enumerate(counterparts, start=1):
            elsewhere = set().union(*(names[:index] + names[index + 1 :]))
            unique = [
                (position, child)
                for position, child in enumerate(other.children)
                if child.name not in elsewhere
            ]
            for position, child in unique:
                self.adopt(child, position, node, rank)

    def order_and_rename(self, start: Node) -> None:
        stack = [start]
        while stack:
            node = stack.pop()
            if node in self.marks and node.parent is not None:
                self.order_siblings(node.parent, ".forward." in node.name)
            stack.extend(node.children)

    def order_siblings(self, parent: Node, forward: bool) -> None:
        plain = [child for child in parent.children if child not in self.marks]
        joined = [child for child in parent.children if child in self.marks]
        if forward:
            joined.sort(key=lambda child: (self.marks[child][1], self.marks[child][0]))
            parent.children = plain + joined
        else:
            joined.sort(key=lambda child: (-self.marks[child][1], self.marks[child][0]))
            parent.children = joined + plain
        self.joined.update(joined)
        numbers: dict[Node, int] = {}
        index = -1
        for child in parent.children if forward else reversed(parent.children):
            if LAYERS.search(child.name):
                index += 1
            if child in self.marks:
                numbers[child] = index
        for child in joined:
            self.rename(child, numbers[child])

    def rename(self, top: Node, number: int) -> None:
        """The joined subtree's names: layers renumbered, APIs suffixed with their rank."""
        stack = [top]
        while stack:
            node = stack.pop()
            mark = self.marks.pop(node, None)
            if mark is not None:
                if node.type is NodeType.MODULE:
                    if LAYERS.search(node.name):
                        node.name = LAYERS.sub(rf"\g<1>{number}\g<2>", node.name)
                else:
                    node.name = rank_name(node.name, mark[1])
                self.main.nodes[node.name] = node
            stack.extend(node.children)


def enumerate_children(node: Node) -> list[tuple[Node, int]]:
    return [(child, position) for position, child in enumerate(node.children)]


def _with(node: Node, last: Node, take_outputs: bool) -> list[Param]:
    """``node``'s parameters with the last stage's outputs (or inputs and parameters)."""
    mine, theirs = node.params or [], last.params or []

    def outputs(params: list[Param]) -> list[Param]:
        return [param for param in params if param.role is Role.OUTPUT]

    def others(params: list[Param]) -> list[Param]:
        return [param for param in params if param.role is not Role.OUTPUT]

    if take_outputs:
        return others(mine) + outputs(theirs)
    return others(theirs) + outputs(mine)


def merge_pp(graphs: Sequence[Graph], ranks: Sequence[int]) -> tuple[set[str], set[Node]]:
    """Merge ``graphs`` (one per stage of a pipeline chain, ``ranks`` in the same order) into
    ``graphs[0]``; return the names of its pipeline-split nodes and the nodes joined beside
    them (the VPP merge starts from both)."""
    if len(graphs) < 2:
        return set(), set()
    merge = _PipelineMerge(graphs, ranks)
    for node in list(merge.main.root.children):
        if node.type is NodeType.MODULE and node.name not in UNMERGED_PARENTS:
            merge.merge(node)
            merge.order_and_rename(node)
    return merge.split, merge.joined
