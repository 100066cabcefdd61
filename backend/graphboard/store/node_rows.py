"""tb_nodes as both part sinks see it: its layout, read back from schema.py's DDL through
SQLite itself, and what a row may hold.

A row is a tuple in schema.TB_NODES_COLUMNS order. A TEXT column holds a str, an INTEGER
column an int (64 bits) or a float, and either None unless it is NOT NULL; SQLite would
quietly turn a number into text and the reverse, so a row that breaks this is refused, the
same way by the compiled writer (_btree.c) and by the Python one.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from graphboard import accel
from graphboard.store import schema

# How a refused row or a failed write is introduced, after the file's name.
ROW_FAILURE = "a tb_nodes row cannot be stored"
NODES_FAILURE = "writing the nodes table"

_INT64 = 2**63

# What the compiled writer (packages/graphboard-btree, built apart) is handed and must agree
# with: NodesLayout's form (affinity letters, (unique, columns) indexes, sqlite_schema rows),
# what a row may hold and the words of a refusal below. Its version is the seam's
# (accel.BTREE_LAYOUT_VERSION, which refuses a writer built for another): bump it and
# _btree.c's together when any of them changes (tb_nodes' own columns and indexes are not in
# it: they are handed over as data).
LAYOUT_VERSION = accel.BTREE_LAYOUT_VERSION


@dataclass(frozen=True, slots=True)
class NodesLayout:
    affinities: str  # "T" (text) or "I" (integer) per column, lower case when NOT NULL
    # (unique, columns) of the primary key's index, then of msprobe's indexes in schema order
    indexes: list[tuple[bool, tuple[int, ...]]]
    # sqlite_schema rows (type, name, tbl_name, sql): the table, then its indexes likewise
    schema_rows: list[tuple[str, str, str, str | None]]


@functools.cache
def nodes_layout() -> NodesLayout:
    """tb_nodes' layout as SQLite makes it from schema.py's DDL."""
    conn = sqlite3.connect(":memory:")
    try:
        schema.create_tables(conn)
        schema.create_indexes(conn)
        columns = conn.execute("PRAGMA table_info(tb_nodes)").fetchall()
        names = tuple(column[1] for column in columns)
        if names != schema.TB_NODES_COLUMNS:  # rows are tuples in this order
            raise AssertionError(f"tb_nodes columns {names} differ from TB_NODES_COLUMNS")
        if set(column[2] for column in columns) - {"INTEGER", "TEXT"}:
            raise AssertionError("tb_nodes may hold only INTEGER and TEXT columns")
        affinity = {"INTEGER": "I", "TEXT": "T"}
        affinities = "".join(
            affinity[column[2]].lower() if column[3] else affinity[column[2]] for column in columns
        )
        rows = conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_schema"
            " WHERE tbl_name = 'tb_nodes' ORDER BY rowid"
        ).fetchall()
    finally:
        conn.close()
    table, primary_key = rows[0], rows[1]
    by_name = {row[1]: row for row in rows[2:]}
    indexes: list[tuple[bool, tuple[int, ...]]] = [(True, (names.index("id"),))]
    schema_rows = [table, primary_key]
    for name, index_columns in schema.MSPROBE_INDEX_COLUMNS.items():
        indexes.append((False, tuple(names.index(column) for column in index_columns)))
        schema_rows.append(by_name[name])
    return NodesLayout(affinities, indexes, schema_rows)


@functools.cache
def _plain_types(indexed: bool) -> tuple[frozenset[type], ...]:
    """Per column, the exact types a row's values have in the common case: checked for a
    whole batch at once (``plain``) before the value-by-value rules."""
    layout = nodes_layout()
    sorted_columns = {c for _, columns in layout.indexes[: None if indexed else 1] for c in columns}
    kinds: list[frozenset[type]] = []
    for column, affinity in enumerate(layout.affinities):
        if affinity.upper() == "T":
            allowed: set[type] = {str}
        elif column in sorted_columns:  # a real number in an index: see refusal
            allowed = {int}
        else:
            allowed = {int, float}
        if affinity.isupper():
            allowed.add(type(None))
        kinds.append(frozenset(allowed))
    return tuple(kinds)


def plain(rows: Sequence[Any], indexed: bool) -> bool:
    """Whether every row is a tuple of the right size with values of the common types (then
    the rows are fit but for integers beyond 64 bits, which SQLite refuses by itself)."""
    kinds = _plain_types(indexed)
    if set(map(type, rows)) - {tuple} or set(map(len, rows)) - {len(kinds)}:
        return False
    columns = zip(*rows, strict=True)  # the values of each column, all rows at once
    return not rows or all(
        allowed.issuperset(map(type, values))
        for allowed, values in zip(kinds, columns, strict=True)
    )


def refusal(rows: Sequence[Any], indexed: bool) -> str | None:
    """Why the first unfit row of ``rows`` cannot be stored (as _btree.c words it), or None."""
    layout = nodes_layout()
    affinities = layout.affinities
    sorted_columns = {c for _, columns in layout.indexes[: None if indexed else 1] for c in columns}
    for row in rows:
        if not isinstance(row, tuple) or len(row) != len(affinities):
            return f"expected a row: a tuple of {len(affinities)} values, got {row!r}"
        for column, value in enumerate(row):
            text = affinities[column].upper() == "T"
            if value is None:
                if affinities[column].isupper():
                    continue
                expected = "a str" if text else "an int or a float"
                return f"row {row[0]!r}, column {column}: expected {expected}, got None"
            if text:
                if isinstance(value, str):
                    continue
                expected = "a str or None"
            elif isinstance(value, int):
                if -_INT64 <= value < _INT64:
                    continue
                return f"row {row[0]!r}, column {column}: {value!r} does not fit 64 bits"
            elif isinstance(value, float):
                # stored as an integer when whole, NaN as NULL (which a NOT NULL column
                # refuses); else a real, which an index may not hold
                if value != value and affinities[column].islower():
                    return (
                        f"row {row[0]!r}, column {column}: got {value!r}, stored as NULL,"
                        " which the column may not hold"
                    )
                whole = value != value or (value.is_integer() and -_INT64 < value < _INT64)
                if whole or column not in sorted_columns:
                    continue
                return "an indexed column holds a real number, which this writer cannot sort"
            else:
                expected = "an int, a float or None"
            return f"row {row[0]!r}, column {column}: expected {expected}, got {value!r}"
    return None
