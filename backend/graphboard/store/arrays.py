"""Per-graph columns of graphboard's node data: roll-ups, levels, match state, structure.

One numpy array per column, indexed by ``node_order`` (msprobe's post-order position), stored
as one BLOB per (graph, column) in ``gb_arrays``. Writing a million nodes this way costs
milliseconds where a row per node costs seconds, and the server answers filters, badges and
"worst descendant" from the arrays in memory. The same arrays can be derived from msprobe's
``tb_nodes`` alone (``derive``), so files msprobe wrote get the same features. The table's
DDL is in schema.py, which this module's numpy need not load.

Level codes: precision -1 none, 0 pass, 1 warning, 2 error; overflow 0 none, 1 medium,
2 high, 3 critical; matched -1 (a build), 0, 1.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from graphboard.store.statements import Statements

NONE = -1
OVERFLOW_CODES = {"medium": 1, "high": 2, "critical": 3}
OVERFLOW_NAMES = {code: name for name, code in OVERFLOW_CODES.items()}
NAME_SEPARATOR = "\x00"  # cannot occur in a node name

# column -> dtype; every column has one entry per node, in node_order.
COLUMNS: dict[str, str] = {
    "parent": "int32",  # node_order of the parent, -1 for the root
    "exec_order": "int32",  # pre-order position: a module before what runs inside it
    "depth": "int16",
    "child_count": "int32",
    "matched": "int8",
    "counterpart": "int32",  # node_order of the paired node in the other side's graph, -1
    "level": "int8",  # own precision level
    "introduced": "int8",  # a divergence starts here: 0 no, 1 a warning, 2 an error
    "overflow": "int8",
    "worst_level": "int8",  # of the node and its descendants
    "worst_node": "int32",  # first leaf (else the node) at worst_level, -1
    "error_leaves": "int32",
    "warning_leaves": "int32",
    "unmatched_leaves": "int32",
    "worst_overflow": "int8",
    "overflow_leaves": "int32",
}


class NameTable(Sequence[str]):
    """Node names in node_order, decoded from the stored blob only as far as they are used.

    Splitting a million names into strings takes a third of a second; a lookup by position
    needs only the separator offsets, and most requests (children, node) never need more.
    """

    def __init__(self, blob: bytes) -> None:
        self._blob = blob
        self._ends: npt.NDArray[np.intp] | None = None
        self._list: list[str] | None = None

    def _separators(self) -> npt.NDArray[np.intp]:
        if self._ends is None:
            found = np.flatnonzero(np.frombuffer(self._blob, np.uint8) == 0)
            self._ends = np.append(found, len(self._blob))
        return self._ends

    def __len__(self) -> int:
        if self._list is not None:
            return len(self._list)
        return len(self._separators()) if self._blob else 0

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        if self._list is not None or isinstance(index, slice):
            return self.as_list()[index]
        ends = self._separators()
        position = range(len(ends))[index]  # bounds check and negative indexes
        start = int(ends[position - 1]) + 1 if position else 0
        return self._blob[start : int(ends[position])].decode("utf-8")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, NameTable):
            return self._blob == other._blob
        if isinstance(other, Sequence) and not isinstance(other, str):
            return self.as_list() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def as_list(self) -> list[str]:
        if self._list is None:
            self._list = self._blob.decode("utf-8").split(NAME_SEPARATOR) if self._blob else []
        return self._list


@dataclass(slots=True)
class GraphArrays:
    names: Sequence[str]
    columns: dict[str, npt.NDArray[Any]]

    def __len__(self) -> int:
        return len(self.columns["parent"])

    def __getitem__(self, column: str) -> npt.NDArray[Any]:
        return self.columns[column]


def roll_up(columns: dict[str, npt.NDArray[Any]], compared: bool) -> None:
    """Fill the roll-up columns from parent/level/overflow/matched, one vectorised pass per depth."""
    parent, depth = columns["parent"], columns["depth"]
    count = len(parent)
    leaf = columns["child_count"] == 0
    level, overflow = columns["level"], columns["overflow"]
    error_leaves = (leaf & (level == 2)).astype(np.int32)
    warning_leaves = (leaf & (level == 1)).astype(np.int32)
    unmatched_leaves = (
        (leaf & (columns["matched"] == 0)).astype(np.int32)
        if compared
        else np.zeros(count, np.int32)
    )
    overflow_leaves = (leaf & (overflow > 0)).astype(np.int32)
    worst_overflow = overflow.astype(np.int8).copy()
    # worst level among leaves below (or the node itself if a leaf), then the first such leaf
    leaf_worst = np.where(leaf, level, NONE).astype(np.int8)
    order = np.arange(count, dtype=np.int32)
    groups = _depth_groups(depth)
    for group in groups:  # deepest first
        group = group[parent[group] >= 0]
        if not len(group):
            continue
        up = parent[group]
        np.add.at(error_leaves, up, error_leaves[group])
        np.add.at(warning_leaves, up, warning_leaves[group])
        np.add.at(unmatched_leaves, up, unmatched_leaves[group])
        np.add.at(overflow_leaves, up, overflow_leaves[group])
        np.maximum.at(worst_overflow, up, worst_overflow[group])
        np.maximum.at(leaf_worst, up, leaf_worst[group])
    first_leaf = np.full(count, np.iinfo(np.int32).max, np.int32)
    first_leaf[leaf & (level >= 0)] = order[leaf & (level >= 0)]
    target = leaf_worst.copy()  # each node looks for its first leaf at its own leaf_worst
    for group in groups:
        group = group[parent[group] >= 0]
        if not len(group):
            continue
        up = parent[group]
        eligible = (leaf_worst[group] == target[up]) & (leaf_worst[group] >= 0)
        if eligible.any():
            np.minimum.at(first_leaf, up[eligible], first_leaf[group[eligible]])
    has_leaf = leaf_worst >= 0
    worst_level = np.where(has_leaf & (leaf_worst >= level), leaf_worst, level).astype(np.int8)
    worst_node = np.where(
        has_leaf & (leaf_worst >= level), first_leaf, np.where(level >= 0, order, NONE)
    )
    worst_node = np.where(worst_node == np.iinfo(np.int32).max, NONE, worst_node).astype(np.int32)
    columns.update(
        worst_level=worst_level,
        worst_node=worst_node,
        error_leaves=error_leaves,
        warning_leaves=warning_leaves,
        unmatched_leaves=unmatched_leaves,
        worst_overflow=worst_overflow,
        overflow_leaves=overflow_leaves,
    )


def _depth_groups(depth: npt.NDArray[Any]) -> list[npt.NDArray[np.intp]]:
    """Node indexes grouped by depth, deepest group first."""
    by_depth = np.argsort(depth, kind="stable")[::-1]
    boundaries = np.flatnonzero(np.diff(depth[by_depth])) + 1
    return [group for group in np.split(by_depth, boundaries) if len(group)]


depth_groups = _depth_groups  # store/rule_columns.py rolls up the dtype-aware levels so too


def structure(parent_of: Sequence[int] | npt.NDArray[Any]) -> dict[str, npt.NDArray[Any]]:
    """parent / depth / child_count / exec_order from post-ordered parent indexes.

    In post-order a subtree is the contiguous run ending at its root, so a node's pre-order
    position is the count of nodes before its subtree plus its number of ancestors.
    """
    parent = np.asarray(parent_of, dtype=np.int32)
    count = len(parent)
    child_count = np.bincount(parent[parent >= 0], minlength=count).astype(np.int32)
    depth = np.zeros(count, np.int16)
    ancestor = parent.copy()
    while (alive := ancestor >= 0).any():  # pointer chasing: one vector step per tree level
        depth += alive
        ancestor = np.where(alive, parent[np.maximum(ancestor, 0)], NONE)
    subtree = np.ones(count, np.int64)
    for group in _depth_groups(depth):
        group = group[parent[group] >= 0]
        np.add.at(subtree, parent[group], subtree[group])
    exec_order = (np.arange(count) - subtree + 1 + depth).astype(np.int32)
    return {"parent": parent, "exec_order": exec_order, "depth": depth, "child_count": child_count}


def write(
    conn: Statements,
    graph_id: str,
    names: Iterable[str],
    columns: dict[str, npt.NDArray[Any]],
) -> None:
    rows: list[tuple[str, str, str, bytes]] = [
        (graph_id, "names", "utf8", NAME_SEPARATOR.join(names).encode("utf-8"))
    ]
    for name, dtype in COLUMNS.items():
        rows.append(
            (graph_id, name, dtype, np.ascontiguousarray(columns[name], dtype=dtype).tobytes())
        )
    conn.executemany(
        "INSERT OR REPLACE INTO gb_arrays (graph_id, name, dtype, data) VALUES (?, ?, ?, ?)", rows
    )


def read(conn: sqlite3.Connection, graph_id: str, with_names: bool = True) -> GraphArrays | None:
    """The stored arrays of one graph, or None (a file msprobe wrote: use ``derive``).

    Without ``with_names`` the (largest) names blob is left in the file: ``read_names``.
    """
    query = "SELECT name, dtype, data FROM gb_arrays WHERE graph_id = ?"
    if not with_names:
        query += " AND name != 'names'"
    try:
        rows = conn.execute(query, (graph_id,)).fetchall()
    except sqlite3.OperationalError:
        return None
    if not rows:
        return None
    names: Sequence[str] = ()
    columns: dict[str, npt.NDArray[Any]] = {}
    for name, dtype, data in rows:
        if name == "names":
            names = NameTable(bytes(data))
        else:
            columns[name] = np.frombuffer(data, dtype=dtype)
    return GraphArrays(names, columns)


def read_names(conn: sqlite3.Connection, graph_id: str) -> NameTable:
    row = conn.execute(
        "SELECT data FROM gb_arrays WHERE graph_id = ? AND name = 'names'", (graph_id,)
    ).fetchone()
    return NameTable(bytes(row[0]) if row is not None else b"")
