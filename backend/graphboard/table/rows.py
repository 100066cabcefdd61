"""One graph's compare table: a row per target parameter, as msprobe ``compare`` lists them.

The rows come from what the build stored, read in one pass: the target graph's nodes and
their golden counterparts by one query a side (``node_data.stored_nodes``), each pair's
parameters paired as the node view pairs them (``store.param_pairs``). Values are the
stored display strings; a value the file does not hold is msprobe's ``N/A``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import numpy as np
import numpy.typing as npt

from graphboard.compare.metrics import SUMMARY_METRIC_NAMES, TENSOR_METRIC_NAMES
from graphboard.compare.result import DataMode, label_of_code
from graphboard.errors import GraphboardError
from graphboard.graph.model import GOLDEN_SIDE, TARGET_SIDE
from graphboard.store.name_index import NameIndex
from graphboard.store.param_pairs import PairedParam, paired_stored
from graphboard.store.reader import GraphKey, StoredNode, VisDb, graphs, node_data, overlay
from graphboard.table import columns as col

NA = "N/A"  # msprobe's cell for a value it does not have
_NO_DATA_NAME = "-1"  # msprobe's data_name of a parameter saved to no file
_CHECK_EVERY = 256  # nodes between two looks at the deadline
_BATCH = 512  # target nodes read at once, with their golden counterparts (one IN query)
METRIC_NAMES = {DataMode.SUMMARY: SUMMARY_METRIC_NAMES, DataMode.TENSOR: TENSOR_METRIC_NAMES}


class TableError(GraphboardError):
    """The file cannot give a compare table (a build, a structure-only compare, no graph)."""


class TableTooSlow(TableError):
    """Building the table took longer than the caller allows."""


class TableTooLarge(TableError):
    """The table would take more memory than the caller allows."""


# What a row costs in memory, as CPython lays it out: the tuple (header + a pointer per cell),
# a compact ASCII str per cell (its header + a byte per character), and the row's pointers in
# ``cells`` and ``nodes``. Cells shared between rows ("N/A") are counted each time: the
# estimate errs high, so a budget holds.
_TUPLE_BYTES, _POINTER_BYTES, _STR_BYTES = 40, 8, 49


def row_bytes(cells: tuple[str, ...]) -> int:
    return (
        _TUPLE_BYTES
        + (_POINTER_BYTES + _STR_BYTES) * len(cells)
        + sum(map(len, cells))
        + 2 * _POINTER_BYTES
    )


@dataclass(slots=True)
class CompareTable:
    """The rows of one graph's table; ``cells[i]`` lines up with ``columns``."""

    mode: DataMode
    columns: tuple[str, ...]
    cells: list[tuple[str, ...]]
    nodes: list[str]  # the target node each row belongs to (the viewer links to it)
    # column -> row positions sorted ascending by it, and the NPU Names' search index:
    # query.py makes each on first use
    sorted_by: dict[tuple[str, bool], npt.NDArray[np.int64]] = field(
        default_factory=dict
    )  # (column, descending)
    name_index: NameIndex | None = None
    bytes: int = 0  # the rows' memory, as row_bytes estimates it

    def __len__(self) -> int:
        return len(self.cells)

    def column(self, name: str) -> list[str]:
        index = self.columns.index(name)
        return [cells[index] for cells in self.cells]


def shown(value: Any) -> str:
    """A stored value as a cell shows it."""
    if value is None or value == "null":
        return NA
    return str(value)


def _fields(row: PairedParam, side: str) -> dict[str, Any]:
    found = row.target if side == "target" else row.golden
    return found.fields if found is not None else {}


def _basic(row: PairedParam, target: dict[str, Any], golden: dict[str, Any]) -> list[str]:
    assert row.target is not None
    return [
        row.target.name,
        row.golden.name if row.golden is not None else NA,
        shown(target.get("dtype")),
        shown(golden.get("dtype")),
        shown(target.get("shape")),
        shown(golden.get("shape")),
        shown(target.get("requires_grad")),
        shown(golden.get("requires_grad")),
    ]


def _statistics(fields: dict[str, Any]) -> list[str]:
    return [shown(fields.get(stored)) for _name, stored in col.STATISTICS]


def field_cell(row: PairedParam, field: str) -> str:
    """The cell of a target's stored ``field`` (a metric or a statistic) in ``row``."""
    assert row.target is not None
    return shown(row.comparison.get(field, row.target.fields.get(field)))


def result_cell(row: PairedParam) -> str:
    """The row's Result cell: a parameter nothing was compared with passes."""
    return shown(row.comparison.get(col.RESULT, "pass"))


def _verdict(row: PairedParam) -> list[str]:
    comparison = row.comparison
    # msprobe's cells for a parameter nothing was compared with: a null (masked) leaf, or
    # one with no golden counterpart (whose requires_grad has nothing to agree with)
    consistent = comparison.get(col.REQUIRES_GRAD_CONSISTENT)
    if consistent is None:
        consistent = "True" if row.golden is not None else "False"
    return [
        shown(consistent),
        result_cell(row),
        shown(comparison.get(col.ERR_MESSAGE, "[]")),
    ]


