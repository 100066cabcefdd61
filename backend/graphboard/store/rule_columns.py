"""The dtype-aware rule set's gb_arrays columns, and a graph's columns under either rule set.

A compare's target graph gets more gb_arrays columns (schema 3), in node_order:
``dtype_level`` (-1 not scored, 0 pass, 1 warning, 2 error, 3 not judged: md5),
``dtype_introduced`` (0, or 2 where an error starts) and, since issue 29's default switch,
``dtype_excess`` (float32: how many times its band the node's own difference is,
compare/dtype_aware.py ``band_excess``; -1 not judged; Trends' default statistic; files built
before hold none and Trends says so). msprobe's own level stays in ``level``
and ``tb_nodes.precision_index``. Files without them (graphboard's before schema 3,
msprobe's) hold msprobe's verdicts only: :func:`rule_set_columns` says so.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import numpy as np
import numpy.typing as npt

from graphboard.compare.dtype_aware import Verdict
from graphboard.compare.dtype_graph import GraphVerdicts
from graphboard.compare.result import Level
from graphboard.compare.rule_sets import DEFAULT_RULES, MSPROBE, RULES
from graphboard.errors import StoreError
from graphboard.graph.model import Graph
from graphboard.store import arrays
from graphboard.store.statements import Statements

LEVEL, INTRODUCED, EXCESS = "dtype_level", "dtype_introduced", "dtype_excess"
RULE_COLUMNS = {LEVEL: "int8", INTRODUCED: "int8", EXCESS: "float32"}
NO_EXCESS = -1.0  # a node not judged (unscored, md5, an API collection)
NOT_JUDGED = int(Verdict.NOT_JUDGED)
NOT_JUDGED_LABEL = Verdict.NOT_JUDGED.label

Columns = dict[str, npt.NDArray[Any]]


def write(conn: Statements, graph: Graph) -> None:
    """The graph's dtype-aware columns, when it was scored (a compare's target)."""
    verdicts = graph.rule_verdicts
    if not isinstance(verdicts, GraphVerdicts):
        return
    ordered = graph.ordered()
    found, introduced = verdicts.verdict, verdicts.introduced
    level = np.fromiter(
        (int(found.get(node.name, arrays.NONE)) for node in ordered), np.int8, len(ordered)
    )
    starts = np.fromiter(
        (int(Level.ERROR) if node.name in introduced else 0 for node in ordered),
        np.int8,
        len(ordered),
    )
    excess = np.fromiter(
        (verdicts.excess.get(node.name, NO_EXCESS) for node in ordered), np.float32, len(ordered)
    )
    conn.executemany(
        "INSERT OR REPLACE INTO gb_arrays (graph_id, name, dtype, data) VALUES (?, ?, ?, ?)",
        [
            (graph.graph_id, LEVEL, RULE_COLUMNS[LEVEL], level.tobytes()),
            (graph.graph_id, INTRODUCED, RULE_COLUMNS[INTRODUCED], starts.tobytes()),
            (graph.graph_id, EXCESS, RULE_COLUMNS[EXCESS], excess.tobytes()),
        ],
    )


def check_rules(rules: str) -> str:
    if rules not in RULES:
        raise ValueError(f"unknown rule set {rules!r}: expected one of {', '.join(RULES)}")
    return rules


def file_default(conn: sqlite3.Connection) -> str:
    """The rule set a read of this file answers under when none is asked for:
    :data:`DEFAULT_RULES` where the file holds dtype-aware verdicts that judge something,
    msprobe's otherwise (msprobe's files, graphboard's before schema 3, a build, md5 mode,
    whose checksums the dtype-aware rules do not judge: there they would show no error at all
    where msprobe's show the mismatches)."""
    if DEFAULT_RULES == MSPROBE:
        return MSPROBE
    try:
        stored = conn.execute("SELECT data FROM gb_arrays WHERE name = ?", (LEVEL,))
        for (data,) in stored:
            level = np.frombuffer(data, dtype=RULE_COLUMNS[LEVEL])
            if ((level >= 0) & (level != NOT_JUDGED)).any():
                return DEFAULT_RULES
    except sqlite3.OperationalError:  # no gb_arrays: msprobe's file
        pass
    return MSPROBE


def has_rule_columns(columns: Columns) -> bool:
    return LEVEL in columns and INTRODUCED in columns


def rule_set_columns(columns: Columns, rules: str, file_name: str = "the file") -> Columns:
    """``columns`` under ``rules``: msprobe's as stored; dtype-aware's with ``level`` and
    ``introduced`` taken from its columns (not judged: no level) and the roll-ups (badges,
    worst descendant) recomputed from them by the builder's own ``arrays.roll_up``."""
    if check_rules(rules) == MSPROBE:
        return columns
    if not has_rule_columns(columns):
        raise StoreError(
            f"{file_name} holds no dtype-aware verdicts (msprobe's file, or graphboard's before "
            "schema 3): rebuild it with graph_build to judge it by the dtype-aware rules"
        )
    level = columns[LEVEL]
    ruled = dict(columns)
    ruled["level"] = np.where(level == NOT_JUDGED, arrays.NONE, level).astype(np.int8)
    ruled["introduced"] = columns[INTRODUCED]
    arrays.roll_up(ruled, bool((columns["matched"] >= 0).any()))
    _roll_up_every_node(ruled)
    return ruled


def _roll_up_every_node(columns: Columns) -> None:
    """Worst level, its first node and the error / warning counts over every node of a
    subtree, modules too: the dtype-aware rules put an error on the deepest node that
    introduces it, often a module (a weight's error shows where the weight is a parameter),
    which msprobe's leaf roll-ups would not show."""
    parent, level, exec_order = columns["parent"], columns["level"], columns["exec_order"]
    groups = [group[parent[group] >= 0] for group in arrays.depth_groups(columns["depth"])]
    worst = level.astype(np.int8).copy()
    errors = (level == int(Level.ERROR)).astype(np.int32)
    warnings = (level == int(Level.WARNING)).astype(np.int32)
    for group in groups:  # deepest first
        up = parent[group]
        np.maximum.at(worst, up, worst[group])
        np.add.at(errors, up, errors[group])
        np.add.at(warnings, up, warnings[group])
    unset = np.iinfo(np.int32).max
    first = np.where((level == worst) & (worst >= 0), exec_order, unset).astype(np.int32)
    for group in groups:
        up = parent[group]
        eligible = worst[group] == worst[up]
        np.minimum.at(first, up[eligible], first[group[eligible]])
    by_exec = np.empty(len(parent), np.int32)
    by_exec[exec_order] = np.arange(len(parent), dtype=np.int32)
    columns.update(
        worst_level=worst,
        worst_node=np.where(
            first == unset, arrays.NONE, by_exec[np.minimum(first, len(parent) - 1)]
        ).astype(np.int32),
        error_leaves=errors,
        warning_leaves=warnings,
    )


def subtree_excess(columns: Columns, stale: list[int]) -> npt.NDArray[np.float32] | None:
    """Per node the largest ``dtype_excess`` in its subtree (None: the file holds none), so a
    block's cell shows the call inside it where an error starts; ``stale`` nodes (rescored by
    a manual match since the build) count as not judged."""
    if EXCESS not in columns:
        return None
    worst = columns[EXCESS].astype(np.float32).copy()
    if stale:
        worst[stale] = NO_EXCESS
    parent = columns["parent"]
    for group in arrays.depth_groups(columns["depth"]):  # deepest first
        group = group[parent[group] >= 0]
        np.maximum.at(worst, parent[group], worst[group])
    return worst
