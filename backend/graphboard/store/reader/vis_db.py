"""Opening a .vis.db for reading: :func:`open_vis_db`, and :class:`VisDb`, the open file.

Reads are plain functions in the reader's modules taking the open file (and a rule set where
verdicts are involved): :mod:`.graphs`, :mod:`.listing`, :mod:`.overlay`, :mod:`.rules`,
:mod:`.summaries`, :mod:`.tree`, :mod:`.node_data`, :mod:`.search`, :mod:`.peers` and
:mod:`.manual_matches`. The methods below only forward to them, for callers outside the
server that still call them as methods; new code calls the functions.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from graphboard.compare.result import Level
from graphboard.dump.records import Param
from graphboard.errors import StoreError
from graphboard.store import matches
from graphboard.store import rank_stats as rank_table
from graphboard.store.graph_views import GraphKey, GraphView
from graphboard.store.reader import (
    graphs,
    listing,
    manual_matches,
    node_data,
    overlay,
    peers,
    search,
    summaries,
    tree,
)
from graphboard.store.reader.config import GraphStats
from graphboard.store.reader.opening import OpenFile, connect
from graphboard.store.reader.peers import PeerLinks
from graphboard.store.rule_columns import MSPROBE


class VisDb(OpenFile):
    """One open .vis.db (see the module's doc: its reads are functions taking it)."""

    def graphs(self, rules: str = MSPROBE) -> list[GraphStats]:
        return listing.graphs(self, rules)

    def stored_graphs(self) -> list[GraphStats]:
        return graphs.stored_graphs(self)

    def meta(self) -> dict[str, Any]:
        return graphs.meta(self)

    def has_graph(self, key: GraphKey) -> bool:
        return graphs.has_graph(self, key)

    def view(self, key: GraphKey) -> GraphView:
        return overlay.graph_view(self, key)

    def manual_data(
        self, key: GraphKey, name: str | None = None
    ) -> dict[int, tuple[str | None, str | None]]:
        return overlay.manual_data(self, key, name)

    def manual_pairs(self, step: int, rank: int) -> list[overlay.ManualPair]:
        return overlay.manual_pairs(self, step, rank)

    def match_history(self, step: int, rank: int) -> list[matches.Action]:
        return overlay.match_history(self, step, rank)

    def summary(
        self, key: GraphKey, name: str, rules: str = MSPROBE
    ) -> summaries.NodeSummary | None:
        return summaries.summary(self, key, name, rules)

    def summaries_by_order(
        self, key: GraphKey, orders: Sequence[int], rules: str = MSPROBE
    ) -> list[summaries.NodeSummary]:
        return summaries.summaries_by_order(self, key, orders, rules)

    def rows_in(
        self, key: GraphKey, select: str, by: str, values: Sequence[object]
    ) -> Iterator[Sequence[Any]]:
        return summaries.rows_in(self, key, select, by, values)

    def root(self, key: GraphKey, rules: str = MSPROBE) -> summaries.NodeSummary | None:
        return tree.root(self, key, rules)

    def children(
        self,
        key: GraphKey,
        parent: str,
        *,
        after: int | None = None,
        limit: int | None = None,
        micro_step: int | None = None,
        rules: str = MSPROBE,
    ) -> summaries.Page:
        return tree.children(
            self, key, parent, after=after, limit=limit, micro_step=micro_step, rules=rules
        )

    def child_names(self, key: GraphKey, parent: str) -> list[tuple[str, int]]:
        return tree.child_names(self, key, parent)

    def ancestors(
        self, key: GraphKey, name: str, rules: str = MSPROBE
    ) -> list[summaries.NodeSummary] | None:
        return tree.ancestors(self, key, name, rules)

    def first_error(self, key: GraphKey, rules: str = MSPROBE) -> summaries.NodeSummary | None:
        return tree.first_error(self, key, rules)

    def worst_descendant(
        self, key: GraphKey, name: str, rules: str = MSPROBE
    ) -> summaries.NodeSummary | None:
        return tree.worst_descendant(self, key, name, rules)

    def node(self, key: GraphKey, name: str, rules: str = MSPROBE) -> node_data.NodeRecord | None:
        return node_data.node(self, key, name, rules)

    def stored_data(
        self, key: GraphKey, name: str
    ) -> tuple[dict[str, Any], dict[str, Any], str | None] | None:
        return node_data.stored_data(self, key, name)

    def params(self, key: GraphKey, name: str) -> list[Param] | None:
        return node_data.params(self, key, name)

    def rank_stats(self, key: GraphKey, node_order: int) -> rank_table.NodeRanks:
        return node_data.rank_stats(self, key, node_order)

    def params_by_order(self, key: GraphKey, orders: Sequence[int]) -> dict[int, list[Param]]:
        return node_data.params_by_order(self, key, orders)

    def stored_nodes(self, key: GraphKey, *, stacks: bool = False) -> list[node_data.StoredNode]:
        return node_data.stored_nodes(self, key, stacks=stacks)

    def iter_stored_nodes(
        self, key: GraphKey, *, stacks: bool = False
    ) -> Iterator[node_data.StoredNode]:
        return node_data.iter_stored_nodes(self, key, stacks=stacks)

    def stored_nodes_at(
        self, key: GraphKey, orders: Sequence[int]
    ) -> dict[int, node_data.StoredNode]:
        return node_data.stored_nodes_at(self, key, orders)

    def module_names(self, key: GraphKey, module: str | None = None) -> list[tuple[int, str]]:
        return node_data.module_names(self, key, module)

    def dicts_of(
        self, key: GraphKey, orders: Sequence[int], column: str
    ) -> dict[int, dict[str, Any]]:
        return node_data.dicts_of(self, key, orders, column)

    def orders_of_names(self, key: GraphKey, names: Sequence[str]) -> dict[str, int]:
        return node_data.orders_of_names(self, key, names)

    def search(
        self,
        key: GraphKey,
        text: str,
        *,
        regex: bool = False,
        after: int | None = None,
        limit: int = 100,
        deadline: float | None = None,
        rules: str = MSPROBE,
    ) -> summaries.Page:
        return search.find_names(
            self, key, text, regex=regex, after=after, limit=limit, deadline=deadline, rules=rules
        )

    def filter(
        self,
        key: GraphKey,
        *,
        levels: Sequence[Level] = (),
        overflows: Sequence[str] = (),
        unmatched: bool = False,
        leaves_only: bool = False,
        after: int | None = None,
        limit: int = 100,
        rules: str = MSPROBE,
    ) -> summaries.Page:
        return search.filter_by(
            self,
            key,
            levels=levels,
            overflows=overflows,
            unmatched=unmatched,
            leaves_only=leaves_only,
            after=after,
            limit=limit,
            rules=rules,
        )

    def peers(self, key: GraphKey, name: str, rules: str = MSPROBE) -> PeerLinks | None:
        return peers.peer_links(self, key, name, rules)

    def matching_write(self) -> AbstractContextManager[None]:
        return manual_matches.matching_write(self)

    def record_action(
        self,
        kind: str,
        step: int,
        rank: int,
        pair: tuple[str, str] | None,
        options: dict[str, Any],
        rows: Iterable[matches.OverlayRow],
        paired: Sequence[tuple[str, str]],
    ) -> int:
        return manual_matches.record_action(self, kind, step, rank, pair, options, rows, paired)

    def undo_last_action(self, step: int, rank: int) -> tuple[matches.Action, int] | None:
        return manual_matches.undo_last_action(self, step, rank)


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
