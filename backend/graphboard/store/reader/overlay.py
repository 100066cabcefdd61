"""The matching overlay: a graph's columns with what changed since the build applied.

Manual matches live in graphboard's overlay tables (:mod:`graphboard.store.matches`); rows
msprobe's viewer re-matched in place carry ``modified = 1``. Both are applied to the stored
columns on load (:mod:`graphboard.store.graph_views`), with the roll-ups recomputed, so every
answer the reader gives already includes them; a pairing's rescored parameter dicts stand in
for the stored ones (:func:`manual_data`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from graphboard.compare.result import Level, label_of_code, level_of_precision
from graphboard.errors import StoreError
from graphboard.graph.model import API_COLLECTION_PREFIX
from graphboard.graph.sides import Side
from graphboard.store import arrays, matches, msprobe_columns
from graphboard.store.graph_views import VIEWS, GraphKey, GraphView
from graphboard.store.reader.config import GraphStats
from graphboard.store.reader.opening import Source, VisDb
from graphboard.store.reader.stored import json_or
from graphboard.store.schema import counterpart_in_link


@dataclass(slots=True)
class ManualPair:
    target: str
    golden: str
    precision_index: float | None
    level: str | None


class _Change(NamedTuple):
    """A node's state changed since the build (re-matched or manually (un)paired)."""

    order: int
    manual: bool
    matched: bool
    counterpart: int  # node_order on the other side, -1 for none
    level: int  # -1 for none
    precision: float | None
    introduced: int


def changed_since_build(db: VisDb, key: GraphKey) -> bool:
    """Whether a user's match or msprobe's viewer changed the graph since the build."""
    if (
        db.has_overlay
        and db.conn.execute(
            f"SELECT 1 FROM main.{matches.OVERLAY_TABLE} "
            "WHERE data_source = ? AND step = ? AND rank = ? LIMIT 1",
            (key.side, key.step, key.rank),
        ).fetchone()
    ):
        return True
    return db.source is Source.GRAPHBOARD and bool(
        db.conn.execute(
            "SELECT 1 FROM main.tb_nodes WHERE step = ? AND rank = ? AND modified = 1 "
            "AND data_source = ? LIMIT 1",
            (key.step, key.rank, key.side),
        ).fetchone()
    )


def recount(graph: GraphStats, view: GraphView) -> None:
    """The build's counts of ``graph`` moved by what changed since, read from its columns
    ``view`` (its first error is the tree's question: :func:`.listing.graphs` asks it)."""
    matched = view.columns["matched"]
    if graph.matched is not None:
        graph.matched = int((matched == 1).sum())
        graph.unmatched = int((matched == 0).sum())
    counts = {
        Level.PASS: graph.pass_count,
        Level.WARNING: graph.warning_count,
        Level.ERROR: graph.error_count,
    }
    levels = view.columns["level"]
    for order, before in view.base_level.items():
        if view.names[order].startswith(API_COLLECTION_PREFIX):
            continue  # counted through its children (store/columns.graph_counts)
        for code, delta in ((before, -1), (int(levels[order]), 1)):
            if code >= 0 and counts[Level(code)] is not None:
                counts[Level(code)] = (counts[Level(code)] or 0) + delta
    graph.pass_count = counts[Level.PASS]
    graph.warning_count = counts[Level.WARNING]
    graph.error_count = counts[Level.ERROR]


def graph_view(db: VisDb, key: GraphKey) -> GraphView:
    """The graph's columns with manual matches applied, under msprobe's rules (cached by
    file identity; :func:`.rules.ruled_view` gives them under another rule set)."""
    return VIEWS.get((db.identity, key), lambda: _load_view(db, key))


def _load_view(db: VisDb, key: GraphKey) -> GraphView:
    stored = arrays.read(db.gb_conn(), key.graph_id, with_names=False)
    if stored is None:
        raise StoreError(f"{db.path.name}: no graph {key.side} step {key.step} rank {key.rank}")
    # The view outlives this request's connection: names come later through their own.
    names_file = db.path if db.source is Source.GRAPHBOARD else db.columns_file_path
    assert names_file is not None

    def load_names() -> arrays.NameTable:
        conn = msprobe_columns.connect_columns_file(names_file)
        try:
            return arrays.read_names(conn, key.graph_id)
        finally:
            conn.close()

    view = GraphView(key, load_names, dict(stored.columns), db.config().compare)
    changes = _changes(db, key)
    if changes:
        _apply(view, changes)
    return view


