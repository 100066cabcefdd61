"""A parameter's statistics as numbers for the viewer (its charts and number formatting), so
the viewer never reads a number out of a display string.

They come from the reader's Params: typed from gb_params in graphboard's files, parsed once
here in Python from the display strings of msprobe's files. JSON has no NaN or infinities:
those travel as the strings "nan", "inf" and "-inf"; null is no number (none recorded, text,
or a boolean tensor's True / False).
"""

from __future__ import annotations

import math

from graphboard.dump.records import Param, Stat
from graphboard.graph.node_merge import RankStats
from graphboard.server import schemas


def stat_number(value: Stat | object) -> schemas.StatNumber:
    """A Param's statistic, or a rank's (graph/node_merge.py RankStats, untyped), as a number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if not isinstance(value, float):
        return None
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def param_stats(param: Param) -> schemas.ParamStats:
    return schemas.ParamStats(
        max=stat_number(param.max),
        min=stat_number(param.min),
        mean=stat_number(param.mean),
        norm=stat_number(param.norm),
    )


def stats_by_name(node_name: str, params: list[Param]) -> dict[str, schemas.ParamStats]:
    """Each parameter's statistics by its full name, as the node view's rows name them."""
    return {param.full_name(node_name): param_stats(param) for param in params}


def rank_stats_by_name(
    node_name: str, ranks: dict[str, list[RankStats]]
) -> dict[str, list[schemas.RankStatsOut]]:
    """Each merged parameter's per-rank statistics (the reader's ``rank_stats``) by its full
    name, as ``stats_by_name`` names them."""
    return {
        f"{node_name}.{key}": [
            schemas.RankStatsOut(
                rank=rank,
                max=stat_number(top),
                min=stat_number(bottom),
                mean=stat_number(mean),
                norm=stat_number(norm),
            )
            for rank, top, bottom, mean, norm in stats
        ]
        for key, stats in ranks.items()
    }
