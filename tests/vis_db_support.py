"""What tests read back from a .vis.db to tell whether two builds of the same dumps agree."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def nodes_per_graph(path: Path) -> list[tuple[str, int, int, int]]:
    """(side, step, rank, node count) of every graph in the file, sorted."""
    with sqlite3.connect(path) as conn:
        return sorted(
            conn.execute(
                "SELECT data_source, step, rank, count(*) FROM tb_nodes "
                "GROUP BY data_source, step, rank"
            ).fetchall()
        )