def _changes(db: VisDb, key: GraphKey) -> list[_Change]:
    """Every node changed since the build: re-matched in msprobe's viewer, then graphboard's overlay."""
    changes: list[_Change] = []
    if db.source is Source.GRAPHBOARD:
        other = Side.from_data_source(key.side).other.data_source
        for order, precision, link, input_text, output_text in db.conn.execute(
            "SELECT node_order, precision_index, matched_node_link, input_data, output_data "
            "FROM main.tb_nodes "
            "WHERE step = ? AND rank = ? AND modified = 1 AND data_source = ?",
            (key.step, key.rank, key.side),
        ).fetchall():
            counterpart = counterpart_in_link(link)
            found = (
                db.conn.execute(
                    "SELECT node_order FROM main.tb_nodes WHERE step = ? AND rank = ? "
                    "AND data_source = ? AND node_name = ?",
                    (key.step, key.rank, other, counterpart),
                ).fetchone()
                if counterpart
                else None
            )
            level = level_of_precision(precision)
            code = int(level) if level is not None else -1
            introduced = msprobe_columns.introduced_level(
                code, json_or(input_text, {}), json_or(output_text, {})
            )
            changes.append(
                _Change(
                    int(order),
                    False,
                    counterpart is not None,
                    int(found[0]) if found else -1,
                    code,
                    precision,
                    introduced,
                )
            )
    if db.has_overlay:
        for (
            order,
            manual,
            matched,
            counterpart,
            level,
            precision,
            introduced,
        ) in db.conn.execute(
            f"SELECT node_order, manual, matched, counterpart_order, level, precision_index, "
            f"introduced FROM main.{matches.OVERLAY_TABLE} "
            "WHERE data_source = ? AND step = ? AND rank = ?",
            (key.side, key.step, key.rank),
        ).fetchall():
            changes.append(
                _Change(
                    int(order),
                    bool(manual),
                    bool(matched),
                    -1 if counterpart is None else int(counterpart),
                    -1 if level is None else int(level),
                    precision,
                    int(introduced),
                )
            )
    return changes


def _apply(view: GraphView, changes: list[_Change]) -> None:
    columns = view.columns
    for name in ("matched", "counterpart", "level", "introduced"):
        columns[name] = np.array(columns[name], copy=True)
    manual: set[int] = set()
    for order, is_manual, matched, counterpart, level, precision, introduced in changes:
        view.base_level.setdefault(order, int(columns["level"][order]))
        if view.compared:
            columns["matched"][order] = 1 if matched else 0
        columns["counterpart"][order] = counterpart
        columns["level"][order] = level
        columns["introduced"][order] = introduced
        view.precision[order] = precision
        if is_manual:
            manual.add(order)
    view.manual = frozenset(manual)
    arrays.roll_up(columns, view.compared)


def manual_data(
    db: VisDb, key: GraphKey, name: str | None = None
) -> dict[int, tuple[str | None, str | None]]:
    """(input_data, output_data) as JSON text, by node_order, of the graph's manually
    (un)paired nodes (or of the one named): a pairing rescores its nodes' parameters, and
    these stand in for ``tb_nodes``' own wherever a node's data is read (None or empty:
    the stored one stands)."""
    manual = graph_view(db, key).manual
    if not manual:
        return {}
    query = (
        f"SELECT node_order, input_data, output_data FROM main.{matches.OVERLAY_TABLE} "
        "WHERE data_source = ? AND step = ? AND rank = ?"
    )
    bound: tuple[object, ...] = (key.side, key.step, key.rank)
    if name is not None:
        query += " AND node_name = ?"
        bound += (name,)
    return {
        int(order): (input_text, output_text)
        for order, input_text, output_text in db.conn.execute(query, bound)
        if int(order) in manual
    }


def manual_pairs(db: VisDb, step: int, rank: int) -> list[ManualPair]:
    """Pairs users made that still stand, in the target's node order."""
    if not db.has_overlay:
        return []
    return [
        ManualPair(str(target), str(golden), precision, label_of_code(level))
        for target, golden, precision, level in db.conn.execute(
            f"SELECT node_name, counterpart, precision_index, level FROM main.{matches.OVERLAY_TABLE} "
            "WHERE data_source = ? AND step = ? AND rank = ? AND manual = 1 AND matched = 1 "
            "ORDER BY node_order",
            (Side.TARGET.data_source, step, rank),
        )
    ]


def match_history(db: VisDb, step: int, rank: int) -> list[matches.Action]:
    if not db.has_overlay:
        return []
    return matches.actions(db.conn, step, rank)
