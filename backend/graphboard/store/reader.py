"""The one way to read a .vis.db: graphboard's own files and msprobe's, through one API.

A node is two things: its ``tb_nodes`` row (name, type, parent, stored precision, parameter
dicts, stack, links), read with msprobe's own indexes, and its per-graph columns (structure,
levels, match state, roll-ups), read from ``gb_arrays`` into memory. Files msprobe wrote have
no ``gb_arrays``: the same columns are derived once into a sidecar
(:mod:`graphboard.store.msprobe_columns`). Manual matches live in graphboard's overlay tables
(:mod:`graphboard.store.matches`) and are applied to the columns on load
(:mod:`graphboard.store.graph_views`), so every answer below already includes them.

Reading connections are read-only (``mode=ro``, ``query_only``): viewing never writes to the
user's file and never creates ``-wal``/``-shm`` files beside it (a WAL-mode file without a
``-wal`` is opened ``immutable``, which needs neither). All SQL binds its values; the only
names spliced into SQL are this module's constants.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import orjson

from graphboard.compare.engine import level_of_precision
from graphboard.compare.result import DataMode, Level
from graphboard.dump.records import Param
from graphboard.errors import StoreError
from graphboard.store import arrays, matches, msprobe_columns
from graphboard.store.graph_views import VIEWS, FileIdentity, GraphKey, GraphView, file_identity
from graphboard.store.name_regex import compile_search_regex, required_literal
from graphboard.store.param_parse import params_from_display

__all__ = [
    "FileConfig",
    "GraphKey",
    "GraphStats",
    "ManualPair",
    "NodeRecord",
    "NodeSummary",
    "Page",
    "Peer",
    "PeerLinks",
    "Source",
    "StoredNode",
    "VisDb",
    "compile_search_regex",
    "connect",
    "open_vis_db",
    "required_literal",
]

_LEVEL_NAMES = {int(level): level.label for level in Level}
_SQLITE_HEADER = b"SQLite format 3\x00"
_WAL_VERSION = 2


class Source(StrEnum):
    GRAPHBOARD = "graphboard"  # written by graph_build: gb_* tables inside
    MSPROBE = "msprobe"  # tb_* only: gb_* columns come from a sidecar


@dataclass(slots=True)
class FileConfig:
    """``tb_config``: what the file holds and how to colour it."""

    graph_type: str  # "build" | "compare"
    data_mode: str | None  # msprobe's task: summary | md5 | all | structure; None in a build
    tool_tip: dict[str, Any] | None
    micro_steps: int
    overflow_check: bool
    node_colors: dict[str, dict[str, Any]] | None
    ranks: list[int]
    steps: list[int]

    @property
    def compare(self) -> bool:
        return self.graph_type == "compare"

    @property
    def mode(self) -> DataMode | None:
        try:
            return DataMode(self.data_mode) if self.data_mode else None
        except ValueError:
            return None

    def color_of(self, side: str, precision: float | None, matched: bool | None) -> str | None:
        """The fill tb_graph_ascend gives a node: the unmatched colour, or for a matched target
        node the band holding its precision index; None means plain (white)."""
        if not self.node_colors or not self.compare:
            return None
        if matched is False:
            for color, entry in self.node_colors.items():
                if not isinstance(entry, dict) or not isinstance(entry.get("value"), list):
                    return color
                if not entry["value"]:
                    return color
            return None
        if side != "NPU" or precision is None:
            return None
        for color, entry in self.node_colors.items():
            bounds = entry.get("value") if isinstance(entry, dict) else None
            if isinstance(bounds, list) and len(bounds) == 2:
                low, high = float(bounds[0]), float(bounds[1])
                if low <= precision < high or precision == high == 1:
                    return color
        return None


@dataclass(slots=True)
class GraphStats:
    """One graph of a file (``gb_graphs``), with manual matches applied."""

    side: str
    step: int
    rank: int
    node_count: int
    micro_steps: int
    matched: int | None
    unmatched: int | None
    pass_count: int | None
    warning_count: int | None
    error_count: int | None
    first_error: str | None


@dataclass(slots=True)
class NodeSummary:
    """What a tree row needs: identity, verdicts and what the subtree holds."""

    name: str
    parent: str | None
    node_type: int
    node_order: int
    exec_order: int
    depth: int
    child_count: int
    micro_step: int
    precision_index: float | None
    level: str | None  # pass | warning | error; None when not scored
    overflow: str | None  # medium | high | critical
    matched: bool | None  # None in a build
    counterpart: str | None
    worst_level: str | None
    worst_node: str | None
    error_leaves: int
    warning_leaves: int
    unmatched_leaves: int
    overflow_leaves: int
    worst_overflow: str | None
    introduced: str | None  # a divergence starts here: its level
    manual: bool  # (un)paired by a user
    modified: bool  # re-matched in place by msprobe's viewer


@dataclass(slots=True)
class NodeRecord:
    """A node in full: its summary, stored parameter dicts, stack and links."""

    summary: NodeSummary
    input_data: dict[str, Any]
    output_data: dict[str, Any]
    stack: list[str]
    parallel_merge_info: list[str]
    matched_distributed: Any
    dump_data_dir: str | None

    @property
    def name(self) -> str:
        return self.summary.name


class StoredNode(NamedTuple):
    """A node's stored parameter dicts (and stack), for tables over a whole graph."""

    node_order: int
    name: str
    input_data: dict[str, Any]
    output_data: dict[str, Any]
    stack: list[str]


