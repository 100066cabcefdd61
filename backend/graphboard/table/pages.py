"""The table's pages made from its row index (:mod:`graphboard.table.row_index`), never from
the whole table: which rows are shown, in what order, and the cells of the rows asked for.

What the index answers: the table's own order (either way), the Result filter and the sorts
by a verdict column (Result, Divergence Starts Here: the errors-first view) from the index
alone; a name filter and a sort by a target's stored field (a metric, an NPU statistic) by
one more SQL pass over the target's dicts, kept per file. A sort by a golden's column needs
every row made: the caller takes the whole table (:func:`graphboard.table.query.select`).
The rows shown are exactly the ones ``select`` shows for the same request: the same order,
ties in table order.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from graphboard.compare.result import DataMode
from graphboard.errors import GraphboardError
from graphboard.store.graph_views import ViewCache
from graphboard.store.reader import GraphKey, StoredNode, VisDb, graphs, node_data, overlay
from graphboard.table import columns as col
from graphboard.table.query import LEVEL_COLUMNS, Rows, own_order, severity_key, sorted_positions
from graphboard.table.row_index import (
    OTHER,
    RESULT_CELLS,
    RowIndex,
    read_field_cells,
    read_name_hits,
    read_row_index,
    result_code,
)
from graphboard.table.rows import (
    METRIC_NAMES,
    graph_keys,
    mode_of,
    node_rows,
    starts_here_cell,
)

_NODES_AT_ONCE = 400  # target nodes read by one query (under SQLite's bound-parameter limit)


class IndexDisagrees(GraphboardError):
    """A node's rows differ from what the index says of them (a stored dict SQLite and the
    table read differently): the whole table answers instead."""


def _index_bytes(index: RowIndex) -> int:
    return index.nbytes


# Row indexes by (file identity, step, rank), weighed in bytes: ~13 bytes a row, so the
# default budget holds the indexes of tens of millions of rows.
INDEXES: ViewCache[RowIndex] = ViewCache(max_nodes=64 << 20, weigh=_index_bytes)


@dataclass(frozen=True, slots=True)
class IndexedTable:
    """What a page of one graph's table is made from: the file, the graph, and its index."""

    db: VisDb
    mode: DataMode
    target: GraphKey
    golden: GraphKey | None  # None: the file has no golden graph there
    index: RowIndex
    counterpart: npt.NDArray[np.int32]  # by target node_order (users' pairings applied)
    introduced: npt.NDArray[np.int8]
    deadline: float | None  # for what the request reads besides (time.monotonic)

    @property
    def columns(self) -> tuple[str, ...]:
        return col.table_columns(self.mode)


def indexed_table(
    db: VisDb, step: int, rank: int, *, deadline: float | None = None
) -> IndexedTable | None:
    """The table at ``step``/``rank`` ready for pages from its index (made once, cached);
    None when the index cannot be made (see ``read_row_index``). TableError as build_table."""
    mode = mode_of(db)
    target, golden = graph_keys(db, step, rank)
    view = overlay.graph_view(db, target)

    def load() -> RowIndex:
        made = read_row_index(db.conn, target, _overlaid(db, target), deadline=deadline)
        if made is None:
            raise IndexDisagrees(f"{db.path.name}: a stored dict is not JSON SQLite reads")
        return made

    try:
        index = INDEXES.get((db.identity, step, rank), load)
    except IndexDisagrees:
        return None
    return IndexedTable(
        db,
        mode,
        target,
        golden if graphs.has_graph(db, golden) else None,
        index,
        view.columns["counterpart"],
        view.columns["introduced"],
        deadline,
    )


def target_fields(mode: DataMode) -> dict[str, str]:
    """The columns whose cells are one stored field of the target's parameter (the compare's
    metrics, the NPU statistics), by column: a sort by one reads that field alone."""
    metrics = {name: name for name in METRIC_NAMES.get(mode, ())}
    statistics = dict(
        zip(col.NPU_STATISTICS, (stored for _name, stored in col.STATISTICS), strict=True)
    )
    columns = col.table_columns(mode)
    return {
        column: field for column, field in {**metrics, **statistics}.items() if column in columns
    }


def indexed_sorts(mode: DataMode) -> frozenset[str]:
    """The columns a page can be sorted by without the whole table."""
    return LEVEL_COLUMNS | frozenset(target_fields(mode))


class _NotIndexed(GraphboardError):
    """The stored dicts do not read as the index says."""


def _array_bytes(array: npt.NDArray[Any]) -> int:
    return array.nbytes


# What a sort by a target's field (its row order: 8 bytes a row) or a name filter (the rows
# it keeps: a byte a row) read of a graph, by (file identity, step, rank, what was asked).
READ_BY_REQUEST: ViewCache[npt.NDArray[Any]] = ViewCache(max_nodes=64 << 20, weigh=_array_bytes)


def _overlaid(db: VisDb, key: GraphKey) -> dict[int, StoredNode]:
    """The nodes a user's pairing rescored, with the dicts that stand in for the stored ones."""
    return node_data.stored_nodes_at(db, key, sorted(overlay.manual_data(db, key)))


def _read_once(
    table: IndexedTable,
    asked: tuple[Any, ...],
    read: Callable[[dict[int, StoredNode]], npt.NDArray[Any] | None],
) -> npt.NDArray[Any] | None:
    """``read(overlaid)`` of ``table``'s graph for what was ``asked``, cached; None when the
    stored dicts do not read as the index says."""
    db, key = table.db, table.target

    def load() -> npt.NDArray[Any]:
        made = read(_overlaid(db, key))
        if made is None:
            raise _NotIndexed(f"{db.path.name}: {asked}")
        return made

    try:
        return READ_BY_REQUEST.get((db.identity, key.step, key.rank, *asked), load)
    except _NotIndexed:
        return None


