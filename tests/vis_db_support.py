"""What tests read back from a .vis.db to tell whether two builds of the same dumps agree."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path


def nodes_per_graph(path: Path) -> list[tuple[str, int, int, int]]:
    """(side, step, rank, node count) of every graph in the file, sorted."""
    with sqlite3.connect(path) as conn:
        return sorted(
            conn.execute(
                "SELECT data_source, step, rank, count(*) FROM tb_nodes "
                "GROUP BY data_source, step, rank"
            ).fetchall()
        )


# What gb_meta says about when and how a build ran, not what it made of the dumps: top-level
# keys, and (key, field) for the seconds the rank linker reports inside "links".
RUN_META = frozenset({("created_at",), ("command",), ("timings",), ("links", "seconds")})

Row = tuple[object, ...]
Typed = tuple[tuple[str, object], ...]


def _typed(row: Row) -> Typed:
    """A row compared strictly: 1, 1.0 and True differ, as do 0.0 and -0.0."""
    return tuple(
        (type(value).__name__, value.hex() if isinstance(value, float) else value) for value in row
    )


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 160 else f"{text[:160]}... ({len(text)} chars)"


def _cell_difference(mine: object, theirs: object, labels: tuple[str, str]) -> str:
    """Two values of one cell; for two texts or blobs, where they first part and around it."""
    if isinstance(mine, str | bytes) and type(mine) is type(theirs):
        assert isinstance(theirs, str | bytes)
        at = next(
            (i for i, (a, b) in enumerate(zip(mine, theirs, strict=False)) if a != b),
            min(len(mine), len(theirs)),
        )
        start = max(0, at - 40)
        return (
            f"differs at offset {at}; from offset {start}:"
            f" {labels[0]} {_shown(mine[start : at + 60])}"
            f" != {labels[1]} {_shown(theirs[start : at + 60])}"
        )
    return f"{labels[0]} {_shown(mine)} != {labels[1]} {_shown(theirs)}"


def _schema(conn: sqlite3.Connection) -> set[tuple[str, str, str, str | None]]:
    return set(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"))


def _columns(conn: sqlite3.Connection, table: str) -> tuple[list[str], list[str]]:
    """(every column, the primary key's columns in key order; every column when it has none)."""
    info = conn.execute(f'PRAGMA table_info("{table}")').fetchall()
    columns = [row[1] for row in info]
    key = [row[1] for row in sorted(info, key=lambda row: row[5]) if row[5] > 0]
    return columns, key or columns


def _rows(conn: sqlite3.Connection, table: str, key: list[str]) -> list[Row]:
    order = ", ".join(f'"{column}"' for column in key)
    rows = conn.execute(f'SELECT * FROM "{table}" ORDER BY {order}').fetchall()
    return [_without_run_fields(row) for row in rows] if table == "gb_meta" else rows


def _without_run_fields(row: Row) -> Row:
    key, value = row
    if (key,) in RUN_META:
        return (key, None)
    fields = {path[1] for path in RUN_META if path[0] == key}
    if not fields:
        return row
    kept = {name: item for name, item in json.loads(str(value)).items() if name not in fields}
    return (key, json.dumps(kept, ensure_ascii=False))


def _unkeyed_differences(
    table: str, rows: tuple[list[Row], list[Row]], labels: tuple[str, str]
) -> list[str]:
    """A table without a primary key: its rows are their own key, and may repeat."""
    counted = [Counter(_typed(row) for row in side) for side in rows]
    found = []
    for label, side, mine, other in zip(labels, rows, counted, reversed(counted), strict=True):
        extra = [row for row in side if mine[_typed(row)] > other[_typed(row)]]
        if extra:
            found.append(f"{table}: {len(extra)} row(s) only in {label}, first {_shown(extra[0])}")
    return found


def _keyed_differences(
    table: str,
    columns: list[str],
    key: list[str],
    rows: tuple[list[Row], list[Row]],
    labels: tuple[str, str],
) -> list[str]:
    positions = [columns.index(column) for column in key]

    def where(row: Row) -> dict[str, object]:
        return {column: row[i] for column, i in zip(key, positions, strict=True)}

    keyed = [{_typed(tuple(row[i] for i in positions)): row for row in side} for side in rows]
    found = []
    for label, mine, other in zip(labels, keyed, reversed(keyed), strict=True):
        missing = [row for row_key, row in mine.items() if row_key not in other]
        if missing:
            found.append(
                f"{table}: {len(missing)} row(s) only in {label}, first {where(missing[0])}"
            )
    for row_key, row in keyed[0].items():
        twin = keyed[1].get(row_key)
        if twin is None or _typed(twin) == _typed(row):
            continue
        found.extend(
            f"{table} row {where(row)}: column {column}: {_cell_difference(row[i], twin[i], labels)}"
            for i, column in enumerate(columns)
            if _typed((row[i],)) != _typed((twin[i],))
        )
    return found


def vis_db_differences(
    first: Path, second: Path, labels: tuple[str, str] = ("first", "second")
) -> list[str]:
    """Every way two .vis.db files differ: their schema (tables, indexes, views), then each
    table's rows by its primary key, column by column; gb_meta without RUN_META."""
    connections = [sqlite3.connect(f"file:{path}?mode=ro", uri=True) for path in (first, second)]
    try:
        schemas = [_schema(conn) for conn in connections]
        found = [
            f"schema: only in {label}: {sorted(entry[:3] for entry in mine - other)}"
            for label, mine, other in zip(labels, schemas, reversed(schemas), strict=True)
            if mine - other
        ]
        if found:
            return found
        tables = sorted(entry[1] for entry in schemas[0] if entry[0] == "table")
        for table in tables:
            columns, key = _columns(connections[0], table)
            rows = (_rows(connections[0], table, key), _rows(connections[1], table, key))
            if key == columns:
                found.extend(_unkeyed_differences(table, rows, labels))
            else:
                found.extend(_keyed_differences(table, columns, key, rows, labels))
        return found
    finally:
        for conn in connections:
            conn.close()


def assert_same_vis_db(first: Path, second: Path, labels: tuple[str, str]) -> None:
    """Fail with the first differences (table, row key, column) unless the files are the same."""
    found = vis_db_differences(first, second, labels)
    shown = "\n".join(found[:20])
    more = f"\n... and {len(found) - 20} more" if len(found) > 20 else ""
    assert not found, f"{first} and {second} differ:\n{shown}{more}"
