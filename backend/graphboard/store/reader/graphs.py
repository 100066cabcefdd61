"""What a .vis.db holds as built: its graphs (``gb_graphs``) and graphboard's build metadata."""

from __future__ import annotations

from typing import Any

from graphboard.store.graph_views import GraphKey
from graphboard.store.reader.config import GraphStats
from graphboard.store.reader.opening import Source, VisDb
from graphboard.store.reader.stored import json_or


def meta(db: VisDb) -> dict[str, Any]:
    """graphboard's build metadata (``gb_meta``); empty for msprobe's files."""
    if db.source is not Source.GRAPHBOARD:
        return {}
    return {
        str(key): json_or(value, value)
        for key, value in db.conn.execute("SELECT key, value FROM main.gb_meta")
    }


def stored_graphs(db: VisDb) -> list[GraphStats]:
    """Every graph of the file as the build counted it, in step, rank, side (NPU first)
    order; :func:`.listing.graphs` recounts those a user's matches changed."""
    return [
        GraphStats(str(side), int(step), int(rank), int(count), int(micro or 1), *rest)
        for side, step, rank, count, micro, *rest in db.gb_conn().execute(
            "SELECT data_source, step, rank, node_count, micro_steps, matched, unmatched, "
            "pass_count, warning_count, error_count, first_error FROM gb_graphs "
            "ORDER BY step, rank, data_source DESC"
        )
    ]


def has_graph(db: VisDb, key: GraphKey) -> bool:
    return (
        db.gb_conn()
        .execute(
            "SELECT 1 FROM gb_graphs WHERE data_source = ? AND step = ? AND rank = ?",
            (key.side, key.step, key.rank),
        )
        .fetchone()
        is not None
    )
