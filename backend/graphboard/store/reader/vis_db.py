"""The one object the server reads a .vis.db through, composed of one part per job."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from graphboard.errors import StoreError
from graphboard.store.graph_views import GraphKey
from graphboard.store.reader.config import GraphStats
from graphboard.store.reader.manual_matches import ManualMatches
from graphboard.store.reader.node_data import NodeData
from graphboard.store.reader.opening import connect
from graphboard.store.reader.peers import PeerQueries
from graphboard.store.reader.rules import apply_rules, ruled_view
from graphboard.store.reader.search import SearchAndFilter
from graphboard.store.reader.tree import TreeQueries
from graphboard.store.rule_columns import MSPROBE


class VisDb(TreeQueries, NodeData, SearchAndFilter, PeerQueries, ManualMatches):
    """One open .vis.db. Methods take a :class:`GraphKey`; nothing is kept between calls
    except the per-graph columns, cached by the file's identity."""

    def graphs(self, rules: str = MSPROBE) -> list[GraphStats]:
        """Every graph of the file, in step, rank, side (NPU first) order, with manual
        matches applied, counted under ``rules``."""
        stats = self.stored_graphs()
        for graph in stats:
            key = GraphKey(graph.side, graph.step, graph.rank)
            if self._changed_since_build(key):
                self._recount(graph, ruled_view(self, key, rules))
                first = self.first_error(key, rules)
                graph.first_error = first.name if first is not None else None
        return apply_rules(self, stats, rules)


@contextmanager
def open_vis_db(path: Path, cache_dir: Path, *, writable: bool = False) -> Iterator[VisDb]:
    """Open a .vis.db for reading (or, with ``writable``, for manual matching)."""
    conn = connect(path, writable=writable)
    db: VisDb | None = None
    try:
        db = VisDb(path, conn, cache_dir)
        yield db
    except sqlite3.DatabaseError as error:
        raise StoreError(f"{path.name}: {error}") from None
    finally:
        if db is not None:
            db.close()  # and its connection
        else:
            conn.close()
