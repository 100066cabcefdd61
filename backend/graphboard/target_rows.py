"""Score a task's target graph and write its rows, on both cores when a process writes the part.

Scoring the matched nodes and formatting their rows are the last long stages of a compare
(27k records a side: ~0.5 s each; a million: ~20 s each), and they are per node. When an
InsertProcess writes the part, its ``in_two`` forks a helper that scores and formats the
first rows while this process does the rest; the helper hands back only
what the summaries need of its nodes (their precision, level and where an error starts).

API collections take their children's worst index, and their children may fall in either
half: they and their children are scored before the split, by this process.
"""

from __future__ import annotations

from graphboard.compare.engine import (
    api_collections,
    compare_graphs,
    compare_nodes,
    settle_collections,
)
from graphboard.compare.result import DataMode, Level, NodeComparison
from graphboard.graph.model import Graph, Node
from graphboard.store import writer
from graphboard.store.insert_process import InsertProcess
from graphboard.store.statements import NodeWriter

# Below this many nodes one process does it all: a fork costs more than it saves.
SPLIT_MIN_NODES = 4000

# The helper's share of the work. It runs a little slower than this process: every page it
# writes is first copied from this one, and the writing process takes its rows as they come,
# on the same two cores. Measured with a 40% share, the helper took 1.8 s per unit of work to
# this process's 1.6 at 27k records a side (done at 0.73 s against 0.97 s), 52 s to 47 s at a
# million: 47% gets them done together.
HELPER_SHARE = 0.47

# What this process keeps of a node the helper scored: (name, precision, level, introduced).
Outcome = tuple[str, float | None, Level | None, Level | None]


def score_and_write(
    conn: NodeWriter, target: Graph, golden: Graph | None, mode: DataMode | None
) -> None:
    """Score ``target`` against ``golden`` (a compare) and write its rows and stacks."""
    if not isinstance(conn, InsertProcess) or len(target.nodes) < SPLIT_MIN_NODES:
        if golden is not None and mode is not None:
            compare_graphs(target, golden, mode)
        writer.write_graph(conn, target, golden, mode)
        return
    scored_first: set[str] = set()
    if golden is not None and mode is not None:
        collections = api_collections(target)
        children = [child for collection in collections for child in collection.children]
        compare_nodes(target, golden, mode, children)
        settle_collections(target, mode)
        scored_first = {child.name for child in children}
    rows = writer.prepare_rows(target, golden, mode)
    names = writer.row_order(target)
    split = _split_point(target, names)

    def score(chosen: list[str]) -> list[Node]:
        nodes = [target.nodes[name] for name in chosen if name not in scored_first]
        if golden is not None and mode is not None:
            compare_nodes(target, golden, mode, nodes)
        return nodes

    def helper_part(part: NodeWriter) -> list[Outcome]:
        nodes = score(names[:split])
        writer.write_nodes(part, rows, names[:split])
        # a build, or structure mode, scores nothing: no comparisons, nothing to hand back
        return [
            (node.name, node.precision, node.comparison.level, node.comparison.introduced_level)
            for node in nodes
            if node.comparison is not None
        ]

    def own_part(part: NodeWriter) -> None:
        score(names[split:])
        writer.write_nodes(part, rows, names[split:])

    for name, precision, level, introduced in conn.in_two(helper_part, own_part):
        node = target.nodes[name]
        node.precision = precision
        # the outcome alone: the rows stayed with the helper, which formatted them
        node.comparison = NodeComparison([], level, introduced_level=introduced)
    writer.write_stacks(conn, rows)


def _split_point(target: Graph, names: list[str]) -> int:
    """Where the helper's rows end: HELPER_SHARE of the work, counted in parameters (each
    is scored and rendered) plus one per node."""
    nodes = target.nodes
    weights = [len(nodes[name].params or ()) + 1 for name in names]
    goal = sum(weights) * HELPER_SHARE
    done = 0
    for index, weight in enumerate(weights):
        done += weight
        if done >= goal:
            return index + 1
    return len(names)
