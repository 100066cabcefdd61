"""graphboard's columns derived for a .vis.db msprobe wrote.

A file msprobe wrote has only ``tb_*`` tables. Its ``gb_arrays`` columns (structure, levels,
match state, roll-ups) and ``gb_graphs`` rows are derived from ``tb_nodes`` once, with the
builder's own :func:`graphboard.store.arrays.structure` and :func:`~graphboard.store.arrays.roll_up`,
and kept in a derived database in a cache folder, so the reader serves both kinds
of file the same way and the user's file is never written.

A derived file's name carries a stamp of its source (path, size, mtime, inode): a changed source
gets a fresh one and stale ones are removed. Used only by :mod:`graphboard.store.reader`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import sqlite3
import threading
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from graphboard.compare.result import (
    Level,
    ScoredParam,
    divergence_level,
    level_of_label,
    level_of_precision,
)
from graphboard.errors import StoreError
from graphboard.graph.model import GOLDEN_SIDE, TARGET_SIDE, NodeType
from graphboard.graph.sides import Side
from graphboard.store import arrays, schema
from graphboard.store.columns import graph_columns, graph_counts
from graphboard.store.param_parse import shows_tensor
from graphboard.store.schema import counterpart_in_link

COLUMNS_VERSION = 2  # 2: API collections left out of the level counts
_SUFFIX = ".columns.db"
_build_locks: dict[str, threading.Lock] = defaultdict(threading.Lock)
_build_locks_guard = threading.Lock()


def _path_key(source: Path) -> str:
    return hashlib.sha256(str(source.resolve()).encode()).hexdigest()[:16]


def _stamp(source: Path) -> str:
    status = source.stat()
    text = f"{COLUMNS_VERSION}:{status.st_size}:{status.st_mtime_ns}:{status.st_ino}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def columns_file_path(source: Path, cache_dir: Path) -> Path:
    """Where the columns file of ``source`` in its current state lives (it may not exist yet)."""
    return cache_dir / f"{_path_key(source)}-{_stamp(source)}{_SUFFIX}"


def _lock_for(key: str) -> threading.Lock:
    with _build_locks_guard:
        return _build_locks[key]


def ensure_columns_file(source: Path, source_conn: sqlite3.Connection, cache_dir: Path) -> Path:
    """The up-to-date columns file of ``source``, derived through ``source_conn`` if missing."""
    target = columns_file_path(source, cache_dir)
    if target.exists():
        return target
    with _lock_for(_path_key(source)):
        if target.exists():  # another request derived it while this one waited
            return target
        try:
            cache_dir.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise StoreError(
                f"{cache_dir}: cannot create the cache folder for derived indexes: {error.strerror or error}"
            ) from None
        temp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            _build(source_conn, temp)
            os.replace(temp, target)
        finally:
            temp.unlink(missing_ok=True)
        _remove_stale(target)
    return target


def restamp(before: Path, source: Path, cache_dir: Path) -> None:
    """graphboard wrote only its own tables into ``source``: the columns file derived before the
    write (``before``) still holds, so give it the new stamp instead of deriving again."""
    with contextlib.suppress(OSError):
        os.replace(before, columns_file_path(source, cache_dir))


def _remove_stale(current: Path) -> None:
    prefix = current.name.split("-", 1)[0] + "-"
    for sibling in current.parent.glob(f"{prefix}*{_SUFFIX}"):
        if sibling != current:
            sibling.unlink(missing_ok=True)


def connect_columns_file(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(
        path.resolve().as_uri() + "?mode=ro",
        uri=True,
        isolation_level=None,
        check_same_thread=False,
    )


# --- derivation ----------------------------------------------------------------------------


def introduced_level(level: int, input_data: dict[str, Any], output_data: dict[str, Any]) -> int:
    """The level code of a divergence that starts at a node of level code ``level`` (-1 none),
    judged from the ``Result`` of its stored dicts; 0 when none starts there."""
    found = divergence_level(None if level < 0 else Level(level), _scored(input_data, output_data))
    return 0 if found is None else int(found)


def _scored(input_data: dict[str, Any], output_data: dict[str, Any]) -> Iterator[ScoredParam]:
    """The scored parameters of a stored node: the dicts the compare gave a ``Result``."""
    for data, is_input in ((input_data, True), (output_data, False)):
        for shown in data.values():
            if isinstance(shown, dict) and "Result" in shown:
                level = level_of_label(str(shown["Result"]))
                yield ScoredParam(is_input, shows_tensor(shown), level or Level.PASS)


class _Graph:
    """The rows of one (side, step, rank) that the columns are derived from."""

    def __init__(self, conn: sqlite3.Connection, side: str, step: int, rank: int) -> None:
        self.side, self.step, self.rank = side, step, rank
        rows = conn.execute(
            """SELECT node_order, node_name, up_node, precision_index, overflow_level,
                      matched_node_link, node_type
               FROM tb_nodes WHERE step = ? AND rank = ? AND data_source = ? ORDER BY node_order""",
            (step, rank, side),
        ).fetchall()
        orders = [int(row[0]) for row in rows]
        if orders != list(range(len(rows))):
            raise StoreError(
                f"graph {side} step {step} rank {rank}: node_order is not 0..{len(rows) - 1}; "
                "expected msprobe's post-order numbering"
            )
        self.names = [str(row[1]) for row in rows]
        self.parents = [str(row[2] or "") for row in rows]
        self.precisions = [row[3] for row in rows]
        self.overflows = [row[4] for row in rows]
        self.links = [row[5] for row in rows]
        # API collections: their level is their children's, counted through them
        self.collections = np.fromiter(
            (str(row[6]) == str(int(NodeType.API_COLLECTION)) for row in rows), bool, len(rows)
        )
        self.order_of = {name: index for index, name in enumerate(self.names)}


def _columns(
    conn: sqlite3.Connection, graph: _Graph, other: _Graph | None
) -> dict[str, np.ndarray[Any, Any]]:
    counterpart: list[int | None] | None = None
    if other is not None:
        names = (counterpart_in_link(link) for link in graph.links)
        counterpart = [
            None if name is None else other.order_of.get(name, arrays.NONE) for name in names
        ]
    introduced: list[Level | None] = [None] * len(graph.names)
    for index, precision in enumerate(graph.precisions):
        level = level_of_precision(precision)
        if level is None or level is Level.PASS:
            continue  # nothing starts at a node that passes: its dicts need no reading
        found = conn.execute(
            "SELECT input_data, output_data FROM tb_nodes "
            "WHERE step = ? AND rank = ? AND data_source = ? AND node_name = ?",
            (graph.step, graph.rank, graph.side, graph.names[index]),
        ).fetchone()
        input_data = orjson.loads(found[0]) if found and found[0] else {}
        output_data = orjson.loads(found[1]) if found and found[1] else {}
        introduced[index] = divergence_level(level, _scored(input_data, output_data))
    parent = [
        graph.order_of.get(name, arrays.NONE) if name else arrays.NONE for name in graph.parents
    ]
    return graph_columns(parent, counterpart, graph.precisions, graph.overflows, introduced)


def _build(source: sqlite3.Connection, temp: Path) -> None:
    config = source.execute(
        "SELECT graph_type, task, micro_steps FROM tb_config LIMIT 1"
    ).fetchone()
    compared = config is not None and config[0] == "compare"
    task = config[1] if config is not None else None
    keys = [
        (int(step), int(rank))
        for step, rank in source.execute(
            "SELECT DISTINCT step, rank FROM tb_nodes ORDER BY step, rank"
        )
    ]
    derived = sqlite3.connect(temp, isolation_level=None)
    try:
        derived.execute("PRAGMA journal_mode=OFF")
        derived.execute("PRAGMA synchronous=OFF")
        derived.executescript(schema.GRAPHBOARD_TABLES + schema.ARRAYS_TABLE)
        derived.execute("BEGIN")
        for step, rank in keys:
            graphs = {side: _Graph(source, side, step, rank) for side in (TARGET_SIDE, GOLDEN_SIDE)}
            present = {side: graph for side, graph in graphs.items() if graph.names}
            for side, graph in present.items():
                other = (
                    present.get(Side.from_data_source(side).other.data_source) if compared else None
                )
                columns = _columns(source, graph, other)
                graph_id = f"{side}_{step}_{rank}"
                arrays.write(derived, graph_id, graph.names, columns)
                _write_graph_row(derived, graph, columns, compared, task, config)
        derived.execute(
            "INSERT INTO gb_meta (key, value) VALUES ('columns_version', ?)",
            (str(COLUMNS_VERSION),),
        )
        derived.execute("COMMIT")
        derived.execute("PRAGMA journal_mode=DELETE")
    finally:
        derived.close()


def _write_graph_row(
    derived: sqlite3.Connection,
    graph: _Graph,
    columns: dict[str, np.ndarray[Any, Any]],
    compared: bool,
    task: str | None,
    config: Any,
) -> None:
    counts = graph_counts(columns, graph.collections, compared)
    first = counts.first_error
    derived.execute(
        "INSERT INTO gb_graphs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            f"{graph.side}_{graph.step}_{graph.rank}",
            graph.side,
            graph.step,
            graph.rank,
            None,
            task,
            None,
            None,
            len(graph.names),
            int(config[2] or 1) if config is not None else 1,
            counts.matched,
            counts.unmatched,
            counts.by_level[Level.PASS],
            counts.by_level[Level.WARNING],
            counts.by_level[Level.ERROR],
            graph.names[first] if first is not None else None,
            "[]",
            "[]",
            "[]",
        ),
    )
