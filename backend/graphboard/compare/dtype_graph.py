"""The dtype-aware verdicts of a whole target graph, at build time, beside msprobe's.

Per node :func:`dtype_aware.judge_node`, with two facts only the graph knows: what a backward
node reads besides its dumped inputs (its forward twin's tensors, saved for the gradient),
and that an error a node inside a module introduces is the module's too (the module's own
verdict becomes a warning that points inside, so the first introduced error is the deepest
node where it arises). API collections take their worst child's verdict, as in msprobe's set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from graphboard.compare.dtype_aware import NodeVerdict, Verdict, judge_node
from graphboard.compare.engine import api_collections
from graphboard.compare.result import DataMode
from graphboard.graph.model import Graph, Node, NodeType

if TYPE_CHECKING:
    from graphboard.compare.noise_reference import NoiseReference

RULE_SET = "dtype-aware"


@dataclass(slots=True)
class GraphVerdicts:
    """Per target node name: its dtype-aware verdict, and whether it introduces an error."""

    mode: DataMode
    verdict: dict[str, Verdict] = field(default_factory=dict)
    introduced: set[str] = field(default_factory=set)
    reference: NoiseReference | None = None  # the noise reference (-nr) judged against


def forward_twin(name: str) -> str | None:
    """The forward node of a backward one: ``X.7.backward`` -> ``X.7.forward`` (APIs),
    ``M.backward.0`` -> ``M.forward.0`` (modules); None for any other name."""
    head, dot, tail = name.rpartition(".backward")
    if not dot or (tail and not tail[1:].isdigit()):
        return None
    return f"{head}.forward{tail}"


def _judged(
    node: Node, mode: DataMode, hidden: float, reference: NoiseReference | None = None
) -> NodeVerdict | None:
    comparison = node.comparison
    if comparison is None:
        return None
    noise = reference.noise_of(node.name) if reference is not None else None
    return judge_node(node.name, comparison.rows, mode, hidden, False, noise)


def read_unseen(verdict: NodeVerdict) -> float:
    """What a forward node leaves for its backward: its inputs' and outputs' differences."""
    return verdict.input_difference + verdict.output_difference


def score_graph(
    target: Graph, mode: DataMode, reference: NoiseReference | None = None
) -> GraphVerdicts:
    """Judge every scored node of ``target`` (compare_graphs has scored it); with a noise
    reference's measurements (compare/noise_reference.py), against the noise it measured."""
    result = GraphVerdicts(mode)
    if mode is DataMode.STRUCTURE:
        return result
    judged: dict[str, NodeVerdict] = {}
    backward: list[Node] = []
    for node in target.nodes.values():
        if node.comparison is None or node.type is NodeType.API_COLLECTION:
            continue
        if forward_twin(node.name) is not None:
            backward.append(node)  # after every forward node: it reads their tensors
            continue
        found = _judged(node, mode, 0.0, reference)
        if found is not None:
            judged[node.name] = found
    for node in backward:
        twin = judged.get(forward_twin(node.name) or "")
        found = _judged(node, mode, read_unseen(twin) if twin is not None else 0.0, reference)
        if found is not None:
            judged[node.name] = found
    verdicts, introduced = result.verdict, result.introduced
    for name, found in judged.items():
        verdicts[name] = found.verdict
        if found.introduced:
            introduced.add(name)
    _attribute_inside(target, result)
    for node in api_collections(target):  # children first: a collection may hold collections
        worst = [verdicts[child.name] for child in node.children if child.name in verdicts]
        verdicts[node.name] = max(worst, default=Verdict.PASS)
    return result


def _attribute_inside(target: Graph, result: GraphVerdicts) -> None:
    """A module with an introduced error inside it introduces none itself: a warning."""
    if not result.introduced:
        return
    below: set[str] = set()  # nodes with an introduced error strictly inside
    for node in target.ordered():  # children before parents
        name = node.name
        inside = name in below
        if inside and name in result.introduced:
            result.introduced.discard(name)
            result.verdict[name] = Verdict.WARNING
        if (inside or name in result.introduced) and node.parent is not None:
            below.add(node.parent.name)
