"""A node's worst parameter row under msprobe's rules, as the verdict's first error shows it:
the most severe result first, then the largest error-like metric."""

from __future__ import annotations

import math
from typing import Any

from graphboard.graph.model import GOLDEN_SIDE
from graphboard.store.param_pairs import paired_stored, stored_messages
from graphboard.store.reader import GraphKey, NodeSummary, VisDb, graphs, node_data
from graphboard.verdict.models import WorstMetricOut

# Error-like metrics, where bigger is worse (the viewer's "worst cell" uses the same rule;
# cosine similarity runs the other way and never counts).
_WORST_HINTS = ("relativeerr", "abserr", "diff", "eucdist", "err_ratio", "err ratio")
_SEVERITY = {"error": 3, "warning": 2, "pass": 1}


def _number(shown: Any) -> float | None:
    if isinstance(shown, bool):
        return None
    if isinstance(shown, int | float):
        return float(shown)
    if not isinstance(shown, str):
        return None
    text = shown.strip().removesuffix("%")
    try:
        return float(text)
    except ValueError:
        return None


def _largest_metric(comparison: dict[str, Any]) -> tuple[tuple[int, float], str, Any] | None:
    """The row's largest error-like metric: relative errors rank before absolute ones (they
    compare across magnitudes), NaN and infinity before any finite value."""
    best: tuple[tuple[int, float], str, Any] | None = None
    for metric, shown in comparison.items():
        if not any(hint in metric.lower() for hint in _WORST_HINTS):
            continue
        value = _number(shown)
        if value is None or value == 0:
            continue
        magnitude = math.inf if math.isnan(value) else abs(value)
        score = (1 if "relative" in metric.lower() else 0, magnitude)
        if best is None or score > best[0]:
            best = (score, metric, shown)
    return best


def worst_metric(db: VisDb, key: GraphKey, summary: NodeSummary) -> WorstMetricOut | None:
    """The node's worst parameter row: the most severe result first (an error row may have
    no numeric metric at all, e.g. differing scalar arguments), then the largest metric."""
    target = node_data.node(db, key, summary.name)
    if target is None:
        return None
    golden_key = GraphKey(GOLDEN_SIDE, key.step, key.rank)
    golden = None
    if summary.counterpart and graphs.has_graph(db, golden_key):
        golden = node_data.node(db, golden_key, summary.counterpart)
    best: tuple[tuple[int, int, float], WorstMetricOut] | None = None
    # the rows the node view shows (server.present.paired_rows), read straight from the pairs
    for row in paired_stored(target, golden):
        stored_result = row.comparison.get("Result")
        result = str(stored_result) if stored_result is not None else None
        largest = _largest_metric(row.comparison)
        severity = _SEVERITY.get((result or "").lower(), 0)
        if largest is None and severity < 2:
            continue
        (relative, magnitude), metric, shown = largest if largest else ((0, 0.0), None, None)
        score = (severity, relative, magnitude)
        if best is None or score > best[0]:
            value = _number(shown) if shown is not None else None
            messages = stored_messages(row.comparison.get("Err_message"))
            best = (
                score,
                WorstMetricOut(
                    parameter=row.key,
                    result=result,
                    metric=metric,
                    value=value if value is not None and math.isfinite(value) else None,
                    shown=str(shown) if shown is not None else None,
                    message=messages[0] if messages else None,
                ),
            )
    return best[1] if best is not None else None
