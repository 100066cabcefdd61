"""Write graphs into a .vis.db: a temp file beside the target, renamed only when complete.

Each task writes a *part* file of its own (store/part_file.py: tb_nodes in bulk, no lock
contention between workers); a lone task's part is the whole file, else the parent copies
the parts into the final file with ``INSERT ... SELECT`` and renames it. A lone task's part is
written by a second process (``open_part``, store/insert_process.py), which in a compare
also formats the golden rows on its own, ahead of the match.
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import orjson

from graphboard.compare.engine import level_of_precision
from graphboard.compare.result import DataMode, Level, NodeComparison
from graphboard.compare.rollup import first_introduced_error
from graphboard.graph.model import Graph, Node
from graphboard.store import schema
from graphboard.store.display import node_display_json
from graphboard.store.insert_process import FirstJob, InsertProcess, can_fork
from graphboard.store.part_file import PartFile, encode_nodes
from graphboard.store.part_file import open_db as open_db  # the pipeline opens parts with it
from graphboard.store.statements import NodeWriter, Statements


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def temp_path_for(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


def open_new_db(path: Path) -> sqlite3.Connection:
    """A fresh database for merging parts into (indexed at the end: ``finalize``)."""
    conn = open_db(path)
    schema.create_tables(conn)
    return conn


def open_part(
    path: Path,
    in_background: bool,
    first_job: FirstJob | None = None,
    indexed: bool = True,
) -> NodeWriter:
    """A new part file for one task's graphs (``indexed``: with msprobe's indexes, when it
    will be the whole file): written by a second process when asked (and when this process
    may fork), which starts with ``first_job``; else by this one, and the job is not done.
    ``close`` it when done, or ``abandon`` it on an error and remove the file."""
    if in_background and can_fork():
        return InsertProcess(
            path, functools.partial(PartFile, indexed=indexed), first_job, encode_nodes
        )
    return PartFile(path, indexed)


def abandon(part: NodeWriter) -> None:
    """Stop writing a part that an error made useless (the caller removes the file)."""
    if isinstance(part, InsertProcess):
        part.abort()
    elif isinstance(part, PartFile):
        part.abandon()


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


def _same_path(node: Node, other: Node) -> bool:
    """Whether two nodes' matched_node_link paths are equal, without building them."""
    a: Node | None = node
    b: Node | None = other
    while a is not None and b is not None:
        if a.name != b.name:
            return False
        a, b = a.parent, b.parent
    return a is None and b is None


class Links(Enum):
    """What a graph's rows put in matched_node_link."""

    NONE = "none"  # a build: no counterpart
    MATCHED = "matched"  # the path of the matched node, "[]" when unmatched
    # Written before the match is known (a compare's golden rows, by the inserting process):
    # the node's own path, which a default match keeps; correct_links fixes the rest.
    PRESUMED = "presumed"


@dataclass(slots=True)
class PreparedRows:
    """What every row of one graph needs, computed once: its rows can then be written whole
    or in parts (``write_nodes``), by any process that holds the graph."""

    graph: Graph
    graph_id: str
    mode: DataMode | None
    links: Links
    stack_ids: dict[tuple[str, ...], str]
    stack_rows: list[tuple[str, str]]
    dump_data_dir: str | None


def _prepare(graph: Graph, links: Links, mode: DataMode | None) -> PreparedRows:
    graph_id = graph.graph_id
    stack_ids: dict[tuple[str, ...], str] = {}
    stack_rows: list[tuple[str, str]] = []
    for node in graph.ordered():
        stack = node.stack or ()
        if stack not in stack_ids:
            stack_id = f"{graph_id}_{len(stack_ids)}"
            stack_ids[stack] = stack_id
            stack_rows.append((stack_id, _json(list(stack))))
    return PreparedRows(
        graph,
        graph_id,
        mode,
        links,
        stack_ids,
        stack_rows,
        graph.tensor_dir if mode is DataMode.TENSOR else None,
    )


