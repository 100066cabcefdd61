"""TP merge: the graphs of one tensor-parallel group made one, in the main rank's graph.

msprobe's rules (reference-builder.md 6.4): a node inside a module (not the optimizer's or
clip_grad's, not a ``Distributed`` call) whose same-named, same-ancestored counterparts on the
other ranks hold different statistics has those merged (stats.py); a forward RowParallelLinear
or backward ColumnParallelLinear takes its matmul's output from the reduce that follows it; and
every node from a forward ColumnParallelLinear to the last RowParallelLinear after it is merged
whether or not the shards differ, except the Column layer's input, the Row layer's output and
bias, and those of the matmuls directly inside them.

Beyond msprobe: every merged parameter keeps each rank's own statistics (``NodeMerge.ranks``),
which the rows and the API show beside the merged value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from graphboard.dump.records import Param, Role
from graphboard.graph.model import Graph, Node, NodeType
from graphboard.graph.node_merge import NodeMerge
from graphboard.merge.stats import MERGED_DTYPES, TP_MERGED, merge_shards, same_statistics

UNMERGED_PARENTS = frozenset({"optimizer", "clip_grad"})
_REDUCES = ("_reduce_scatter_base", "reduce_scatter_tensor", "all_reduce")
Merges = dict[str, NodeMerge]


def _is_input(param: Param) -> bool:
    return param.role is not Role.OUTPUT  # msprobe's input_data: inputs, parameters, grads


_RANK_MARK = re.compile(r"_rank(\d+)\.")


def _counterparts(
    node: Node, others: Sequence[Graph], mapping: Mapping[int, Sequence[int]] | None = None
) -> list[Node]:
    """The same node on each other rank, or none at all if one lacks it or sits elsewhere.
    After a pipeline merge a stage's API is named ``_rank<r>``: ``mapping`` gives, for such a
    rank, the ranks holding its counterparts in ``others``."""
    names = [node.name] * len(others)
    marked = _RANK_MARK.search(node.name) if mapping else None
    if marked and mapping:
        peers = mapping.get(int(marked.group(1)))
        if not peers or len(peers) != len(others):
            return []
        names = [_RANK_MARK.sub(f"_rank{peer}.", node.name) for peer in peers]
    found = []
    ancestors = node.ancestors()
    for graph, name in zip(others, names, strict=True):
        other = graph.nodes.get(name)
        if other is None or other.ancestors() != ancestors:
            return []
        found.append(other)
    return found


def _differing(
    node: Node, others: Sequence[Node], compare: bool
) -> tuple[dict[str, list[Param]], dict[str, list[Param]]]:
    """The parameters whose shards differ (all of them when not ``compare``), inputs and
    outputs apart, each with the shards in rank order; only msprobe's merged dtypes count."""
    differing: tuple[dict[str, list[Param]], dict[str, list[Param]]] = ({}, {})
    if not others or not node.params:
        return differing
    by_key = [{param.key: param for param in other.params or ()} for other in others]
    ordered = sorted(node.params, key=lambda param: not _is_input(param))  # inputs first
    for param in ordered:
        if param.dtype not in MERGED_DTYPES:
            continue
        shards, same = [param], compare
        for params in by_key:
            other = params.get(param.key)
            if other is None or other.dtype not in MERGED_DTYPES:
                break
            shards.append(other)
            if compare and not same_statistics(param, other):
                same = False
        if not same:
            differing[0 if _is_input(param) else 1][param.key] = shards
    return differing


@dataclass(slots=True)
class _Group:
    """One TP merge: the other ranks' graphs, the rank each node was dumped on, the stage
    mapping after a pipeline merge (see _counterparts), and the merges made so far."""

    others: Sequence[Graph]
    ranks: Mapping[Node, int]
    mapping: Mapping[int, Sequence[int]] | None
    merges: Merges = field(default_factory=dict)

    def counterparts(self, node: Node) -> list[Node]:
        return _counterparts(node, self.others, self.mapping)

    def record(self, node: Node, others: Sequence[Node], shards: dict[str, list[Param]]) -> None:
        """Merge ``shards`` into ``node`` and note how, keeping each rank's statistics first."""
        merge = self.merges.setdefault(node.name, NodeMerge())
        used = [self.ranks[node], *(self.ranks[other] for other in others)]
        merge.info.append(f"{TP_MERGED}{used}.")
        for key, params in shards.items():
            merge.ranks[key] = [
                (rank, param.max, param.min, param.mean, param.norm)
                for rank, param in zip(used, params, strict=False)
            ]
        for key, params in shards.items():
            merge.info.extend(merge_shards(key, params))


