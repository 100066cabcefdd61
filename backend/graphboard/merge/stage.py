"""The merge stage: a replica's rank graphs, read and built one by one, made one graph.

Only the tensor-parallel strategies merge yet (TP alone, or TP with data-parallel replicas);
pipeline strategies are refused by name. The merged graph is the main rank's, changed in place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from graphboard.build import stages
from graphboard.dump.layout import RankDir
from graphboard.graph.model import Graph
from graphboard.merge.apis import merge_api_collections
from graphboard.merge.flags import ParallelFlags, ParallelFlagsError
from graphboard.merge.layout import Replica, Strategy, strategy_of
from graphboard.merge.tp import Merges, merge_tp

MERGEABLE = frozenset({Strategy.NO_PARALLEL, Strategy.TP})


@dataclass(slots=True)
class MergedGraph:
    graph: Graph
    merges: Merges  # node name -> how it was merged (parallel_merge_info, each rank's statistics)


def merge_replica(
    flags: ParallelFlags,
    replica: Replica,
    ranks: Mapping[int, RankDir],
    label: str,
    step: int,
) -> MergedGraph:
    """Read the replica's ranks and merge them into its main rank's graph."""
    strategy = strategy_of(flags)
    if strategy not in MERGEABLE:
        raise ParallelFlagsError(
            f"{flags.describe()}: the {strategy} merge is not implemented yet; graphboard "
            f"merges tensor-parallel layouts (pp 1) so far"
        )
    graphs = []
    for rank in replica.tp_group:
        side = stages.Side(ranks[rank], label, step, rank)
        graphs.append(stages.hierarchy(side, stages.read(side)))
    merge_api_collections(graphs, replica.tp_group)
    merges = merge_tp(graphs, replica.tp_group)
    main = graphs[0]
    for graph in graphs[1:]:
        main.warnings.extend(graph.warnings)
    main.number()  # msprobe's node_order over the merged tree
    return MergedGraph(main, merges)