def _field_order(table: IndexedTable, sort: str, descending: bool) -> Rows | None:
    """Row positions sorted by a column of a target's stored field, as ``select`` sorts it."""
    field = target_fields(table.mode)[sort]

    def read(overlaid: dict[int, StoredNode]) -> Rows | None:
        cells = read_field_cells(
            table.db.conn, table.target, overlaid, table.index, field, deadline=table.deadline
        )
        return None if cells is None else sorted_positions(cells, sort, descending)

    return _read_once(table, ("sort", sort, descending), read)


def _name_hits(table: IndexedTable, name: str) -> npt.NDArray[np.bool_] | None:
    """Whether each row's NPU Name contains ``name`` (any case), as ``select`` filters."""

    def read(overlaid: dict[int, StoredNode]) -> npt.NDArray[np.bool_] | None:
        return read_name_hits(
            table.db.conn, table.target, overlaid, table.index, name, deadline=table.deadline
        )

    return _read_once(table, ("name", name.lower()), read)


def _ranked(cells: list[str], descending: bool) -> npt.NDArray[np.int64]:
    """Each cell's place in a sort by ``cells`` as ``query.select`` sorts a level column."""
    keys = [severity_key(cell) for cell in cells]
    if descending:
        keys = [(kind, -number, text) for kind, number, text in keys]
    ranks = np.empty(len(cells), np.int64)
    ranks[sorted(range(len(cells)), key=keys.__getitem__)] = np.arange(len(cells))
    return ranks


def _sort_keys(table: IndexedTable, sort: str, descending: bool) -> npt.NDArray[np.int64] | None:
    """Each row's place in the sort by ``sort`` (equal places: ties), None when the index
    cannot tell."""
    index = table.index
    if sort == col.RESULT:
        if bool((index.results == OTHER).any()):
            return None  # a Result no verdict spells: sorted by its text, which is not indexed
        ranks: npt.NDArray[np.int64] = _ranked(list(RESULT_CELLS), descending)[index.results]
        return ranks
    if sort == col.STARTS_HERE:
        codes = table.introduced[index.row_nodes()].astype(np.int64)
        present = np.unique(codes)
        rank_of = _ranked([starts_here_cell(int(code)) for code in present], descending)
        placed: npt.NDArray[np.int64] = rank_of[np.searchsorted(present, codes)]
        return placed
    return None


def indexed_select(
    table: IndexedTable,
    *,
    results: Collection[str] = (),
    name: str | None = None,
    sort: str | None = None,
    descending: bool = False,
) -> Rows | None:
    """The row positions ``query.select`` shows for the same request, from the index alone;
    None when it cannot tell (a name filter, a sort by a column it does not hold)."""
    if sort is not None and sort not in table.columns:
        raise ValueError(f"sort: no column {sort!r} (columns: {', '.join(table.columns)})")
    if sort is not None and sort not in indexed_sorts(table.mode):
        return None
    index = table.index
    if sort is None:
        order = own_order(len(index), descending)
    elif sort in LEVEL_COLUMNS:
        keys = _sort_keys(table, sort, descending)
        if keys is None:
            return None
        order = np.argsort(keys, kind="stable").astype(np.int64)
    else:
        found = _field_order(table, sort, descending)
        if found is None:
            return None
        order = found
    keep = None
    if results:
        wanted = [result_code(result) for result in set(results)]
        keep = np.isin(index.results, [code for code in wanted if code != OTHER])
    if name:
        hits = _name_hits(table, name)
        if hits is None:
            return None
        keep = hits if keep is None else keep & hits
    return order if keep is None else order[keep[order]]


def rows_at(
    table: IndexedTable, positions: npt.NDArray[np.int64]
) -> Iterator[tuple[str, tuple[str, ...]]]:
    """(target node name, cells) of the rows at ``positions``, in that order, made from their
    nodes alone, a few hundred nodes at a time. IndexDisagrees when a node's rows are not
    what the index says (their number, a Result)."""
    index = table.index
    result_at = table.columns.index(col.RESULT)
    for start in range(0, len(positions), _NODES_AT_ONCE):
        batch = positions[start : start + _NODES_AT_ONCE]
        at = index.locate(batch)
        made = _node_rows(table, [int(order) for order in np.unique(index.orders[at])])
        for position, node_at in zip(map(int, batch), map(int, at), strict=True):
            order = int(index.orders[node_at])
            name, rows = made[order]
            first, end = int(index.starts[node_at]), int(index.starts[node_at + 1])
            if len(rows) != end - first:
                raise IndexDisagrees(f"node {name}: {len(rows)} rows, the index says {end - first}")
            cells = rows[position - first]
            if result_code(cells[result_at]) != int(index.results[position]):
                raise IndexDisagrees(f"node {name}: a Result differs from the index's")
            yield name, cells


def _node_rows(
    table: IndexedTable, orders: list[int]
) -> dict[int, tuple[str, list[tuple[str, ...]]]]:
    """(name, rows) of the target nodes ``orders``, each with its golden counterpart."""
    db = table.db
    targets = node_data.stored_nodes_at(db, table.target, orders, stacks=True)
    wanted = {order: int(table.counterpart[order]) for order in orders}
    goldens = (
        node_data.stored_nodes_at(
            db, table.golden, sorted({order for order in wanted.values() if order >= 0})
        )
        if table.golden is not None
        else {}
    )
    made = {}
    for order, node in targets.items():
        golden = goldens.get(wanted[order])
        made[order] = (
            node.name,
            node_rows(table.mode, node, golden, int(table.introduced[order])),
        )
    missing = set(orders) - set(made)
    if missing:
        raise IndexDisagrees(f"nodes {sorted(missing)[:5]} hold no parameters any more")
    return made