@dataclass(slots=True)
class Page:
    items: list[NodeSummary]
    next_cursor: int | None
    total: int | None = None
    counts: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class Peer:
    rank: int
    name: str | None  # None: the peer's call was not found
    kind: str | None  # send | receive | send_receive
    stored_precision: str | None  # as msprobe's annotation recorded it
    verdict: str | None  # gb_links: consistent | mismatch | unknown
    reason: str | None
    node: NodeSummary | None  # the peer as it is now; None when not in the file


@dataclass(slots=True)
class PeerLinks:
    communication: str | None
    peers: list[Peer]


@dataclass(slots=True)
class ManualPair:
    target: str
    golden: str
    precision_index: float | None
    level: str | None


# --- connections ---------------------------------------------------------------------------


def _is_wal(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            header = handle.read(20)
    except OSError as error:
        raise StoreError(f"{path.name}: cannot read: {error.strerror or error}") from None
    if len(header) < 20 or not header.startswith(_SQLITE_HEADER):
        raise StoreError(f"{path.name}: not an SQLite database")
    return header[18] == _WAL_VERSION


def connect(path: Path, *, writable: bool = False) -> sqlite3.Connection:
    """A connection to a .vis.db: read-only unless ``writable`` (manual matching)."""
    uri = path.resolve().as_uri()
    if writable:
        _is_wal(path)
        uri += "?mode=rw"
    else:
        uri += "?mode=ro"
        if _is_wal(path) and not path.with_name(path.name + "-wal").exists():
            # Nobody is writing (no -wal): read it as a plain file, creating no -shm.
            uri += "&immutable=1"
    try:
        conn = sqlite3.connect(
            uri, uri=True, timeout=10, isolation_level=None, check_same_thread=False
        )
    except sqlite3.Error as error:
        raise StoreError(f"{path.name}: cannot open: {error}") from None
    if not writable:
        conn.execute("PRAGMA query_only = 1")
        conn.execute("PRAGMA mmap_size = 268435456")
    return conn


def _tables(conn: sqlite3.Connection) -> set[str]:
    """Names of the file's tables and views."""
    return {
        str(row[0])
        for row in conn.execute(
            "SELECT name FROM main.sqlite_master WHERE type IN ('table', 'view')"
        )
    }


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
            db.close()
        conn.close()


def _json_or(text: str | None, default: Any) -> Any:
    if not text:
        return default
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return default


def _level_name(code: int | None) -> str | None:
    return None if code is None or code < 0 else _LEVEL_NAMES.get(int(code))


def _counterpart_of(link: str | None) -> str | None:
    names = _json_or(link, [])
    return str(names[-1]) if isinstance(names, list) and names else None


class _Change(NamedTuple):
    """A node's state changed since the build (re-matched or manually (un)paired)."""

    order: int
    manual: bool
    matched: bool
    counterpart: int  # node_order on the other side, -1 for none
    level: int  # -1 for none
    precision: float | None
    introduced: int


_TB_SELECT = """SELECT t.node_name, t.up_node, t.node_type, t.node_order, t.micro_step_id,
    t.precision_index, t.overflow_level, t.modified FROM main.tb_nodes t"""
_BY_GRAPH = " WHERE t.step = ? AND t.rank = ? AND t.data_source = ?"


class VisDb:
    """One open .vis.db. Methods take a :class:`GraphKey`; nothing is kept between calls
    except the per-graph columns, cached by the file's identity."""

    def __init__(self, path: Path, conn: sqlite3.Connection, cache_dir: Path) -> None:
        self.path = path
        self.conn = conn
        self.cache_dir = cache_dir
        self.identity: FileIdentity = file_identity(path)
        tables = _tables(conn)
        if not {"tb_nodes", "tb_config"} <= tables:
            raise StoreError(f"{path.name}: not a .vis.db (no tb_nodes / tb_config table)")
        self.source = Source.GRAPHBOARD if "gb_arrays" in tables else Source.MSPROBE
        self.sidecar_path: Path | None = None
        self._sidecar: sqlite3.Connection | None = None
        # gb_peer_links (a view: one row per node and peer, collectives included) replaced
        # reading gb_links directly; files built before it only have gb_links.
        self.links_source = next(
            (name for name in ("gb_peer_links", "gb_links") if name in tables), None
        )
        self.has_overlay = matches.OVERLAY_TABLE in tables
        self._config: FileConfig | None = None

    def close(self) -> None:
        if self._sidecar is not None:
            self._sidecar.close()
            self._sidecar = None

    def refresh(self) -> None:
        """Re-read the file's identity and tables (after this connection wrote to it)."""
        self.identity = file_identity(self.path)
        self.has_overlay = matches.OVERLAY_TABLE in _tables(self.conn)

    @property
    def writable(self) -> bool:
        return not self.conn.execute("PRAGMA query_only").fetchone()[0]

    def ensure_derived(self) -> Path | None:
        """Derive an msprobe file's columns now (its sidecar's path); None for our own files."""
        self._gb_conn()
        return self.sidecar_path

    def _gb_conn(self) -> sqlite3.Connection:
        """Where ``gb_graphs`` / ``gb_arrays`` are: the file itself or its sidecar."""
        if self.source is Source.GRAPHBOARD:
            return self.conn
        if self._sidecar is None:
            self.sidecar_path = msprobe_columns.ensure_sidecar(self.path, self.conn, self.cache_dir)
            self._sidecar = msprobe_columns.connect_sidecar(self.sidecar_path)
        return self._sidecar

    # --- file level ------------------------------------------------------------------------

    def config(self) -> FileConfig:
        if self._config is None:
            row = self.conn.execute(
                "SELECT graph_type, task, tool_tip, micro_steps, overflow_check, node_colors, "
                "rank_list, step_list FROM main.tb_config LIMIT 1"
            ).fetchone()
            if row is None:
                raise StoreError(f"{self.path.name}: tb_config is empty")
            graph_type, task, tool_tip, micro_steps, overflow_check, colors, ranks, steps = row
            self._config = FileConfig(
                graph_type=str(graph_type),
                data_mode=str(task) if task else None,
                tool_tip=_json_or(tool_tip, None),
                micro_steps=int(micro_steps or 1),
                overflow_check=bool(overflow_check),
                node_colors=_json_or(colors, None),
                ranks=[int(rank) for rank in _json_or(ranks, [])],
                steps=[int(step) for step in _json_or(steps, [])],
            )
        return self._config

    def meta(self) -> dict[str, Any]:
        """graphboard's build metadata (``gb_meta``); empty for msprobe's files."""
        if self.source is not Source.GRAPHBOARD:
            return {}
        return {
            str(key): _json_or(value, value)
            for key, value in self.conn.execute("SELECT key, value FROM main.gb_meta")
        }

    def graphs(self) -> list[GraphStats]:
        """Every graph of the file, in step, rank, side (NPU first) order."""
        stats = [
            GraphStats(str(side), int(step), int(rank), int(count), int(micro or 1), *rest)
            for side, step, rank, count, micro, *rest in self._gb_conn().execute(
                "SELECT data_source, step, rank, node_count, micro_steps, matched, unmatched, "
                "pass_count, warning_count, error_count, first_error FROM gb_graphs "
                "ORDER BY step, rank, data_source DESC"
            )
        ]
        for graph in stats:
            if self._changed_since_build(GraphKey(graph.side, graph.step, graph.rank)):
                self._recount(graph)
        return stats

    def _changed_since_build(self, key: GraphKey) -> bool:
        if (
            self.has_overlay
            and self.conn.execute(
                f"SELECT 1 FROM main.{matches.OVERLAY_TABLE} "
                "WHERE data_source = ? AND step = ? AND rank = ? LIMIT 1",
                (key.side, key.step, key.rank),
            ).fetchone()
        ):
            return True
        return self.source is Source.GRAPHBOARD and bool(
            self.conn.execute(
                "SELECT 1 FROM main.tb_nodes WHERE step = ? AND rank = ? AND modified = 1 "
                "AND data_source = ? LIMIT 1",
                (key.step, key.rank, key.side),
            ).fetchone()
        )

    def _recount(self, graph: GraphStats) -> None:
        view = self.view(GraphKey(graph.side, graph.step, graph.rank))
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
            for code, delta in ((before, -1), (int(levels[order]), 1)):
                if code >= 0 and counts[Level(code)] is not None:
                    counts[Level(code)] = (counts[Level(code)] or 0) + delta
        graph.pass_count = counts[Level.PASS]
        graph.warning_count = counts[Level.WARNING]
        graph.error_count = counts[Level.ERROR]
        first = self.first_error(GraphKey(graph.side, graph.step, graph.rank))
        graph.first_error = first.name if first is not None else None

    def has_graph(self, key: GraphKey) -> bool:
        return (
            self._gb_conn()
            .execute(
                "SELECT 1 FROM gb_graphs WHERE data_source = ? AND step = ? AND rank = ?",
                (key.side, key.step, key.rank),
            )
            .fetchone()
            is not None
        )

    # --- per-graph columns -----------------------------------------------------------------

    def view(self, key: GraphKey) -> GraphView:
        """The graph's columns with manual matches applied (cached by file identity)."""
        return VIEWS.get((self.identity, key), lambda: self._load_view(key))

    def _load_view(self, key: GraphKey) -> GraphView:
        stored = arrays.read(self._gb_conn(), key.graph_id, with_names=False)
        if stored is None:
            raise StoreError(
                f"{self.path.name}: no graph {key.side} step {key.step} rank {key.rank}"
            )
        # The view outlives this request's connection: names come later through their own.
        names_file = self.path if self.source is Source.GRAPHBOARD else self.sidecar_path
        assert names_file is not None

        def load_names() -> arrays.NameTable:
            conn = msprobe_columns.connect_sidecar(names_file)
            try:
                return arrays.read_names(conn, key.graph_id)
            finally:
                conn.close()

        view = GraphView(key, load_names, dict(stored.columns), self.config().compare)
        changes = self._changes(key)
        if changes:
            self._apply(view, changes)
        return view

    def _changes(self, key: GraphKey) -> list[_Change]:
        """Every node changed since the build: re-matched in msprobe's viewer, then graphboard's overlay."""
        changes: list[_Change] = []
        if self.source is Source.GRAPHBOARD:
            other = "Bench" if key.side == "NPU" else "NPU"
            for order, precision, link, input_text, output_text in self.conn.execute(
                "SELECT node_order, precision_index, matched_node_link, input_data, output_data "
                "FROM main.tb_nodes "
                "WHERE step = ? AND rank = ? AND modified = 1 AND data_source = ?",
                (key.step, key.rank, key.side),
            ).fetchall():
                counterpart = _counterpart_of(link)
                found = (
                    self.conn.execute(
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
                    code, _json_or(input_text, {}), _json_or(output_text, {})
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
        if self.has_overlay:
            for (
                order,
                manual,
                matched,
                counterpart,
                level,
                precision,
                introduced,
            ) in self.conn.execute(
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

    def _apply(
        self,
        view: GraphView,
        changes: list[_Change],
    ) -> None:
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

    # --- rows -> summaries -----------------------------------------------------------------

    def _summaries_of_rows(self, key: GraphKey, rows: Sequence[Sequence[Any]]) -> list[NodeSummary]:
        if not rows:
            return []
        view = self.view(key)
        other: GraphView | None = None
        if view.compared:
            other_key = GraphKey("Bench" if key.side == "NPU" else "NPU", key.step, key.rank)
            if self.has_graph(other_key):
                other = self.view(other_key)
        orders = [int(row[3]) for row in rows]
        worst = self._names_at(view, [int(view.columns["worst_node"][order]) for order in orders])
        counterparts: dict[int, str] = {}
        if other is not None:
            wanted = [int(view.columns["counterpart"][order]) for order in orders]
            counterparts = self._names_at(other, [order for order in wanted if order < len(other)])
        return [self._summary(view, row, worst, counterparts) for row in rows]

    def _names_at(self, view: GraphView, orders: Sequence[int]) -> dict[int, str]:
        """Names of a few nodes by node_order, without loading every name of a big graph."""
        wanted = sorted({order for order in orders if order >= 0})
        if not wanted:
            return {}
        if view.names_loaded or len(wanted) > 2000:
            names = view.names
            return {order: names[order] for order in wanted}
        key = view.key
        found: dict[int, str] = {}
        for start in range(0, len(wanted), 500):  # stay under SQLite's bound-parameter limit
            chunk = wanted[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            for order, name in self.conn.execute(
                "SELECT node_order, node_name FROM tb_nodes WHERE step = ? AND rank = ? "
                f"AND data_source = ? AND node_order IN ({marks})",
                (key.step, key.rank, key.side, *chunk),
            ):
                found[int(order)] = str(name)
        return found

    def _summary(
        self,
        view: GraphView,
        row: Sequence[Any],
        worst: dict[int, str],
        counterparts: dict[int, str],
    ) -> NodeSummary:
        name, parent, node_type, order, micro_step, precision, overflow, modified = row
        columns = view.columns
        order = int(order)
        if order in view.precision:
            precision = view.precision[order]
        matched = int(columns["matched"][order])
        counterpart_order = int(columns["counterpart"][order])
        worst_node = int(columns["worst_node"][order])
        return NodeSummary(
            name=str(name),
            parent=str(parent) if parent else None,
            node_type=int(node_type) if str(node_type).isdigit() else 0,
            node_order=order,
            exec_order=int(columns["exec_order"][order]),
            depth=int(columns["depth"][order]),
            child_count=int(columns["child_count"][order]),
            micro_step=int(micro_step or 0),
            precision_index=float(precision) if precision is not None else None,
            level=_level_name(int(columns["level"][order])),
            overflow=str(overflow) if overflow else None,
            matched=None if matched < 0 else bool(matched),
            counterpart=counterparts.get(counterpart_order),
            worst_level=_level_name(int(columns["worst_level"][order])),
            worst_node=worst.get(worst_node),
            error_leaves=int(columns["error_leaves"][order]),
            warning_leaves=int(columns["warning_leaves"][order]),
            unmatched_leaves=int(columns["unmatched_leaves"][order]),
            overflow_leaves=int(columns["overflow_leaves"][order]),
            worst_overflow=arrays.OVERFLOW_NAMES.get(int(columns["worst_overflow"][order])),
            introduced=_level_name(int(columns["introduced"][order]) or -1),
            manual=order in view.manual,
            modified=bool(modified),
        )

    def summary(self, key: GraphKey, name: str) -> NodeSummary | None:
        row = self.conn.execute(
            _TB_SELECT + _BY_GRAPH + " AND t.node_name = ?", (key.step, key.rank, key.side, name)
        ).fetchone()
        return self._summaries_of_rows(key, [row])[0] if row is not None else None

    def summaries_by_order(self, key: GraphKey, orders: Sequence[int]) -> list[NodeSummary]:
        """Summaries of nodes given by node_order, in the order given."""
        rows: dict[int, Sequence[Any]] = {}
        for start in range(0, len(orders), 500):  # stay under SQLite's bound-parameter limit
            chunk = [int(order) for order in orders[start : start + 500]]
            marks = ", ".join("?" * len(chunk))
            for row in self.conn.execute(
                _TB_SELECT + _BY_GRAPH + f" AND t.node_order IN ({marks})",
                (key.step, key.rank, key.side, *chunk),
            ):
                rows[int(row[3])] = row
        return self._summaries_of_rows(key, [rows[order] for order in orders if order in rows])

    def root(self, key: GraphKey) -> NodeSummary | None:
        row = self.conn.execute(
            _TB_SELECT + _BY_GRAPH + " AND t.up_node = '' ORDER BY t.node_order DESC LIMIT 1",
            (key.step, key.rank, key.side),
        ).fetchone()
        return self._summaries_of_rows(key, [row])[0] if row is not None else None

    # --- nodes -----------------------------------------------------------------------------

    def children(
        self,
        key: GraphKey,
        parent: str,
        *,
        after: int | None = None,
        limit: int | None = None,
        micro_step: int | None = None,
    ) -> Page:
        """A page of ``parent``'s children in sibling (execution) order. The cursor is the last
        child's node_order: keyset paging on msprobe's (step, rank, side, up_node, node_order)
        index, as fast for the millionth child as for the first."""
        sql = _TB_SELECT + _BY_GRAPH + " AND t.up_node = ? AND t.node_order > ?"
        params: list[Any] = [key.step, key.rank, key.side, parent, -1 if after is None else after]
        if micro_step is not None:
            sql += " AND t.micro_step_id = ?"
            params.append(micro_step)
        sql += " ORDER BY t.node_order"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit + 1)
        items = self._summaries_of_rows(key, self.conn.execute(sql, params).fetchall())
        if limit is not None and len(items) > limit:
            return Page(items[:limit], items[limit - 1].node_order)
        return Page(items, None)

    def child_names(self, key: GraphKey, parent: str) -> list[tuple[str, int]]:
        """(name, node type) of every child, in sibling order."""
        return [
            (str(name), int(node_type) if str(node_type).isdigit() else 0)
            for name, node_type in self.conn.execute(
                "SELECT node_name, node_type FROM main.tb_nodes WHERE step = ? AND rank = ? "
                "AND data_source = ? AND up_node = ? ORDER BY node_order",
                (key.step, key.rank, key.side, parent),
            )
        ]

    def node(self, key: GraphKey, name: str) -> NodeRecord | None:
        summary = self.summary(key, name)
        if summary is None:
            return None
        input_text, output_text, stack, merge_info, distributed, dump_dir = self.conn.execute(
            """SELECT t.input_data, t.output_data, s.stack_info, t.parallel_merge_info,
                      t.matched_distributed, t.dump_data_dir
               FROM main.tb_nodes t LEFT JOIN main.tb_stack s ON s.id = t.stack_id"""
            + _BY_GRAPH
            + " AND t.node_name = ?",
            (key.step, key.rank, key.side, name),
        ).fetchone()
        if summary.manual:
            overlaid = self.manual_data(key, name).get(summary.node_order)
            if overlaid is not None:
                input_text = overlaid[0] or input_text
                output_text = overlaid[1] or output_text
        return NodeRecord(
            summary=summary,
            input_data=_json_or(input_text, {}),
            output_data=_json_or(output_text, {}),
            stack=[str(frame) for frame in _json_or(stack, [])],
            parallel_merge_info=[str(item) for item in _json_or(merge_info, [])],
            matched_distributed=_json_or(distributed, {}) or None,
            dump_data_dir=str(dump_dir) if dump_dir else None,
        )

    def manual_data(
        self, key: GraphKey, name: str | None = None
    ) -> dict[int, tuple[str | None, str | None]]:
        """(input_data, output_data) as JSON text, by node_order, of the graph's manually
        (un)paired nodes (or of the one named): a pairing rescores its nodes' parameters, and
        these stand in for ``tb_nodes``' own wherever a node's data is read (None or empty:
        the stored one stands)."""
        manual = self.view(key).manual
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
            for order, input_text, output_text in self.conn.execute(query, bound)
            if int(order) in manual
        }

    def stored_data(
        self, key: GraphKey, name: str
    ) -> tuple[dict[str, Any], dict[str, Any], str | None] | None:
        """(input_data, output_data, dump_data_dir) exactly as ``tb_nodes`` holds them."""
        row = self.conn.execute(
            "SELECT input_data, output_data, dump_data_dir FROM main.tb_nodes t"
            + _BY_GRAPH
            + " AND t.node_name = ?",
            (key.step, key.rank, key.side, name),
        ).fetchone()
        if row is None:
            return None
        return _json_or(row[0], {}), _json_or(row[1], {}), str(row[2]) if row[2] else None

    def params(self, key: GraphKey, name: str) -> list[Param] | None:
        """A node's parameters rebuilt from its stored rows (None: no node of that name)."""
        stored = self.stored_data(key, name)
        if stored is None:
            return None
        return params_from_display(name, stored[0], stored[1])

    def stored_nodes(self, key: GraphKey, *, stacks: bool = False) -> list[StoredNode]:
        """Every node of the graph holding parameters, in node order, read by one query (a
        whole-graph table: the compare table), with users' pairings' rescored dicts as
        ``node`` gives them; ``stacks`` adds each node's stack."""
        stack_column = "s.stack_info" if stacks else "NULL"
        join = " LEFT JOIN main.tb_stack s ON s.id = t.stack_id" if stacks else ""
        rows = self.conn.execute(
            f"SELECT t.node_order, t.node_name, t.input_data, t.output_data, {stack_column} "
            f"FROM main.tb_nodes t{join}" + _BY_GRAPH + " AND (t.input_data NOT IN ('', '{}') "
            "OR t.output_data NOT IN ('', '{}')) ORDER BY t.node_order",
            (key.step, key.rank, key.side),
        ).fetchall()
        overlaid = self.manual_data(key)
        nodes: list[StoredNode] = []
        stacks_read: dict[str | None, list[str]] = {}  # the calls of one line share a stack
        for order, name, input_text, output_text, stack_text in rows:
            if order in overlaid:
                input_text = overlaid[order][0] or input_text
                output_text = overlaid[order][1] or output_text
            stack = stacks_read.get(stack_text)
            if stack is None:
                stack = [str(frame) for frame in _json_or(stack_text, [])]
                stacks_read[stack_text] = stack
            nodes.append(
                StoredNode(
                    int(order),
                    str(name),
                    _json_or(input_text, {}),
                    _json_or(output_text, {}),
                    stack,
                )
            )
        return nodes

    def ancestors(self, key: GraphKey, name: str) -> list[NodeSummary] | None:
        """From the root down to ``name``'s parent; None when there is no such node."""
        node = self.summary(key, name)
        if node is None:
            return None
        parent = self.view(key).columns["parent"]
        chain: list[int] = []
        order = int(parent[node.node_order])
        while order >= 0 and len(chain) <= len(parent):
            chain.append(order)
            order = int(parent[order])
        chain.reverse()
        return self.summaries_by_order(key, chain)

    def first_error(self, key: GraphKey) -> NodeSummary | None:
        """The first node, in node order, where an error starts; failing that, a warning."""
        introduced = self.view(key).columns["introduced"]
        for level in (Level.ERROR, Level.WARNING):
            found = np.flatnonzero(introduced == level)
            if len(found):
                return self.summaries_by_order(key, [int(found[0])])[0]
        return None

    def worst_descendant(self, key: GraphKey, name: str) -> NodeSummary | None:
        """The first node (itself or below, in execution order) at the subtree's worst level."""
        node = self.summary(key, name)
        if node is None or node.worst_node is None:
            return None
        worst = int(self.view(key).columns["worst_node"][node.node_order])
        return self.summaries_by_order(key, [worst])[0]

    # --- search and filter -----------------------------------------------------------------

    def search(
        self,
        key: GraphKey,
        text: str,
        *,
        regex: bool = False,
        after: int | None = None,
        limit: int = 100,
        deadline: float | None = None,
    ) -> Page:
        """Nodes whose name contains ``text`` (any case), or matches the regex ``text``, in
        execution order, with the total. The cursor is an execution position. A regex is
        refused with RegexRefused (a ValueError), and stopped past ``deadline`` (a
        ``time.monotonic`` value) with SearchTooSlow."""
        view = self.view(key)
        index = view.name_index
        if regex:
            pattern = compile_search_regex(text)
            literal = required_literal(text)
            needle = literal.lower() if literal is not None else None
            hits = index.matching(pattern, needle, deadline)
            total = len(hits)
            start = 0 if after is None else int(np.searchsorted(hits, after, side="right"))
            positions = [int(hit) for hit in hits[start : start + limit + 1]]
        else:
            positions, total = index.substring(text, after, limit)
        return self._page_of_positions(key, view, positions, limit, total)

    def _page_of_positions(
        self, key: GraphKey, view: GraphView, positions: Sequence[int], limit: int, total: int
    ) -> Page:
        shown = positions[:limit]
        items = self.summaries_by_order(key, [int(view.exec_perm[position]) for position in shown])
        next_cursor = int(shown[-1]) if len(positions) > limit else None
        return Page(items, next_cursor, total)

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
    ) -> Page:
        """Nodes at any of the given precision or overflow levels, or unmatched, in execution
        order, with the total and a count per criterion. The cursor is an execution position."""
        view = self.view(key)
        columns = view.columns
        criteria = [(level.label, columns["level"] == int(level)) for level in levels]
        criteria += [
            (name, columns["overflow"] == arrays.OVERFLOW_CODES[name]) for name in overflows
        ]
        if unmatched:
            criteria.append(("unmatched", columns["matched"] == 0))
        if leaves_only:
            leaf = columns["child_count"] == 0
            criteria = [(label, mask & leaf) for label, mask in criteria]
        counts = {label: int(mask.sum()) for label, mask in criteria}
        if not criteria:
            return Page([], None, 0, counts)
        combined = np.logical_or.reduce([mask for _label, mask in criteria])
        positions = np.flatnonzero(combined[view.exec_perm])
        start = 0 if after is None else int(np.searchsorted(positions, after, side="right"))
        window = [int(position) for position in positions[start : start + limit + 1]]
        page = self._page_of_positions(key, view, window, limit, len(positions))
        page.counts = counts
        return page

    # --- links across ranks ----------------------------------------------------------------

    def peers(self, key: GraphKey, name: str) -> PeerLinks | None:
        """A communication node's counterparts on other ranks, as they are now: graphboard's
        ``gb_links`` when the file has them, else msprobe's ``matched_distributed``."""
        row = self.conn.execute(
            "SELECT matched_distributed FROM main.tb_nodes t" + _BY_GRAPH + " AND t.node_name = ?",
            (key.step, key.rank, key.side, name),
        ).fetchone()
        if row is None:
            return None
        communication, found = _annotated_peers(_json_or(row[0], {}))
        if self.links_source is not None:
            linked = self.conn.execute(
                f"SELECT kind, peer_rank, peer_node, verdict, reason FROM main.{self.links_source} "
                "WHERE data_source = ? AND step = ? AND rank = ? AND node_name = ? "
                "ORDER BY op_index, id",
                (key.side, key.step, key.rank, name),
            ).fetchall()
            if linked:
                stored = {(peer_rank, peer): precision for peer_rank, peer, _k, precision in found}
                return PeerLinks(
                    communication or str(linked[0][0]),
                    [
                        self._peer(
                            key,
                            int(peer_rank),
                            peer,
                            str(kind),
                            stored.get((int(peer_rank), peer)),
                            verdict,
                            reason,
                        )
                        for kind, peer_rank, peer, verdict, reason in linked
                        if peer_rank is not None
                    ],
                )
        return PeerLinks(
            communication,
            [
                self._peer(key, peer_rank, peer, kind, precision, None, None)
                for peer_rank, peer, kind, precision in found
            ],
        )

    def _peer(
        self,
        key: GraphKey,
        rank: int,
        name: str | None,
        kind: str | None,
        stored_precision: str | None,
        verdict: str | None,
        reason: str | None,
    ) -> Peer:
        peer_key = GraphKey(key.side, key.step, rank)
        node = self.summary(peer_key, name) if name and self.has_graph(peer_key) else None
        return Peer(rank, name, kind, stored_precision, verdict, reason, node)

    # --- manual matches --------------------------------------------------------------------

    def manual_pairs(self, step: int, rank: int) -> list[ManualPair]:
        """Pairs users made that still stand, in the target's node order."""
        if not self.has_overlay:
            return []
        return [
            ManualPair(str(target), str(golden), precision, _level_name(level))
            for target, golden, precision, level in self.conn.execute(
                f"SELECT node_name, counterpart, precision_index, level FROM main.{matches.OVERLAY_TABLE} "
                "WHERE data_source = 'NPU' AND step = ? AND rank = ? AND manual = 1 AND matched = 1 "
                "ORDER BY node_order",
                (step, rank),
            )
        ]

    def match_history(self, step: int, rank: int) -> list[matches.Action]:
        if not self.has_overlay:
            return []
        return matches.actions(self.conn, step, rank)


def _annotated_peers(
    links: Any,
) -> tuple[str | None, list[tuple[int, str, str | None, str | None]]]:
    """(communication type, [(rank, peer, kind, stored precision)]) from matched_distributed."""
    entries = links if isinstance(links, list) else [links]
    communication: str | None = None
    found: list[tuple[int, str, str | None, str | None]] = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        kind = entry.get("communications_type")
        communication = communication or kind
        infos = entry.get("nodes_info")
        if not isinstance(infos, dict):
            continue
        for rank_text, info in infos.items():
            if isinstance(info, list) and len(info) >= 2 and str(rank_text).isdigit():
                precision = str(info[0]) if info[0] is not None else None
                found.append((int(rank_text), str(info[1]), kind, precision))
    return communication, found
