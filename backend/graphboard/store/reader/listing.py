"""Every graph of a .vis.db as it is now: the build's counts, moved by what users matched
since, under a rule set."""

from __future__ import annotations

from graphboard.store.graph_views import GraphKey
from graphboard.store.reader.config import GraphStats
from graphboard.store.reader.graphs import stored_graphs
from graphboard.store.reader.opening import VisDb
from graphboard.store.reader.overlay import changed_since_build, recount
from graphboard.store.reader.rules import apply_rules, ruled_view
from graphboard.store.reader.tree import first_error
from graphboard.store.rule_columns import MSPROBE


def graphs(db: VisDb, rules: str = MSPROBE) -> list[GraphStats]:
    """Every graph of the file, in step, rank, side (NPU first) order, with manual matches
    applied, counted under ``rules``."""
    stats = stored_graphs(db)
    for graph in stats:
        key = GraphKey(graph.side, graph.step, graph.rank)
        if changed_since_build(db, key):
            recount(graph, ruled_view(db, key, rules))
            first = first_error(db, key, rules)
            graph.first_error = first.name if first is not None else None
    return apply_rules(db, stats, rules)
