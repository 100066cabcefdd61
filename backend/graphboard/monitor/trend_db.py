"""msprobe's trend database (``data2db --format monitor``): write a run's rows in msprobe's own
tables, so msprobe's trend tooling opens the file, and read such a file back into a MonitorRun.

The tables and their meaning are msprobe's: ``monitoring_targets`` (one per (name, vpp_stage,
micro_step), shared by all metrics), ``monitoring_metrics``, ``trend_data`` (rank, global step,
target, metric and one REAL column per statistic, keyed on the first four), ``global_stats``
(step range, highest rank, each metric's statistics as comma-separated text) and the tags
(``monitoring_tags``, ``tag_target_mapping``). A statistic is stored as data2db stores it
(:func:`graphboard.monitor.formats.stored_value`), so NaN reads back as NULL and an infinity as
1e9 + 1: reading msprobe's file gives those back, not the CSV's exact text.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt

from graphboard.monitor.formats import METRICS, STATISTICS, STORED_LIMIT, layer_tags
from graphboard.monitor.run import MetricRows, MonitorInputError, MonitorRun, Target

SCHEMA = """
CREATE TABLE monitoring_targets (
    target_id INTEGER PRIMARY KEY AUTOINCREMENT,
    target_name TEXT NOT NULL,
    vpp_stage INTEGER NOT NULL,
    micro_step INTEGER NOT NULL DEFAULT 0,
    UNIQUE(target_name, vpp_stage, micro_step)
);
CREATE TABLE monitoring_metrics (
    metric_id INTEGER PRIMARY KEY AUTOINCREMENT,
    metric_name TEXT UNIQUE NOT NULL
);
CREATE TABLE monitoring_tags (
    tag_id INTEGER PRIMARY KEY AUTOINCREMENT,
    tag_name TEXT NOT NULL,
    category TEXT NOT NULL,
    metric_id INTEGER NOT NULL,
    UNIQUE(tag_name, category, metric_id),
    FOREIGN KEY (metric_id) REFERENCES monitoring_metrics(metric_id)
);
CREATE TABLE tag_target_mapping (
    tag_id INTEGER NOT NULL,
    target_id INTEGER NOT NULL,
    PRIMARY KEY (tag_id, target_id),
    FOREIGN KEY (tag_id) REFERENCES monitoring_tags(tag_id),
    FOREIGN KEY (target_id) REFERENCES monitoring_target(target_id)
);
"""


def _trend_table(statistics: list[str]) -> str:
    columns = ", ".join(f"{stat} REAL DEFAULT NULL" for stat in statistics)
    return (
        "CREATE TABLE trend_data (rank INTEGER NOT NULL, step INTEGER NOT NULL, "
        f"target_id INTEGER NOT NULL, metric_id INTEGER NOT NULL, {columns}, "
        "PRIMARY KEY (rank, step, target_id, metric_id), "
        "FOREIGN KEY (target_id) REFERENCES monitoring_targets(target_id), "
        "FOREIGN KEY (metric_id) REFERENCES monitoring_metrics(metric_id)) WITHOUT ROWID"
    )


def _metric_statistics(rows: MetricRows, statistics: list[str]) -> list[str]:
    """The statistics a metric has (a column holding any value, NaN included, counts: the
    monitor writes ``nan`` for a statistic it computed)."""
    return list(statistics) if len(rows) else []


def write_trend_tables(connection: sqlite3.Connection, run: MonitorRun) -> dict[Target, int]:
    """msprobe's tables for ``run`` into an empty database; returns the target ids."""
    connection.executescript(SCHEMA)
    target_ids: dict[Target, int] = {}
    metric_ids: dict[str, int] = {}
    for rows in run.metrics.values():
        for target in rows.targets:
            if target not in target_ids:
                target_ids[target] = len(target_ids) + 1
    connection.executemany(
        "INSERT INTO monitoring_targets VALUES (?, ?, ?, ?)",
        ((target_id, *target) for target, target_id in target_ids.items()),
    )
    for metric in run.metrics:
        metric_ids[metric] = len(metric_ids) + 1
    connection.executemany(
        "INSERT INTO monitoring_metrics VALUES (?, ?)", ((i, m) for m, i in metric_ids.items())
    )
    stat_columns = ", ".join(
        [f"{column} INTEGER DEFAULT 0" for column in ("min_step", "max_step", "max_rank")]
        + [f"{metric} TEXT DEFAULT NULL" for metric in run.metrics]
    )
    connection.execute(f"CREATE TABLE global_stats ({stat_columns})")
    connection.execute(
        f"INSERT INTO global_stats VALUES ({', '.join('?' * (3 + len(run.metrics)))})",
        (
            run.min_step,
            run.max_step,
            run.max_rank,
            *(",".join(_metric_statistics(r, run.statistics)) for r in run.metrics.values()),
        ),
    )
    connection.execute(_trend_table(run.statistics))
    placeholders = ", ".join("?" * (4 + len(run.statistics)))
    connection.executemany(
        f"INSERT OR IGNORE INTO trend_data VALUES ({placeholders})",
        _trend_rows(run, metric_ids, target_ids),
    )
    tag_ids: dict[tuple[str, str, int], int] = {}
    mapping: list[tuple[int, int]] = []
    for metric, rows in run.metrics.items():
        for target in rows.targets:
            for tag, category in sorted(layer_tags(target[0])):
                key = (tag, category, metric_ids[metric])
                tag_id = tag_ids.setdefault(key, len(tag_ids) + 1)
                mapping.append((tag_id, target_ids[target]))
    connection.executemany(
        "INSERT INTO monitoring_tags VALUES (?, ?, ?, ?)", ((i, *k) for k, i in tag_ids.items())
    )
    connection.executemany("INSERT OR IGNORE INTO tag_target_mapping VALUES (?, ?)", mapping)
    return target_ids


