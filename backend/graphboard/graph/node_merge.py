"""What a parallel merge leaves on a node of the merged graph (``Node.merge``).

The merge (graphboard.merge) makes it and the store (store/writer.py, store/rank_stats.py)
writes it: it lives with the graph model, below both, so the store need not import the merge.
"""

from __future__ import annotations

from dataclasses import dataclass, field

RankStats = tuple[int, object, object, object, object]  # rank, Max, Min, Mean, Norm


@dataclass(slots=True)
class NodeMerge:
    """How one node of the merged graph was made: msprobe's ``parallel_merge_info`` lines,
    and each rank's own statistics of every parameter that was merged."""

    info: list[str] = field(default_factory=list)
    ranks: dict[str, list[RankStats]] = field(default_factory=dict)
