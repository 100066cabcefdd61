"""Reading a file under a rule set: msprobe's (as stored in tb_nodes and gb_arrays' level), or
graphboard's dtype-aware verdicts (store/rule_columns.py).

Every read that answers with verdicts (tree rows, badges, filter, first error, counts) takes
the rule set as an argument and reads the graph's columns through :func:`ruled_view`; nothing
about it is kept on the reader. Manual matching always works under msprobe's rules, which
tb_graph_ascend shares.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from graphboard.compare.result import PRECISION_INDEX, Level
from graphboard.graph.model import API_COLLECTION_PREFIX, TARGET_SIDE
from graphboard.store import rule_columns
from graphboard.store.columns import first_introduced
from graphboard.store.graph_views import VIEWS, GraphKey, GraphView
from graphboard.store.reader.config import GraphStats
from graphboard.store.reader.opening import VisDb
from graphboard.store.reader.overlay import graph_view


def ruled_view(db: VisDb, key: GraphKey, rules: str = rule_columns.MSPROBE) -> GraphView:
    """The graph's columns (manual matches applied) under ``rules``: a ValueError names the
    known rule sets; a file without dtype-aware verdicts raises StoreError for a target graph."""
    base = graph_view(db, key)
    if rules == rule_columns.MSPROBE or key.side != TARGET_SIDE:
        return base  # the golden side carries no verdicts under either rule set
    rules = rule_columns.check_rules(rules)
    return VIEWS.get((db.identity, key, rules), lambda: _ruled(db, base, rules))


def _ruled(db: VisDb, base: GraphView, rules: str) -> GraphView:
    columns = rule_columns.rule_set_columns(base.columns, rules, db.path.name)
    # changed since the build (manual matches): msprobe's rules rescored those, these
    # did not, so their dtype-aware level is withheld rather than left stale
    if base.manual or base.base_level:
        level = columns["level"].copy()
        level[list(base.manual | base.base_level.keys())] = -1
        columns["level"] = level
    # colours follow the rule set: each judged node's precision index is its level's
    # (msprobe's own stays in tb_nodes, and in every answer under msprobe's rules)
    level = columns["level"]
    precision: dict[int, float | None] = {
        int(order): PRECISION_INDEX[Level(int(level[order]))]
        for order in np.flatnonzero(level >= 0)
    }
    precision.update((int(order), None) for order in np.flatnonzero(level < 0))
    return replace(base, columns=columns, precision=precision, _names=None, _exec_perm=None)


def rule_counts(db: VisDb, key: GraphKey, rules: str) -> dict[str, int]:
    """pass / warning / error / not judged counts of the target's own verdicts under ``rules``
    (API collections, whose verdict is their children's worst, counted through them)."""
    view = ruled_view(db, key, rules)
    collections = np.fromiter(
        (name.startswith(API_COLLECTION_PREFIX) for name in view.names), bool, len(view)
    )
    own = view.columns["level"][~collections]
    counts = {level.label: int((own == int(level)).sum()) for level in Level}
    stored = graph_view(db, key).columns[rule_columns.LEVEL][~collections]
    counts[rule_columns.NOT_JUDGED_LABEL] = int((stored == rule_columns.NOT_JUDGED).sum())
    return counts


def apply_rules(db: VisDb, stats: list[GraphStats], rules: str) -> list[GraphStats]:
    """``stats`` (gb_graphs, msprobe's counts) with the counts of the rule set ``rules``."""
    if rules == rule_columns.MSPROBE:
        return stats
    for graph in stats:
        if graph.side != TARGET_SIDE or graph.matched is None:
            continue
        key = GraphKey(graph.side, graph.step, graph.rank)
        counts = rule_counts(db, key, rules)
        graph.pass_count = counts["pass"]
        graph.warning_count = counts["warning"]
        graph.error_count = counts["error"]
        view = ruled_view(db, key, rules)
        graph.first_error = view_name(view, first_introduced(view.columns["introduced"]))
    return stats


def view_name(view: GraphView, order: int | None) -> str | None:
    return None if order is None else str(view.names[order])
