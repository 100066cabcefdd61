"""What a .vis.db holds, as rows: a graph's tb_nodes rows and stacks, graphboard's summaries
(gb_graphs, gb_arrays), tb_config and gb_meta; and the merge of task parts into one file.

Each task writes a *part* file of its own (store/sink.py: tb_nodes in bulk, no lock
contention between workers); a lone task's part is the whole file, else the parts are copied
into the final file with ``INSERT ... SELECT`` (pipeline/finish.py).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import orjson

from graphboard.compare.result import DataMode, Level
from graphboard.graph.model import Graph, Node, NodeType
from graphboard.store import param_table, rank_stats, schema
from graphboard.store.display import node_display_json
from graphboard.store.sink import PartSink
from graphboard.store.sink import open_db as open_db  # pipeline/finish.py opens parts with it
from graphboard.store.statements import Statements


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def open_new_db(path: Path) -> sqlite3.Connection:
    """A fresh database for merging parts into (indexed at the end: ``finalize``)."""
    conn = open_db(path)
    schema.create_tables(conn)
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


class Links(Enum):
    """What a graph's rows put in matched_node_link."""

    NONE = "none"  # a build: no counterpart
    MATCHED = "matched"  # the path of the matched node, "[]" when unmatched


@dataclass(slots=True)
class PreparedRows:
    """What every row of one graph needs, computed once before its rows are formatted."""

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


def node_rows(context: PreparedRows, nodes: Iterable[Node]) -> Iterator[tuple[Any, ...]]:
    """The tb_nodes rows of ``nodes``, in that order, formatted as they are taken."""
    graph = context.graph
    graph_id = context.graph_id
    for node in nodes:
        inputs, outputs = node_display_json(node.params, node.name, context.mode, node.comparison)
        link = "[]"
        if context.links is Links.MATCHED and node.counterpart is not None:
            link = _link_path(node.counterpart)
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
            _json(node.merge.info) if node.merge is not None else "",
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
    """The gb_arrays columns of a graph, from its nodes' own facts (store/columns.py)."""
    from graphboard.store import arrays, columns  # numpy: see write_summaries

    return columns.graph_columns(
        [arrays.NONE if node.parent is None else node.parent.order for node in ordered],
        [None if node.counterpart is None else node.counterpart.order for node in ordered]
        if compared
        else None,
        [node.precision for node in ordered],
        [node.overflow for node in ordered],
        [None if node.comparison is None else node.comparison.introduced_level for node in ordered],
    )


def write_graph(
    conn: PartSink, graph: Graph, counterpart: Graph | None, mode: DataMode | None
) -> None:
    """Insert one (side, step, rank) graph's nodes and stacks; ``counterpart`` in a compare."""
    write_rows(conn, prepare_rows(graph, counterpart, mode), row_order(graph))


def row_order(graph: Graph) -> list[Node]:
    """A graph's nodes in the order of their rows: node_order, as msprobe writes them (a
    caller writing several graphs into one file writes the target's before the golden's, as
    msprobe does). It is also close to the order the nodes were built in, so near their
    allocation order: a million-node graph's rows visited by name missed the cache at every
    node."""
    return graph.ordered()


def prepare_rows(graph: Graph, counterpart: Graph | None, mode: DataMode | None) -> PreparedRows:
    return _prepare(graph, Links.NONE if counterpart is None else Links.MATCHED, mode)


def write_rows(conn: PartSink, rows: PreparedRows, nodes: list[Node]) -> None:
    """The tb_nodes rows of ``nodes`` (in that order), then the graph's stacks."""
    conn.insert_nodes(node_rows(rows, nodes))
    conn.executemany(_STACK_INSERT, rows.stack_rows)


_STACK_INSERT = "INSERT INTO tb_stack (id, stack_info) VALUES (?, ?)"


def load_summary_modules() -> None:
    """Import what write_summaries needs (numpy, through store/arrays.py) ahead of it."""
    from graphboard.store import arrays, columns  # noqa: F401


def write_summaries(conn: Statements, graphs: list[tuple[Graph, Graph | None]]) -> None:
    """graphboard's per-graph tables (gb_graphs, gb_arrays, gb_params), once the graphs are scored.

    Only these need numpy (store/arrays.py), so it is imported here, not at start-up: a
    command that fails early, or lists its help, never waits for it.
    """
    from graphboard.store import rule_columns  # numpy, as the summaries

    for graph, counterpart in graphs:
        _write_graph_summary(conn, graph, counterpart is not None)
        rule_columns.write(conn, graph)
    param_table.write(conn, (graph for graph, _counterpart in graphs))
    rank_stats.write(conn, (graph for graph, _counterpart in graphs))  # merged builds only


def write_graphs(
    conn: PartSink, graphs: list[tuple[Graph, Graph | None]], mode: DataMode | None
) -> None:
    """Insert (side, step, rank) graphs, each with its counterpart in a compare (else None),
    in the order given (msprobe's: a target before its golden)."""
    for graph, counterpart in graphs:
        write_graph(conn, graph, counterpart, mode)
    write_summaries(conn, graphs)


def _write_graph_summary(conn: Statements, graph: Graph, compared: bool) -> None:
    from graphboard.store import arrays, columns  # see write_summaries

    ordered = graph.ordered()
    stored = _node_columns(graph, ordered, compared)
    arrays.write(conn, graph.graph_id, (node.name for node in ordered), stored)
    collections = [node.type is NodeType.API_COLLECTION for node in ordered]
    counts = columns.graph_counts(stored, collections, compared)
    first = counts.first_error
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
            counts.matched,
            counts.unmatched,
            counts.by_level[Level.PASS],
            counts.by_level[Level.WARNING],
            counts.by_level[Level.ERROR],
            ordered[first].name if first is not None else None,
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


_COPIED_TABLES = ("tb_nodes", "tb_stack", "gb_graphs", "gb_arrays", param_table.TABLE)


def merge_part(conn: sqlite3.Connection, part: Path) -> None:
    """Copy a worker's part file into the final database, then delete the part."""
    conn.execute("ATTACH DATABASE ? AS part", (str(part),))
    try:
        conn.execute("BEGIN")
        for table in _COPIED_TABLES:
            conn.execute(f"INSERT INTO main.{table} SELECT * FROM part.{table}")
        from graphboard.store import reference_table, rule_context_table

        # tables only some parts have: a merged build's rank statistics, a -nr reference's,
        # the dtype-aware facts of a compare's introducing nodes
        for table, ddl in (
            (rank_stats.TABLE, rank_stats.DDL),
            (reference_table.TABLE, reference_table.DDL),
            (rule_context_table.TABLE, rule_context_table.DDL),
        ):
            _copy_optional_table(conn, table, ddl)
        conn.execute("COMMIT")
    finally:
        conn.execute("DETACH DATABASE part")
    part.unlink(missing_ok=True)


def _copy_optional_table(conn: sqlite3.Connection, table: str, ddl: str) -> None:
    """Copy the attached ``part``'s rows of ``table`` into ``main`` (within the caller's
    transaction), creating it by ``ddl`` on the first part that has it."""
    found = conn.execute(
        "SELECT 1 FROM part.sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).fetchone()
    if found is None:
        return
    conn.execute(ddl.replace("IF NOT EXISTS ", "IF NOT EXISTS main.", 1))
    conn.execute(f"INSERT INTO main.{table} SELECT * FROM part.{table}")


def finalize(conn: sqlite3.Connection) -> None:
    """Index, switch to rollback journaling (readers create no -wal files), close."""
    schema.create_indexes(conn)
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.close()