def _linear_kind(node: Node) -> tuple[bool, bool, bool]:
    """(forward Row, backward Column, forward Column) for a module's name."""
    parts = node.name.split(".")
    if node.type is not NodeType.MODULE or len(parts) < 4:
        return False, False, False
    direction, layer = parts[-2], parts[-3]
    return (
        direction == "forward" and "RowParallelLinear" in layer,
        direction == "backward" and "ColumnParallelLinear" in layer,
        direction == "forward" and "ColumnParallelLinear" in layer,
    )


def _reduce_input(node: Node) -> Param | None:
    inputs = [param for param in node.params or () if param.role is Role.INPUT]
    position = 0 if "all_reduce" in node.name else 1  # reduce_scatter(output, input)
    return inputs[position] if len(inputs) > position else None


def _matmul_from_reduce(node: Node, group: _Group) -> None:
    """A Row (forward) or Column (backward) layer's matmuls: each takes its output's statistics
    from the first reduce whose input is exactly that output, its inputs TP-merged."""
    row_forward, column_backward, _ = _linear_kind(node)
    if not (row_forward or column_backward):
        return
    matmuls = [child for child in node.children if "matmul" in child.name]
    reduces = [child for child in node.children if any(op in child.name for op in _REDUCES)]
    for matmul in matmuls:
        outputs = [param for param in matmul.params or () if param.role is Role.OUTPUT]
        if not outputs:
            continue
        for reduce in reduces:
            reduce_outputs = [p for p in reduce.params or () if p.role is Role.OUTPUT]
            reduce_input = _reduce_input(reduce)
            if not reduce_outputs or reduce_input is None:
                continue
            if not same_statistics(outputs[0], reduce_input, uncertain=False):
                continue
            counterparts = group.counterparts(matmul)
            inputs, _ = _differing(matmul, counterparts, compare=True)
            if inputs:
                group.record(matmul, counterparts, inputs)
            source = reduce_outputs[0]
            output = outputs[0]
            output.max, output.min = source.max, source.min
            output.mean, output.norm = source.mean, source.norm
            merge = group.merges.setdefault(matmul.name, NodeMerge())
            merge.info.append(
                f"The output of this data is merged from {source.full_name(reduce.name)}"
            )
            reduces.remove(reduce)
            break


def _column_to_row(node: Node, group: _Group) -> None:
    """Force-merge a forward Column layer's siblings up to the last Row layer after it."""
    if node.name in group.merges or not _linear_kind(node)[2] or node.parent is None:
        return
    siblings = node.parent.children
    start = siblings.index(node)
    ends = [i for i, sibling in enumerate(siblings) if "RowParallelLinear" in sibling.name]
    end = ends[-1] if ends else -1
    if end <= start:
        return
    column, row = siblings[start], siblings[end]
    stack = list(siblings[start : end + 1])
    while stack:
        current = stack.pop()
        stack.extend(reversed(current.children))
        if current.name in group.merges or current.name.startswith("Distributed"):
            continue
        counterparts = group.counterparts(current)
        inputs, outputs = _differing(current, counterparts, compare=False)
        if not (inputs or outputs):
            continue
        inside = "matmul" in current.name
        if current is column or (inside and current.parent is column):
            inputs.pop("input.0", None)
        elif current is row or (inside and current.parent is row):
            outputs = {}
            inputs.pop("parameters.bias", None)
        group.record(current, counterparts, {**inputs, **outputs})


def merge_tp(
    graphs: Sequence[Graph],
    ranks: Sequence[int],
    mapping: Mapping[int, Sequence[int]] | None = None,
    node_ranks: Mapping[Node, int] | None = None,
) -> Merges:
    """Merge ``graphs`` (one per rank of a TP group, ``ranks`` in the same order, the main
    rank first) into ``graphs[0]``; return how each merged node was made. ``mapping``: after
    a pipeline merge, a stage's rank to the ranks of its TP peers (see _counterparts);
    ``node_ranks``: the rank each node was dumped on, where a pipeline merge moved some."""
    if len(graphs) < 2:
        return {}
    main, others = graphs[0], graphs[1:]
    if node_ranks is None:
        node_ranks = {
            node: rank
            for graph, rank in zip(graphs, ranks, strict=True)
            for node in graph.nodes.values()
        }
    group = _Group(others, node_ranks, mapping)
    for node in main.walk():  # a module before its children: its matmuls are its to merge
        parent = node.parent
        if (
            parent is None
            or parent.type is not NodeType.MODULE
            or parent.name in UNMERGED_PARENTS
            or node.name.startswith("Distributed")
            or node.name in group.merges
        ):
            continue
        _matmul_from_reduce(node, group)
        counterparts = group.counterparts(node)
        inputs, outputs = _differing(node, counterparts, compare=True)
        if inputs or outputs:
            group.record(node, counterparts, {**inputs, **outputs})
    for node in list(main.walk()):
        _column_to_row(node, group)
    return group.merges
