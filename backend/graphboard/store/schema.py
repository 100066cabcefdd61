"""DDL of the .vis.db.

``tb_nodes``, ``tb_stack`` and ``tb_config`` keep msprobe's columns, meanings and indexes
(reference-builder.md §7) so tb_graph_ascend opens our files and we open its files.
Everything graphboard adds lives in ``gb_*`` tables, which msprobe's tools ignore.

Name search is not indexed here: an FTS5 trigram index costs ~30 µs per node at build time
(more than the rest of a build), so the server keeps its own in-memory index of lower-cased
names per graph, built on first use, which serves msprobe's files as well.
"""

from __future__ import annotations

import sqlite3

import orjson

from graphboard.store.statements import Statements

SCHEMA_VERSION = 3  # 2: gb_params; 3: dtype-aware verdicts in gb_arrays (store/rule_columns.py)

TB_NODES_COLUMNS = (
    "id",
    "graph_id",
    "node_order",
    "node_name",
    "node_type",
    "up_node",
    "sub_nodes",
    "precision_index",
    "overflow_level",
    "micro_step_id",
    "matched_node_link",
    "stack_id",
    "parallel_merge_info",
    "matched_distributed",
    "modified",
    "input_data",
    "output_data",
    "data_source",
    "dump_data_dir",
    "step",
    "rank",
    "is_distributed",
)

MSPROBE_TABLES = """
CREATE TABLE IF NOT EXISTS tb_nodes (
    id TEXT PRIMARY KEY,
    graph_id TEXT NOT NULL,
    node_order INTEGER NOT NULL,
    node_name TEXT NOT NULL,
    node_type TEXT NOT NULL,
    up_node TEXT,
    sub_nodes TEXT,
    precision_index INTEGER,
    overflow_level TEXT,
    micro_step_id INTEGER NOT NULL,
    matched_node_link TEXT,
    stack_id TEXT,
    parallel_merge_info TEXT,
    matched_distributed TEXT,
    modified INTEGER NOT NULL,
    input_data TEXT,
    output_data TEXT,
    data_source TEXT,
    dump_data_dir TEXT,
    step INTEGER NOT NULL,
    rank INTEGER NOT NULL,
    is_distributed INTEGER
);
CREATE TABLE IF NOT EXISTS tb_stack (
    id TEXT PRIMARY KEY,
    stack_info TEXT
);
CREATE TABLE IF NOT EXISTS tb_config (
    id TEXT PRIMARY KEY,
    graph_type TEXT NOT NULL,
    task TEXT,
    tool_tip TEXT,
    micro_steps INTEGER,
    overflow_check INTEGER,
    node_colors TEXT NOT NULL,
    rank_list TEXT NOT NULL,
    step_list TEXT NOT NULL
);
"""

# msprobe's indexes on tb_nodes, by name: the columns of each.
MSPROBE_INDEX_COLUMNS: dict[str, tuple[str, ...]] = {
    "index1": ("step", "rank", "data_source", "up_node", "node_order"),
    "index2": ("step", "rank", "data_source", "node_name"),
    "index3": ("step", "rank", "data_source", "node_order"),
    "index4": ("step", "rank", "node_order"),
    "index5": ("step", "rank", "micro_step_id", "node_order"),
    "index6": ("step", "rank", "modified", "matched_node_link"),
    "index7": ("is_distributed",),
}
MSPROBE_INDEXES = "\n".join(
    f"CREATE INDEX IF NOT EXISTS {name} ON tb_nodes ({', '.join(columns)});"
    for name, columns in MSPROBE_INDEX_COLUMNS.items()
)

GRAPHBOARD_TABLES = """
CREATE TABLE IF NOT EXISTS gb_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL            -- JSON
);
CREATE TABLE IF NOT EXISTS gb_graphs (
    graph_id TEXT PRIMARY KEY,     -- "{data_source}_{step}_{rank}", as tb_nodes.graph_id
    data_source TEXT NOT NULL,
    step INTEGER NOT NULL,
    rank INTEGER NOT NULL,
    dump_dir TEXT,
    task TEXT,
    level TEXT,
    framework TEXT,
    node_count INTEGER NOT NULL,
    micro_steps INTEGER NOT NULL,
    matched INTEGER,               -- compare only
    unmatched INTEGER,
    pass_count INTEGER,
    warning_count INTEGER,
    error_count INTEGER,
    first_error TEXT,              -- first node, in execution order, where error is introduced
    orphans TEXT NOT NULL,         -- JSON list of names attached under the root by graphboard
    rescued_grads TEXT NOT NULL,   -- JSON list of parameters_grad nodes msprobe would drop
    warnings TEXT NOT NULL         -- JSON list
);
"""


# Per-node data (roll-ups, levels, match state) is columnar: see store/arrays.py.
ARRAYS_TABLE = """
CREATE TABLE IF NOT EXISTS gb_arrays (
    graph_id TEXT NOT NULL,        -- "{data_source}_{step}_{rank}", as tb_nodes.graph_id
    name TEXT NOT NULL,            -- a COLUMNS key, or "names"
    dtype TEXT NOT NULL,           -- numpy dtype, or "utf8" for the NUL-separated names
    data BLOB NOT NULL,
    PRIMARY KEY (graph_id, name)
);
"""


# Nodes' parameters typed, as the builder had them, a few hundred nodes a row: store/param_table.py.
PARAMS_TABLE = """
CREATE TABLE IF NOT EXISTS gb_params (
    graph_id TEXT NOT NULL,        -- "{data_source}_{step}_{rank}", as tb_nodes.graph_id
    first_order INTEGER NOT NULL,  -- tb_nodes.node_order of the row's first node
    data BLOB NOT NULL,            -- JSON columns of its nodes' parameters (param_table.py)
    PRIMARY KEY (graph_id, first_order)
) WITHOUT ROWID;
"""


def has_table(conn: sqlite3.Connection, name: str) -> bool:
    """Whether the file holds table ``name`` (an optional gb_* table: only some builds write it)."""
    found = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    return found is not None


def create_tables(conn: sqlite3.Connection) -> None:
    conn.executescript(MSPROBE_TABLES + GRAPHBOARD_TABLES + ARRAYS_TABLE + PARAMS_TABLE)


def create_indexes(conn: Statements) -> None:
    for statement in MSPROBE_INDEXES.strip().split(";"):
        if statement.strip():
            conn.execute(statement)


def counterpart_in_link(link: str | None) -> str | None:
    """The counterpart a tb_nodes.matched_node_link names: the last name of its path from the
    root (``[]``, empty or not JSON: none)."""
    if not link:
        return None
    try:
        names = orjson.loads(link)
    except orjson.JSONDecodeError:
        return None
    return str(names[-1]) if isinstance(names, list) and names else None
