"""Reading a file under a rule set: msprobe's (as stored in tb_nodes and gb_arrays' level), or
graphboard's dtype-aware verdicts (store/rule_columns.py).

A reader opened for one request is switched with :meth:`RuleSets.use_rules`; every answer it
gives after (tree rows, badges, filter, first error, counts) is then under that rule set,
because each reads the graph's columns through :meth:`view`. Manual matching always works
under msprobe's rules, which tb_graph_ascend shares.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from graphboard.compare.result import PRECISION_INDEX, Level
from graphboard.graph.model import API_COLLECTION_PREFIX, TARGET_SIDE
from graphboard.store import rule_columns
from graphboard.store.graph_views import VIEWS, GraphKey, GraphView
from graphboard.store.reader.config import GraphStats
from graphboard.store.reader.overlay import MatchingOverlay


class RuleSets(MatchingOverlay):
    """The graph views of the rule set a request asked for."""

    rules: str = rule_columns.MSPROBE

    def use_rules(self, rules: str) -> None:
        """Answer under ``rules`` (a ValueError names the known ones; a file without
        dtype-aware verdicts raises StoreError when a target graph is first read)."""
        self.rules = rule_columns.check_rules(rules)

    def view(self, key: GraphKey) -> GraphView:
        base = super().view(key)
        if self.rules == rule_columns.MSPROBE or key.side != TARGET_SIDE:
            return base  # the golden side carries no verdicts under either rule set
        return VIEWS.get((self.identity, key, self.rules), lambda: self._ruled(base))

    def _ruled(self, base: GraphView) -> GraphView:
        columns = rule_columns.rule_set_columns(base.columns, self.rules, self.path.name)
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

    def rule_counts(self, key: GraphKey) -> dict[str, int]:
        """pass / warning / error / not judged counts of the target's own verdicts (API
        collections, whose verdict is their children's worst, counted through them)."""
        view = self.view(key)
        collections = np.fromiter(
            (name.startswith(API_COLLECTION_PREFIX) for name in view.names), bool, len(view)
        )
        own = view.columns["level"][~collections]
        counts = {level.label: int((own == int(level)).sum()) for level in Level}
        stored = super().view(key).columns[rule_columns.LEVEL][~collections]
        counts[rule_columns.NOT_JUDGED_LABEL] = int((stored == rule_columns.NOT_JUDGED).sum())
        return counts

    def apply_rules(self, stats: list[GraphStats]) -> list[GraphStats]:
        """``stats`` (gb_graphs, msprobe's counts) with the counts of the chosen rule set."""
        if self.rules == rule_columns.MSPROBE:
            return stats
        for graph in stats:
            if graph.side != TARGET_SIDE or graph.matched is None:
                continue
            key = GraphKey(graph.side, graph.step, graph.rank)
            counts = self.rule_counts(key)
            graph.pass_count = counts["pass"]
            graph.warning_count = counts["warning"]
            graph.error_count = counts["error"]
            first = self.first_error_order(key)
            graph.first_error = view_name(self.view(key), first)
        return stats

    def first_error_order(self, key: GraphKey) -> int | None:
        from graphboard.store.columns import first_introduced

        return first_introduced(self.view(key).columns["introduced"])


def view_name(view: GraphView, order: int | None) -> str | None:
    return None if order is None else str(view.names[order])
