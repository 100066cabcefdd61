"""Write graphs into a .vis.db: a temp file beside the target, renamed only when complete.

Workers of a multi-rank build each write a *part* file of their own (no lock contention);
the parent copies parts into the final file with ``INSERT ... SELECT`` and renames it.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from graphboard.compare.engine import level_of_precision
from graphboard.compare.result import DataMode, Level, NodeComparison
from graphboard.compare.rollup import first_introduced_error
from graphboard.errors import StoreError
from graphboard.graph.model import Graph, Node
from graphboard.store import arrays, schema
from graphboard.store.display import node_display_json

_BATCH = 2000


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def temp_path_for(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


def open_new_db(path: Path) -> sqlite3.Connection:
    """A fresh database tuned for one bulk writer (durability comes from the final rename).

    Indexes come last (``finalize``): measured at 300k nodes, building them once over the
    finished table beats keeping them up to date row by row (3.1 s against 4.6 s).
    """
    conn = open_db(path)
    schema.create_tables(conn)
    return conn


def open_db(path: Path) -> sqlite3.Connection:
    """A database being built (new or a finished part), tuned for one bulk writer."""
    try:
        conn = sqlite3.connect(path, isolation_level=None)
    except sqlite3.Error as error:
        raise StoreError(f"{path}: cannot open the database: {error}") from None
    conn.execute("PRAGMA journal_mode=OFF")
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("PRAGMA cache_size=-262144")
    return conn


@dataclass(slots=True)
class ConfigRow:
    graph_type: str  # "build" | "compare"
    task: str  # "" for a build, else DataMode value
    tool_tip: str | None
    micro_steps: int
    overflow_check: bool
    node_colors: Any  # JSON-able; None for a build
    rank_list: Sequence[int]
    step_list: Sequence[int]


def _link_path(node: Node) -> str:
    """msprobe's matched_node_link: the JSON path from the root down to ``node``.

    Built per row from the parent chain (a few levels) rather than kept for every node:
    a million paths of a whole side would hold hundreds of megabytes.
    """
    names: list[str] = []
    current: Node | None = node
    while current is not None:
        names.append(current.name)
        current = current.parent
    names.reverse()
    return _json(names)


@dataclass(slots=True)
class _GraphRows:
    """What every row of one graph needs, computed once before rows are split among processes."""

    graph: Graph
    graph_id: str
    mode: DataMode | None
    compared: bool
    stack_ids: dict[tuple[str, ...], str]
    dump_data_dir: str | None


def _prepare(
    graph: Graph, counterpart: Graph | None, mode: DataMode | None
) -> tuple[_GraphRows, list[tuple[str, str]]]:
    graph_id = graph.graph_id
    stack_ids: dict[tuple[str, ...], str] = {}
    stack_rows: list[tuple[str, str]] = []
    for node in graph.ordered():
        stack = node.stack or ()
        if stack not in stack_ids:
            stack_id = f"{graph_id}_{len(stack_ids)}"
            stack_ids[stack] = stack_id
            stack_rows.append((stack_id, _json(list(stack))))
    rows = _GraphRows(
        graph,
        graph_id,
        mode,
        counterpart is not None,
        stack_ids,
        graph.tensor_dir if mode is DataMode.TENSOR else None,
    )
    return rows, stack_rows


def _node_rows(items: list[tuple[_GraphRows, Node]]) -> Iterator[tuple[Any, ...]]:
    for context, node in items:
        graph = context.graph
        graph_id = context.graph_id
        inputs, outputs = node_display_json(node.params, node.name, context.mode, node.comparison)
        link = "[]"
        if context.compared and node.match is not None:
            link = _link_path(node.match)
        yield (
            f"{graph_id}_{node.name}",
            graph_id,
            node.order,
            node.name,
            str(int(node.type)),
            node.parent.name if node.parent is not None else "",
            _json([child.name for child in node.children]) if node.children else "",
            node.precision,
            node.overflow,
            node.micro_step or 0,
            link,
            context.stack_ids[node.stack or ()],
            "",
            _json(node.distributed) if node.distributed is not None else "{}",
            0,
            inputs,
            outputs,
            graph.side,
            context.dump_data_dir,
            graph.step,
            graph.rank,
            1 if node.name.startswith("Distributed") else 0,
        )


def _can_fork() -> bool:
    # Forking a process that runs other threads (a server) can deadlock the child.
    return hasattr(os, "fork") and threading.active_count() == 1


def _insert_rows(conn: sqlite3.Connection, items: list[tuple[_GraphRows, Node]]) -> None:
    conn.execute("BEGIN")
    conn.executemany(_TB_INSERT, _node_rows(items))
    conn.execute("COMMIT")


def _work_midpoint(items: list[tuple[_GraphRows, Node]]) -> int:
    weights = [
        1 + len(node.params or ()) * (3 if node.comparison is not None else 1) for _, node in items
    ]
    target = sum(weights) / 2
    done = 0
    for index, weight in enumerate(weights):
        done += weight
        if done >= target:
            return index + 1
    return len(items)


def _insert_rows_in_two_processes(
    conn: sqlite3.Connection, items: list[tuple[_GraphRows, Node]], scratch: Path
) -> None:
    """Format and insert the upper half of the rows in a forked child, the lower half here.

    Formatting rows and SQLite's inserting them are most of a write (measured at 27k records
    a side: 0.4 s and 0.9 s); the child inherits the finished graph copy-on-write, so nothing
    is pickled. Its rows have the larger ids, so copying them in afterwards appends to the
    primary-key index. The halves are equal in work, not in rows: a scored target row holds
    about three times the text of a golden one.
    """
    half = _work_midpoint(items)
    scratch.unlink(missing_ok=True)
    pid = os.fork()
    if pid == 0:  # the child: write, then leave without running the parent's cleanup
        status = 1
        try:
            part = open_new_db(scratch)
            _insert_rows(part, items[half:])
            part.close()
            status = 0
        finally:
            os._exit(status)
    try:
        _insert_rows(conn, items[:half])
    finally:
        _, status = os.waitpid(pid, 0)
    if status != 0:
        scratch.unlink(missing_ok=True)
        raise StoreError(
            f"{scratch}: the process writing half of the rows failed (status {status})"
        )
    conn.execute("ATTACH DATABASE ? AS half", (str(scratch),))
    try:
        conn.execute("BEGIN")
        conn.execute("INSERT INTO main.tb_nodes SELECT * FROM half.tb_nodes")
        conn.execute("COMMIT")
    finally:
        conn.execute("DETACH DATABASE half")
        scratch.unlink(missing_ok=True)


def _node_columns(graph: Graph, ordered: list[Node], compared: bool) -> dict[str, Any]:
    """The per-node columns of gb_arrays (roll-ups are derived from these by arrays.roll_up)."""
    count = len(ordered)
    parent = np.full(count, arrays.NONE, np.int32)
    matched = np.full(count, arrays.NONE if not compared else 0, np.int8)
    counterpart = np.full(count, arrays.NONE, np.int32)
    level = np.full(count, arrays.NONE, np.int8)
    introduced = np.zeros(count, np.int8)
    overflow = np.zeros(count, np.int8)
    for index, node in enumerate(ordered):
        if node.parent is not None:
            parent[index] = node.parent.order
        if node.match is not None:
            matched[index] = 1
            counterpart[index] = node.match.order
        node_level = level_of_precision(node.precision)
        if node_level is not None:
            level[index] = node_level
        comparison: NodeComparison | None = node.comparison
        introduced_level = comparison.introduced_level if comparison is not None else None
        if introduced_level is not None:
            introduced[index] = introduced_level
        if node.overflow:
            overflow[index] = arrays.OVERFLOW_CODES[node.overflow]
    columns = arrays.structure(parent)
    columns.update(
        matched=matched,
        counterpart=counterpart,
        level=level,
        introduced=introduced,
        overflow=overflow,
    )
    arrays.roll_up(columns, compared)
    return columns


_TB_INSERT = f"INSERT INTO tb_nodes ({', '.join(schema.TB_NODES_COLUMNS)}) VALUES ({', '.join('?' * len(schema.TB_NODES_COLUMNS))})"


PARALLEL_MIN_NODES = 20_000  # below this a fork costs more than it saves


def write_graphs(
    conn: sqlite3.Connection,
    graphs: list[tuple[Graph, Graph | None]],
    mode: DataMode | None,
    parallel_scratch: Path | None = None,
) -> None:
    """Insert (side, step, rank) graphs, each with its counterpart in a compare (else None).

    With ``parallel_scratch`` (a temp path) and a big enough graph, rows are formatted and
    inserted by two processes.
    """
    items: list[tuple[_GraphRows, Node]] = []
    stack_rows: list[tuple[str, str]] = []
    # Rows go in id ("<graph_id>_<name>") order so the primary-key index grows at its end
    # instead of splitting pages: graph by graph, names sorted as plain strings.
    for graph, counterpart in sorted(graphs, key=lambda pair: pair[0].graph_id):
        context, stacks = _prepare(graph, counterpart, mode)
        stack_rows.extend(stacks)
        nodes = graph.nodes
        items.extend((context, nodes[name]) for name in sorted(nodes))
    if parallel_scratch is not None and len(items) >= PARALLEL_MIN_NODES and _can_fork():
        _insert_rows_in_two_processes(conn, items, parallel_scratch)
    else:
        _insert_rows(conn, items)
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO tb_stack (id, stack_info) VALUES (?, ?)", stack_rows)
    for graph, counterpart in graphs:
        _write_graph_summary(conn, graph, counterpart is not None)
    conn.execute("COMMIT")


def _write_graph_summary(conn: sqlite3.Connection, graph: Graph, compared: bool) -> None:
    ordered = graph.ordered()
    arrays.write(
        conn,
        graph.graph_id,
        (node.name for node in ordered),
        _node_columns(graph, ordered, compared),
    )
    counts = {Level.PASS: 0, Level.WARNING: 0, Level.ERROR: 0}
    matched = 0
    for node in graph.nodes.values():
        if node.match is not None:
            matched += 1
        if node.comparison is not None and node.comparison.level is not None:
            counts[node.comparison.level] += 1
    first_error = first_introduced_error(graph) if compared else None
    conn.execute(
        "INSERT INTO gb_graphs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            graph.graph_id,
            graph.side,
            graph.step,
            graph.rank,
            graph.dump_dir,
            graph.task,
            graph.level,
            graph.framework,
            len(graph.nodes),
            graph.micro_steps,
            matched if compared else None,
            len(graph.nodes) - matched if compared else None,
            counts[Level.PASS] if compared else None,
            counts[Level.WARNING] if compared else None,
            counts[Level.ERROR] if compared else None,
            first_error.name if first_error is not None else None,
            _json(graph.orphans),
            _json(graph.rescued_grads),
            _json(graph.warnings),
        ),
    )


def write_config(conn: sqlite3.Connection, config: ConfigRow) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO tb_config VALUES ('1', ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            config.graph_type,
            config.task,
            config.tool_tip,
            config.micro_steps,
            1 if config.overflow_check else 0,
            json.dumps(config.node_colors, ensure_ascii=False)
            if config.node_colors is not None
            else "null",
            _json(list(config.rank_list)),
            _json(list(config.step_list)),
        ),
    )


def write_meta(conn: sqlite3.Connection, meta: dict[str, Any]) -> None:
    conn.executemany(
        "INSERT OR REPLACE INTO gb_meta (key, value) VALUES (?, ?)",
        [(key, json.dumps(value, ensure_ascii=False, default=str)) for key, value in meta.items()],
    )


_COPIED_TABLES = ("tb_nodes", "tb_stack", "gb_graphs", "gb_arrays")


def merge_part(conn: sqlite3.Connection, part: Path) -> None:
    """Copy a worker's part file into the final database, then delete the part."""
    conn.execute("ATTACH DATABASE ? AS part", (str(part),))
    try:
        conn.execute("BEGIN")
        for table in _COPIED_TABLES:
            conn.execute(f"INSERT INTO main.{table} SELECT * FROM part.{table}")
        conn.execute("COMMIT")
    finally:
        conn.execute("DETACH DATABASE part")
    part.unlink(missing_ok=True)


def finalize(conn: sqlite3.Connection) -> None:
    """Index, switch to rollback journaling (readers create no -wal files), close."""
    schema.create_indexes(conn)
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.close()
