"""Where each row of a graph's compare table comes from, without making the rows: the target
nodes that give rows, in node order, how many each gives, and each row's Result.

A row is a target parameter (``rows.node_rows``), so one SQL pass over the target graph's
stored dicts (``json_each``, in SQLite) counts the rows and reads their Results: the total,
the Result filter and the sorts by a verdict column are answered from a few bytes a row, and
a page makes only its own rows (:mod:`graphboard.table.pages`). A 300k-record compare's 620k
rows index in under 10 MB; the whole table took about 1.9 kB a row.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from graphboard.store.graph_views import GraphKey
from graphboard.store.param_pairs import PairedParam, paired_stored
from graphboard.store.reader import StoredNode
from graphboard.table.rows import NA, TableTooSlow, field_cell, result_cell, shown

# A row's Result, as an index into RESULT_CELLS; OTHER: a cell none of them spells (a sort
# by Result then needs the whole table, which orders such text by its spelling).
RESULT_CELLS = ("pass", "warning", "error", NA)
OTHER = len(RESULT_CELLS)
_ALL_LETTERS = "pwenx"  # the SQL's letter for each of RESULT_CELLS, then for OTHER
_CODES = bytes.maketrans(_ALL_LETTERS.encode(), bytes(range(OTHER + 1)))

# The letter of one parameter's Result (``j.value``: its stored dict), as result_cell shows
# it: an absent Result passes, a null one is N/A. The common spellings cost one JSON lookup.
_LETTER = (
    "CASE j.value ->> '$.Result' WHEN 'pass' THEN 'p' WHEN 'warning' THEN 'w' "
    "WHEN 'error' THEN 'e' WHEN 'null' THEN 'n' WHEN 'N/A' THEN 'n' "
    "ELSE CASE coalesce(json_type(j.value, '$.Result'), 'absent') "
    "WHEN 'absent' THEN 'p' WHEN 'null' THEN 'n' ELSE 'x' END END"
)


def _letters(column: str) -> str:
    # stored_entries' parameters: the dict-valued entries, in stored order ('' reads as {})
    return (
        f"coalesce((SELECT group_concat({_LETTER}, '') FROM json_each(nullif(t.{column}, '')) j "
        "WHERE j.type = 'object'), '')"
    )


_INDEX_QUERY = (
    f"SELECT t.node_order, {_letters('input_data')} || {_letters('output_data')} "
    "FROM main.tb_nodes t WHERE t.step = ? AND t.rank = ? AND t.data_source = ? "
    "AND (t.input_data NOT IN ('', '{}') OR t.output_data NOT IN ('', '{}')) "
    "ORDER BY t.node_order"
)
_CHECK_EVERY = 4096  # nodes between two looks at the deadline


@dataclass(frozen=True, slots=True)
class RowIndex:
    """The rows of one graph's table, in table order, as positions into these arrays."""

    orders: npt.NDArray[np.int32]  # node_order of each target node giving rows, ascending
    starts: npt.NDArray[np.int64]  # each such node's first row, then the row count
    results: npt.NDArray[np.uint8]  # each row's Result, as an index of RESULT_CELLS

    def __len__(self) -> int:
        return int(self.starts[-1])

    @property
    def nbytes(self) -> int:
        return self.orders.nbytes + self.starts.nbytes + self.results.nbytes

    def row_nodes(self) -> npt.NDArray[np.int32]:
        """The node_order of each row."""
        return np.repeat(self.orders, np.diff(self.starts))

    def locate(self, positions: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The node (an index into ``orders``) of each row position."""
        return np.searchsorted(self.starts, positions, side="right") - 1


def result_code(cell: str) -> int:
    try:
        return RESULT_CELLS.index(cell)
    except ValueError:
        return OTHER


def _own_letters(node: StoredNode) -> str:
    """A node's letters, from the table's own Result cells (a node a user's pairing rescored)."""
    return "".join(_ALL_LETTERS[result_code(result_cell(row))] for row in _target_rows(node))


def read_row_index(
    conn: sqlite3.Connection,
    key: GraphKey,
    overlaid: Mapping[int, StoredNode],
    *,
    deadline: float | None = None,
) -> RowIndex | None:
    """The index of the table of target graph ``key``; ``overlaid``: the nodes a user's
    pairing rescored, with their dicts as the reader gives them (they stand in for the
    stored ones). None when SQLite cannot read the stored dicts as JSON (the whole table,
    which reads a malformed dict as empty, is then the answer). Past ``deadline``
    (``time.monotonic``), TableTooSlow."""
    orders: list[int] = []
    letters: list[str] = []
    try:
        for count, (order, found) in enumerate(
            conn.execute(_INDEX_QUERY, (key.step, key.rank, key.side))
        ):
            if deadline is not None and count % _CHECK_EVERY == 0 and time.monotonic() > deadline:
                raise TableTooSlow(
                    f"the rows of step {key.step}, rank {key.rank} took too long to count"
                )
            node = overlaid.get(order)
            if node is not None:
                found = _own_letters(node)
            if found:
                orders.append(order)
                letters.append(found)
    except sqlite3.OperationalError:  # malformed JSON in a stored dict
        return None
    counts = np.fromiter(map(len, letters), np.int64, len(letters))
    starts = np.zeros(len(letters) + 1, np.int64)
    np.cumsum(counts, out=starts[1:])
    codes = "".join(letters).encode().translate(_CODES)
    return RowIndex(np.asarray(orders, np.int32), starts, np.frombuffer(codes, np.uint8).copy())


_SIDES = ("input_data", "output_data")
_BY_NODE = (
    "FROM main.tb_nodes t WHERE t.step = :step AND t.rank = :rank AND t.data_source = :side "
    "AND (t.input_data NOT IN ('', '{}') OR t.output_data NOT IN ('', '{}')) "
    "ORDER BY t.node_order"
)


def _per_param(expression: str) -> str:
    """A query of ``expression`` for each parameter (``j``: its entry in a stored dict), a
    node at a time, in node order, as a JSON array a side."""
    arrays = ", ".join(
        f"(SELECT json_group_array({expression}) FROM json_each(nullif(t.{column}, '')) j "
        "WHERE j.type = 'object')"
        for column in _SIDES
    )
    return f"SELECT t.node_order, {arrays} {_BY_NODE}"


class _Disagrees(Exception):
    """A node's parameters are not as many as the index says."""


def _values_by_node(
    conn: sqlite3.Connection,
    query: str,
    bound: dict[str, object],
    index: RowIndex,
    own: Callable[[StoredNode], list[Any]],
    overlaid: Mapping[int, StoredNode],
    deadline: float | None,
) -> Iterator[tuple[int, int, list[Any]]]:
    """(first row, end row, a value a row) of each node of ``index``, from the arrays of a
    ``_per_param`` query, or ``own(node)`` for a node a user's pairing rescored."""
    spans = {
        int(order): (int(start), int(end))
        for order, start, end in zip(index.orders, index.starts[:-1], index.starts[1:], strict=True)
    }
    step, rank, side = bound["step"], bound["rank"], bound["side"]
    for seen, (order, inputs, outputs) in enumerate(conn.execute(query, bound)):
        if deadline is not None and seen % _CHECK_EVERY == 0 and time.monotonic() > deadline:
            raise TableTooSlow(f"the rows of step {step}, rank {rank} ({side}) took too long")
        span = spans.get(order)
        if span is None:
            continue
        node = overlaid.get(order)
        values = own(node) if node is not None else [*orjson.loads(inputs), *orjson.loads(outputs)]
        if len(values) != span[1] - span[0]:
            raise _Disagrees
        yield span[0], span[1], values


def _graph(key: GraphKey) -> dict[str, object]:
    return {"step": key.step, "rank": key.rank, "side": key.side}


def _target_rows(node: StoredNode) -> list[PairedParam]:
    return [row for row in paired_stored(node, None) if row.target is not None]


# One stored field of every parameter, as JSON (an absent field is null, as a null one: both
# show N/A).
_FIELD_QUERY = _per_param("j.value -> :path")


def read_field_cells(
    conn: sqlite3.Connection,
    key: GraphKey,
    overlaid: Mapping[int, StoredNode],
    index: RowIndex,
    field: str,
    *,
    deadline: float | None = None,
) -> list[str] | None:
    """The cell of every row of ``index`` (in table order) whose column shows the target's
    stored ``field`` (a metric, an NPU statistic), as ``rows.row_cells`` shows it; None when
    the stored dicts do not read as the index says (the whole table answers then)."""
    path = '$."' + field.replace('"', '\\"') + '"'
    cells: list[str] = []
    try:
        for _start, _end, values in _values_by_node(
            conn,
            _FIELD_QUERY,
            {**_graph(key), "path": path},
            index,
            lambda node: [field_cell(row, field) for row in _target_rows(node)],
            overlaid,
            deadline,
        ):
            cells += map(shown, values)  # shown() of a cell is the cell
    except (sqlite3.OperationalError, _Disagrees):  # malformed JSON, another count
        return None
    return cells if len(cells) == len(index) else None


# The name itself where SQLite's lower() (ASCII only) may not lower it as Python does (a
# character outside ' '..'~'), else 1: it holds the needle, 0: it does not.
_NAME_QUERY = _per_param(
    "CASE WHEN j.key GLOB '*[^ -~]*' THEN j.key "
    "WHEN instr(lower(j.key), :needle) > 0 THEN 1 ELSE 0 END"
)


def read_name_hits(
    conn: sqlite3.Connection,
    key: GraphKey,
    overlaid: Mapping[int, StoredNode],
    index: RowIndex,
    needle: str,
    *,
    deadline: float | None = None,
) -> npt.NDArray[np.bool_] | None:
    """Whether each row's NPU Name (its parameter's stored name) contains ``needle`` in any
    case, as the whole table's name filter says (``NameIndex``: Python's lower() of both);
    None when the stored dicts do not read as the index says."""
    lowered = needle.lower()
    hits = np.zeros(len(index), dtype=bool)
    if "\n" in lowered:  # no name holds one, as the whole table's filter says
        return hits
    try:
        for start, end, marks in _values_by_node(
            conn,
            _NAME_QUERY,
            {**_graph(key), "needle": lowered},
            index,
            lambda node: [row.target.name for row in _target_rows(node) if row.target],
            overlaid,
            deadline,
        ):
            hits[start:end] = [
                lowered in mark.lower() if isinstance(mark, str) else bool(mark) for mark in marks
            ]
    except (sqlite3.OperationalError, _Disagrees):  # malformed JSON, another count
        return None
    return hits
