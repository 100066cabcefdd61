"""The merge stage: a replica's rank graphs, read and built one by one, made one graph.

The strategies as msprobe runs them (reference-builder.md 6.1, 6.7): TP merges the replica's
TP group; PP its pipeline chain; TP+PP gathers every rank's API collections, merges each chain,
then merges the chains' first stages across TP; the full strategy (DP above 1) merges each
chain with its own collections, then the chains' first stages. VPP merges the chain as PP
does, then its model chunks (vpp.py). The merged graph is the main rank's, changed in place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from graphboard.dump.layout import RankDir
from graphboard.errors import GraphboardError
from graphboard.graph.builder import DumpRecords, build_graph, read_records
from graphboard.graph.model import GOLDEN_SIDE, TARGET_SIDE, Graph
from graphboard.merge.apis import merge_api_collections, sort_by_rank
from graphboard.merge.flags import ParallelFlags
from graphboard.merge.layout import Replica, Strategy, strategy_of
from graphboard.merge.plan import ReplicaTask
from graphboard.merge.pp import merge_pp
from graphboard.merge.tp import Merges, merge_tp
from graphboard.merge.vpp import has_chunks, merge_vpp

Reader = Callable[[RankDir], DumpRecords]  # the read stage, or one taking what others read


@dataclass(slots=True)
class MergedGraph:
    graph: Graph
    merges: Merges  # node name -> how it was merged (parallel_merge_info, each rank's statistics)


def _tp_mapping(replica: Replica) -> dict[int, list[int]]:
    """After the pipeline merge, a later stage's rank (in the main chain) to the same stage's
    ranks in the other chains: how the TP merge finds a ``_rank<r>`` API's counterparts."""
    main, others = replica.stages[0], replica.stages[1:]
    return {rank: [chain[index] for chain in others] for index, rank in enumerate(main)}


def merge_graphs(flags: ParallelFlags, replica: Replica, graphs: Mapping[int, Graph]) -> Merges:
    """Merge the replica's rank ``graphs`` into its main rank's graph; return the TP merges."""
    strategy = strategy_of(flags)
    # the rank each node was dumped on, before the pipeline merge moves some between graphs
    node_ranks = {node: rank for rank, graph in graphs.items() for node in graph.nodes.values()}
    chains = [[graphs[rank] for rank in chain] for chain in replica.stages]
    firsts = [chain[0] for chain in chains]
    if strategy is Strategy.TPPP:  # every rank's collections first, as msprobe
        ordered = sorted(replica.ranks)
        merge_api_collections([graphs[rank] for rank in ordered], ordered)
    elif strategy in (Strategy.NO_PARALLEL, Strategy.TP):
        merge_api_collections(firsts, replica.tp_group)
    for chain, ranks in zip(chains, replica.stages, strict=True):
        if strategy in (Strategy.PP, Strategy.VPP, Strategy.FULL):
            merge_api_collections(chain, ranks)
        split, joined = merge_pp(chain, ranks)
        if flags.vpp > 1:  # TP+PP and the full strategy merge each chain's chunks too
            if not has_chunks(chain[0]):  # else the flag would be ignored without a word
                raise GraphboardError(
                    f"--vpp {flags.vpp}: the dump of rank {ranks[0]} has no virtual-pipeline "
                    "chunks (no top-level module named Module.<chunk>.*, as a model list "
                    "is dumped); drop --vpp, or give the dump of a virtual-pipeline run"
                )
            merge_vpp(chain[0], flags.vpp, split, joined)
    if len(firsts) < 2:
        return {}
    if strategy is Strategy.FULL:
        merge_api_collections(firsts, replica.tp_group)
    mapping = _tp_mapping(replica) if flags.pp > 1 else None
    merges = merge_tp(firsts, replica.tp_group, mapping, node_ranks)
    if flags.pp > 1:
        sort_by_rank(firsts[0])
    return merges


def merge_replica(
    flags: ParallelFlags,
    replica: Replica,
    ranks: Mapping[int, RankDir],
    label: str,
    step: int,
    read: Reader = read_records,
) -> MergedGraph:
    """Read the replica's ranks and merge them into its main rank's graph. ``read``: the read
    stage (pipeline/task.py hands one that takes what other processes have read)."""
    graphs: dict[int, Graph] = {}
    for rank in replica.ranks:
        graph = build_graph(ranks[rank], label, read(ranks[rank]))
        graph.step, graph.rank = step, rank  # as the build's hierarchy stage names a side
        graphs[rank] = graph
    merges = merge_graphs(flags, replica, graphs)
    main = graphs[replica.main_rank]
    for rank, graph in graphs.items():
        if rank != replica.main_rank:
            main.warnings.extend(graph.warnings)
    main.number()  # msprobe's node_order over the merged tree
    main.merged = True
    return MergedGraph(main, merges)


def merged_sides(task: ReplicaTask, read: Reader = read_records) -> tuple[Graph, Graph | None]:
    """The build core's read and hierarchy stages for a merged replica: each side's ranks
    read (by ``read``) and merged, every merged node carrying its NodeMerge (``Node.merge``)."""
    assert task.options is not None
    sides: list[Graph] = []
    for label, flags, replica, ranks in (
        (TARGET_SIDE, task.options.target, task.target, task.target_ranks),
        (GOLDEN_SIDE, task.options.golden, task.golden, task.golden_ranks),
    ):
        if flags is None or replica is None or ranks is None:
            continue
        merged = merge_replica(flags, replica, ranks, label, task.step, read)
        for name, merge in merged.merges.items():
            merged.graph.nodes[name].merge = merge
        sides.append(merged.graph)
    return sides[0], sides[1] if len(sides) > 1 else None
