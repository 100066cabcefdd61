"""The stages of one task, in order: read, hierarchy, (noise reference), overflow, match,
score, rows, write the part, communication ops.

Each is a function of typed inputs that returns what it makes, and a test can call it alone;
task.py runs them in sequence for one (step, rank). None holds state between calls, forks, or
changes how the interpreter runs (the executor does: graphboard/executor.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphboard.compare import noise_reference
from graphboard.compare.dtype_graph import GraphVerdicts, score_graph
from graphboard.compare.engine import compare_graphs
from graphboard.compare.layer_mapping import LayerMapping
from graphboard.compare.matching import match_graphs
from graphboard.compare.modes import common_mode
from graphboard.compare.noise_reference import NoiseReference
from graphboard.compare.result import DataMode
from graphboard.distributed import CommNode, collect_comm_nodes
from graphboard.dump.layout import RankDir
from graphboard.graph.builder import DumpRecords, build_graph, read_records
from graphboard.graph.model import GOLDEN_SIDE, TARGET_SIDE, Graph, Node
from graphboard.overflow import check_overflow
from graphboard.pipeline.options import BuildOptions, Task
from graphboard.store import reference_table, rule_context_table, writer
from graphboard.store.sink import open_sink


@dataclass(frozen=True, slots=True)
class TaskSide:
    """One side of a task: its rank folder, and the label msprobe's format gives its rows."""

    dump: RankDir
    label: str  # tb_nodes.data_source: Side.TARGET.data_source (NPU) or the golden's (Bench)
    step: int
    rank: int

    @classmethod
    def target_of(cls, task: Task) -> TaskSide:
        return cls(task.target, TARGET_SIDE, task.step, task.rank)

    @classmethod
    def golden_of(cls, task: Task) -> TaskSide | None:
        return None if task.golden is None else cls(task.golden, GOLDEN_SIDE, task.step, task.rank)


def read(folder: RankDir) -> DumpRecords:
    """A rank folder's dump.json parsed into parameters per record."""
    return read_records(folder)


def hierarchy(side: TaskSide, records: DumpRecords) -> Graph:
    """The side's module hierarchy (construct.json, stack.json) with its records attached."""
    graph = build_graph(side.dump, side.label, records)
    graph.step, graph.rank = side.step, side.rank
    return graph


def overflow(graph: Graph) -> int:
    """Each node's overflow level (-oc), set on the node as msprobe's rows carry it; returns
    how many nodes overflow."""
    return check_overflow(graph)


@dataclass(frozen=True, slots=True)
class Matched:
    """What the match stage found: the data mode both sides share, and how many nodes paired."""

    mode: DataMode
    counts: dict[str, int]


def match(target: Graph, golden: Graph, options: BuildOptions) -> Matched:
    """Pair target and golden nodes (default, -fm or -lm), setting each node's ``counterpart``."""
    mode = common_mode(target, golden, layer_mapping=bool(options.layer_mapping))
    mapping: LayerMapping | None = None
    if isinstance(options.layer_mapping, Path):
        mapping = LayerMapping.load(options.layer_mapping)
    elif options.layer_mapping:
        mapping = LayerMapping()
    stats = match_graphs(target, golden, options.match_mode, mapping)
    return Matched(
        mode,
        {
            "target_matched": stats.target_matched,
            "target_unmatched": stats.target_unmatched,
            "golden_matched": stats.golden_matched,
            "golden_unmatched": stats.golden_unmatched,
        },
    )


def score(
    target: Graph, golden: Graph, mode: DataMode, reference: NoiseReference | None = None
) -> GraphVerdicts:
    """Score every matched target node against its golden counterpart (pass / warning / error)
    by msprobe's rules (each node's precision, set on the node as its row carries it), and
    return the dtype-aware verdicts (the rule columns and the -nr table are written from
    them), judged against a noise reference's measurements when there is one."""
    compare_graphs(target, golden, mode)
    verdicts = score_graph(target, mode, reference)
    verdicts.reference = reference
    return verdicts


def measure_reference(reference: Graph, golden: Graph, options: BuildOptions) -> NoiseReference:
    """The noise reference's (-nr) measured difference from the golden per node and tensor,
    its nodes matched to the golden's as the target's are (before the target's matching)."""
    mode = common_mode(reference, golden, layer_mapping=bool(options.layer_mapping))
    mapping: LayerMapping | None = None
    if isinstance(options.layer_mapping, Path):
        mapping = LayerMapping.load(options.layer_mapping)
    elif options.layer_mapping:
        mapping = LayerMapping()
    return noise_reference.measure(reference, golden, mode, options.match_mode, mapping)


@dataclass(slots=True)
class GraphRows:
    """One graph's tb_nodes rows and stacks, formatted as they are taken (a million-node
    graph's rows are never all in memory at once)."""

    prepared: writer.PreparedRows
    nodes: list[Node]  # in row order (writer.row_order)

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return writer.node_rows(self.prepared, self.nodes)


def rows(graph: Graph, counterpart: Graph | None, mode: DataMode | None) -> GraphRows:
    """``graph``'s rows: msprobe's columns, with ``counterpart`` (the other side, in a compare)
    giving matched_node_link."""
    return GraphRows(writer.prepare_rows(graph, counterpart, mode), writer.row_order(graph))


def write_part(
    part: Path, indexed: bool, pairs: list[tuple[Graph, Graph | None]], mode: DataMode | None
) -> Path:
    """The task's part file at ``part``: each graph's rows and stacks (the target's before
    the golden's, as msprobe writes them), then graphboard's summaries and the -nr table.
    ``indexed``: msprobe's indexes too, for a part that becomes the whole .vis.db (parts
    merged into one file are indexed there). Nothing is left at ``part`` on a failure."""
    sink = open_sink(part, indexed=indexed)
    try:
        for graph, counterpart in pairs:
            graph_rows = rows(graph, counterpart, mode)
            writer.write_rows(sink, graph_rows.prepared, graph_rows.nodes)
        sink.finish_nodes()  # the compiled sink indexes meanwhile
        writer.write_summaries(sink, pairs)
        reference_table.write(sink, pairs[0][0])  # -nr only
        for graph, _counterpart in pairs:  # the facts of each target's introducing nodes
            rule_context_table.write(sink, graph)
        sink.close()
    except BaseException:
        sink.abandon()
        part.unlink(missing_ok=True)
        raise
    return part


def communication(graphs: list[Graph]) -> list[CommNode]:
    """The graphs' communication ops, which the finish links across ranks."""
    return [node for graph in graphs for node in collect_comm_nodes(graph)]
