"""Which rows of a compare table are shown, in what order: filters by Result and by name
(a case-insensitive substring, by the search's own :class:`NameIndex`, never a user regex),
a sort by any column, and a cached table per graph so paging does not rebuild it."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

import numpy as np
import numpy.typing as npt

from graphboard.store.graph_views import ViewCache
from graphboard.store.name_index import NameIndex
from graphboard.table import columns as col
from graphboard.table.rows import CompareTable

Rows = npt.NDArray[np.int64]


def sort_key(cell: str) -> tuple[int, float, str]:
    """Numbers (``12.5``, ``0.0014%``, ``inf``) in numeric order, then text in text order."""
    text = cell.rstrip("\t%")  # msprobe marks inf/nan cells with a tab; errors in percent
    try:
        number = float(text)
    except ValueError:
        return (1, 0.0, cell)
    if math.isnan(number):
        return (1, 0.0, cell)
    return (0, number, "")


# A verdict column sorts by severity, not by its words' spelling (which put pass before
# warning): the worst first in ascending order, so sorting by Result opens on the errors.
SEVERITY = {"error": 0, "warning": 1, "pass": 2}
LEVEL_COLUMNS = frozenset({col.RESULT, col.STARTS_HERE})


def severity_key(cell: str) -> tuple[int, float, str]:
    """error, warning, pass, then any other text (``N/A``, empty) in text order."""
    rank = SEVERITY.get(cell)
    return (1, 0.0, cell) if rank is None else (0, float(rank), "")


def _sorted(table: CompareTable, column: str, descending: bool) -> Rows:
    """Row positions by ``column``: numbers (a verdict's severity) first, largest first when
    ``descending``, then text, in text order either way, so a largest-first sort never opens
    on ``N/A`` rows; ties keep row order."""
    order = table.sorted_by.get((column, descending))
    if order is None:
        made = sorted_positions(table.column(column), column, descending)
        table.sorted_by[(column, descending)] = made
        return made
    return order


def sorted_positions(cells: Sequence[str], column: str, descending: bool) -> Rows:
    """Positions of ``cells`` (one column's, in row order) sorted as a sort by ``column``
    orders them (see ``_sorted``)."""
    key = severity_key if column in LEVEL_COLUMNS else sort_key
    keys = [key(cell) for cell in cells]
    if descending:
        keys = [(kind, -number, text) for kind, number, text in keys]
    # stable: ties in row order; kept as 8 bytes a row, not a list of int objects
    return np.asarray(sorted(range(len(keys)), key=keys.__getitem__), dtype=np.int64)


def name_index(table: CompareTable) -> NameIndex:
    if table.name_index is None:
        table.name_index = NameIndex(table.column(col.NPU_NAME))
    return table.name_index


def own_order(count: int, descending: bool) -> Rows:
    """The table's own order of ``count`` rows (msprobe's), or its reverse."""
    order: Rows = np.arange(count, dtype=np.int64)
    return order[::-1] if descending else order


def select(
    table: CompareTable,
    *,
    results: Collection[str] = (),
    name: str | None = None,
    sort: str | None = None,
    descending: bool = False,
) -> Rows:
    """Row positions shown: those whose Result is one of ``results`` (any when empty) and
    whose NPU Name contains ``name`` (any case), in table order or sorted by ``sort``."""
    if sort is not None and sort not in table.columns:
        raise ValueError(f"sort: no column {sort!r} (columns: {', '.join(table.columns)})")
    keep = np.ones(len(table), dtype=bool)
    if results:
        wanted = set(results)
        keep &= np.fromiter((cell in wanted for cell in table.column(col.RESULT)), bool, len(table))
    if name:
        hits = np.zeros(len(table), dtype=bool)
        if "\n" not in name:  # no name holds one (NameIndex would take it for "any name")
            hits[name_index(table).containing(name)] = True
        keep &= hits
    if sort is None:
        order = own_order(len(table), descending)
    else:
        order = np.asarray(_sorted(table, sort, descending), dtype=np.int64)
    shown: Rows = order[keep[order]]
    return shown


def table_bytes(table: CompareTable) -> int:
    return table.bytes


# Tables by (file identity, step, rank), weighed in bytes (a row of a tensor compare is three
# times one of md5: rows would be no bound of memory); create_app sets the budget from
# settings.table_cache_bytes.
TABLES: ViewCache[CompareTable] = ViewCache(max_nodes=512 << 20, weigh=table_bytes)