def _stored(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """:func:`graphboard.monitor.formats.stored_value` on a whole array (NaN stays NaN:
    SQLite binds it as NULL)."""
    stored = np.clip(values, -STORED_LIMIT, STORED_LIMIT)
    stored[np.isposinf(values)] = STORED_LIMIT + 1
    stored[np.isneginf(values)] = -STORED_LIMIT - 1
    return stored


def _trend_rows(
    run: MonitorRun, metric_ids: dict[str, int], target_ids: dict[Target, int]
) -> Iterator[tuple[int | float, ...]]:
    """Every metric's rows in the table's key order (rank, step, target, metric), so the
    B-tree is appended to; a repeated key keeps its first row (a stable sort)."""
    parts = []
    for metric, rows in run.metrics.items():
        ids = np.array([target_ids[t] for t in rows.targets], dtype=np.int64)
        parts.append(
            (
                rows.rank,
                rows.step,
                ids[rows.target] if len(ids) else rows.target,
                np.full(len(rows), metric_ids[metric], dtype=np.int64),
                _stored(rows.values),
            )
        )
    if not parts:
        return iter(())
    rank, step, target, metric_id = (np.concatenate([p[i] for p in parts]) for i in range(4))
    values = np.concatenate([p[4] for p in parts])
    order = np.lexsort((metric_id, target, step, rank))
    columns = [c[order].tolist() for c in (rank, step, target, metric_id)]
    columns += [values[order, j].tolist() for j in range(values.shape[1])]
    return zip(*columns, strict=True)


def _unstored(value: float | None) -> float:
    """A stored statistic back as a float: NULL is NaN, beyond the clamp an infinity."""
    if value is None:
        return math.nan
    if value > STORED_LIMIT:
        return math.inf
    if value < -STORED_LIMIT:
        return -math.inf
    return value


def read_trend_db(path: Path) -> MonitorRun:
    """A run from msprobe's (or graphboard's) ``.trend.db``."""
    try:
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return _read(connection, path)
        finally:
            connection.close()
    except sqlite3.DatabaseError as error:
        raise MonitorInputError(
            f"{path}: not a readable trend database ({error}); expected msprobe data2db's "
            "monitor_data.trend.db"
        ) from error


def _read(connection: sqlite3.Connection, path: Path) -> MonitorRun:
    tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
    for table in ("trend_data", "monitoring_targets", "monitoring_metrics", "global_stats"):
        if table not in tables:
            raise MonitorInputError(
                f"{path}: no table {table}; expected msprobe data2db's monitor trend database"
            )
    columns = [row[1] for row in connection.execute("PRAGMA table_info(trend_data)")]
    statistics = [stat for stat in STATISTICS if stat in columns]
    targets = {
        row[0]: (str(row[1]), int(row[2]), int(row[3]))
        for row in connection.execute(
            "SELECT target_id, target_name, vpp_stage, micro_step FROM monitoring_targets"
        )
    }
    metrics: dict[str, MetricRows] = {}
    names = dict(connection.execute("SELECT metric_id, metric_name FROM monitoring_metrics"))
    select = ", ".join(statistics)
    ranks: set[int] = set()
    for metric_id, metric in sorted(names.items(), key=lambda item: _metric_order(item[1])):
        found = connection.execute(
            f"SELECT rank, step, target_id, {select} FROM trend_data WHERE metric_id = ?",
            (metric_id,),
        ).fetchall()
        order: dict[int, int] = {}
        for target_id in sorted({row[2] for row in found}):
            order[target_id] = len(order)
        grid = np.array(
            [[_unstored(v) for v in row[3:]] for row in found], dtype=np.float64
        ).reshape(len(found), len(statistics))
        metrics[str(metric)] = MetricRows(
            targets=[targets[t] for t in order],
            rank=np.array([row[0] for row in found], dtype=np.int64),
            step=np.array([row[1] for row in found], dtype=np.int64),
            target=np.array([order[row[2]] for row in found], dtype=np.int64),
            values=grid,
        )
        ranks.update(int(row[0]) for row in found)
    bounds = connection.execute("SELECT min_step, max_step FROM global_stats").fetchone()
    return MonitorRun(
        source=path,
        statistics=statistics,
        metrics=metrics,
        ranks=sorted(ranks),
        min_step=int(bounds[0]) if bounds else 0,
        max_step=int(bounds[1]) if bounds else 0,
        decimals=None,
    )


def _metric_order(name: str) -> int:
    return METRICS.index(name) if name in METRICS else len(METRICS)


def trend_db_rows(path: Path) -> dict[tuple[str, str, int, int, int], tuple[float | None, ...]]:
    """Every trend row of a ``.trend.db`` by names, not ids: (metric, target name, vpp_stage,
    rank, step) -> statistics in data2db's order; what two files must agree on."""
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        columns = [row[1] for row in connection.execute("PRAGMA table_info(trend_data)")]
        statistics = [stat for stat in STATISTICS if stat in columns]
        query = (
            f"SELECT m.metric_name, t.target_name, t.vpp_stage, d.rank, d.step, "
            f"{', '.join('d.' + s for s in statistics)} FROM trend_data d "
            "JOIN monitoring_targets t USING (target_id) JOIN monitoring_metrics m USING (metric_id)"
        )
        return {tuple(row[:5]): tuple(row[5:]) for row in connection.execute(query)}
    finally:
        connection.close()