def _node_rows(context: PreparedRows, nodes: Iterable[Node]) -> Iterator[tuple[Any, ...]]:
    graph = context.graph
    graph_id = context.graph_id
    for node in nodes:
        inputs, outputs = node_display_json(node.params, node.name, context.mode, node.comparison)
        link = "[]"
        if context.links is Links.MATCHED:
            if node.match is not None:
                link = _link_path(node.match)
        elif context.links is Links.PRESUMED:
            link = _link_path(node)
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


def _node_columns(graph: Graph, ordered: list[Node], compared: bool) -> dict[str, Any]:
    """The per-node columns of gb_arrays (roll-ups are derived from these by arrays.roll_up)."""
    import numpy as np  # see write_summaries

    from graphboard.store import arrays

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


def write_graph(
    conn: NodeWriter, graph: Graph, counterpart: Graph | None, mode: DataMode | None
) -> None:
    """Insert one (side, step, rank) graph's nodes and stacks; ``counterpart`` in a compare."""
    rows = prepare_rows(graph, counterpart, mode)
    write_nodes(conn, rows, row_order(graph))
    write_stacks(conn, rows)


def write_graph_ahead_of_match(conn: NodeWriter, graph: Graph, mode: DataMode) -> None:
    """Format a compare's golden graph's rows before it is matched: each row's
    matched_node_link presumes the target has a node at the same path. The part holds the
    rows until ``correct_links`` has fixed the others."""
    rows = _prepare(graph, Links.PRESUMED, mode)
    write_nodes(conn, rows, row_order(graph), provisional=True)
    write_stacks(conn, rows)


def row_order(graph: Graph) -> list[str]:
    """A graph's node names in the order of their rows: id ("<graph_id>_<name>") order, names
    sorted as plain strings, as SQLite would return them by primary key (a caller writing
    several graphs into one file keeps that order by writing them in graph_id order)."""
    return sorted(graph.nodes)


def prepare_rows(graph: Graph, counterpart: Graph | None, mode: DataMode | None) -> PreparedRows:
    return _prepare(graph, Links.NONE if counterpart is None else Links.MATCHED, mode)


def write_nodes(
    conn: NodeWriter, rows: PreparedRows, names: list[str], provisional: bool = False
) -> None:
    """The tb_nodes rows of the nodes ``names``, in that order."""
    nodes = rows.graph.nodes
    conn.insert_nodes(_node_rows(rows, (nodes[name] for name in names)), provisional)


def write_stacks(conn: NodeWriter, rows: PreparedRows) -> None:
    conn.executemany(_STACK_INSERT, rows.stack_rows)


def correct_links(conn: NodeWriter, graph: Graph) -> int:
    """Fix the rows of a graph written ahead of its match whose match is not at their own
    path (unmatched, or paired across names by -fm / -lm); returns how many."""
    graph_id = graph.graph_id
    corrections: list[tuple[str, str]] = []
    for name, node in graph.nodes.items():
        if node.match is None:
            corrections.append(("[]", f"{graph_id}_{name}"))
        elif not _same_path(node, node.match):
            corrections.append((_link_path(node.match), f"{graph_id}_{name}"))
    conn.correct_node_links(corrections)
    return len(corrections)


_STACK_INSERT = "INSERT INTO tb_stack (id, stack_info) VALUES (?, ?)"


def write_summaries(conn: Statements, graphs: list[tuple[Graph, Graph | None]]) -> None:
    """graphboard's per-graph tables (gb_graphs, gb_arrays), once the graphs are scored.

    Only these need numpy (store/arrays.py), so it is imported here, not at start-up: a lone
    task gets here while the process writing its part finishes tb_nodes, so the import (0.1 s)
    costs no time, and that process never loads numpy.
    """
    for graph, counterpart in graphs:
        _write_graph_summary(conn, graph, counterpart is not None)


def write_graphs(
    conn: NodeWriter, graphs: list[tuple[Graph, Graph | None]], mode: DataMode | None
) -> None:
    """Insert (side, step, rank) graphs, each with its counterpart in a compare (else None)."""
    for graph, counterpart in sorted(graphs, key=lambda pair: pair[0].graph_id):
        write_graph(conn, graph, counterpart, mode)
    write_summaries(conn, graphs)


def _write_graph_summary(conn: Statements, graph: Graph, compared: bool) -> None:
    from graphboard.store import arrays  # see write_summaries

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