def _data_name(fields: dict[str, Any]) -> str:
    name = fields.get("data_name")
    return _NO_DATA_NAME if name in (None, "null") else str(name)


def row_cells(
    mode: DataMode, row: PairedParam, stack: str, starts_here: str
) -> tuple[str, ...] | None:
    """One table row, or None for a golden parameter with no target counterpart (msprobe drops
    those)."""
    if row.target is None:
        return None
    target, golden = _fields(row, "target"), _fields(row, "golden")
    cells = _basic(row, target, golden)
    if mode is DataMode.MD5:
        cells += [shown(target.get("md5")), shown(golden.get("md5"))]
        cells += _verdict(row)
        cells.append(stack)
    else:
        comparison = row.comparison
        cells += [shown(comparison.get(name)) for name in METRIC_NAMES[mode]]
        cells += _statistics(target)
        cells += _statistics(golden) if row.golden is not None else [NA] * 4
        cells += _verdict(row)
        cells.append(stack)
        if mode is DataMode.TENSOR:
            pair = [_data_name(target), _data_name(golden)]
            cells.append(str(pair))
    cells.append(starts_here)
    return tuple(cells)


def mode_of(db: VisDb) -> DataMode:
    """The data mode of a compare's table; TableError for a build or a mode with no table."""
    config = db.config()
    if not config.compare:
        raise TableError(f"{db.path.name}: a build, not a compare: there is no result table")
    mode = config.mode
    if mode not in col.TABLE_MODES:
        raise TableError(
            f"{db.path.name}: data mode {config.data_mode!r} has no result table "
            "(expected summary, md5 or all)"
        )
    assert mode is not None
    return mode


def graph_keys(db: VisDb, step: int, rank: int) -> tuple[GraphKey, GraphKey]:
    """(target, golden) keys of the table at ``step``/``rank``; TableError when the file has
    no target graph there."""
    target_key, golden_key = GraphKey(TARGET_SIDE, step, rank), GraphKey(GOLDEN_SIDE, step, rank)
    if not graphs.has_graph(db, target_key):
        config = db.config()
        raise TableError(
            f"{db.path.name}: no graph for step {step}, rank {rank} "
            f"(steps {config.steps}, ranks {config.ranks})"
        )
    return target_key, golden_key


def starts_here_cell(code: int) -> str:
    """The Divergence Starts Here cell of a node whose ``introduced`` code is ``code``."""
    return (label_of_code(code) if code > 0 else None) or ""


def node_rows(
    mode: DataMode, node: StoredNode, golden: StoredNode | None, introduced: int
) -> list[tuple[str, ...]]:
    """The rows of one target node, in table order (its golden counterpart ``golden``, if any)."""
    starts_here = starts_here_cell(introduced)
    stack = str(node.stack) if node.stack else NA  # msprobe: on the node's first row only
    made = []
    for row in paired_stored(node, golden):
        cells = row_cells(mode, row, stack, starts_here)
        if cells is not None:
            made.append(cells)
            stack = NA
    return made


def build_table(
    db: VisDb,
    step: int,
    rank: int,
    *,
    deadline: float | None = None,
    max_bytes: int | None = None,
) -> CompareTable:
    """The compare table of the target graph at ``step``/``rank``; past ``deadline``
    (``time.monotonic``), TableTooSlow; past ``max_bytes`` of rows, TableTooLarge (raised as
    the budget is crossed, never after the whole table was made)."""
    mode = mode_of(db)
    target_key, golden_key = graph_keys(db, step, rank)
    view = overlay.graph_view(db, target_key)
    counterpart, introduced = view.columns["counterpart"], view.columns["introduced"]
    has_golden = graphs.has_graph(db, golden_key)
    table = CompareTable(mode, col.table_columns(mode), [], [])
    target_nodes = node_data.iter_stored_nodes(db, target_key, stacks=True)
    count = 0
    # A batch of target nodes at a time, with its golden counterparts read by their orders:
    # neither side's nodes are ever all in memory (a 300k-record compare's two sides held
    # 3 GB that way), only the rows made of them.
    while batch := list(islice(target_nodes, _BATCH)):
        wanted = [int(counterpart[node.node_order]) for node in batch]
        golden_nodes = (
            node_data.stored_nodes_at(db, golden_key, [order for order in wanted if order >= 0])
            if has_golden
            else {}
        )
        for node, golden_order in zip(batch, wanted, strict=True):
            if deadline is not None and count % _CHECK_EVERY == 0 and time.monotonic() > deadline:
                raise TableTooSlow(
                    f"{db.path.name}: the table of step {step}, rank {rank} took too long"
                )
            count += 1
            made = node_rows(
                mode, node, golden_nodes.get(golden_order), int(introduced[node.node_order])
            )
            for cells in made:
                table.cells.append(cells)
                table.nodes.append(node.name)
                table.bytes += row_bytes(cells)
        if max_bytes is not None and table.bytes > max_bytes:
            raise TableTooLarge(
                f"{db.path.name}: the table of step {step}, rank {rank} takes more than "
                f"{max_bytes / 2**20:.0f} MiB of memory after {len(table.cells):,} rows"
            )
    return table
