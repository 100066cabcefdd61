"""The output ``.trend.db``: msprobe's trend tables of the target run (what ``data2db`` would
write from the same CSVs, so msprobe's trend tooling opens the file), and graphboard's
comparison beside them in gb_monitor_* tables:

* ``gb_monitor_series``: one row per (metric, target) both runs share, in the monitor's
  order (``position``), with its module, elements, both dtypes and its first departing step;
* ``gb_monitor_cells``: per rank, series and step, both runs' statistics, the score (the
  difference over the rounding noise; > 1 departs) and the ratio (over the larger of that
  noise and the golden's step-to-step change), keyed so that a metric's heatmap on one rank
  (its series are numbered consecutively) is one range of the key;
* ``gb_monitor_grad_norm``: each run's global gradient norm per rank and step;
* ``gb_monitor_meta``: the report as JSON (first departures, spikes, reduction checks), the
  inputs, the schema version.

The file is written under a temporary name in the output folder and renamed when complete.
"""

from __future__ import annotations

import json
import os
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from graphboard import __version__
from graphboard.monitor.compare import MonitorReport
from graphboard.monitor.departure import module_of
from graphboard.monitor.run import MonitorInputError
from graphboard.monitor.spikes import global_norms, gradient_rows
from graphboard.monitor.trend_db import write_trend_tables

SCHEMA_VERSION = 1


def _series_table(statistics: list[str]) -> str:
    sides = [f"{side}_{stat} REAL" for side in ("target", "golden") for stat in statistics]
    return (
        "CREATE TABLE gb_monitor_cells (series_id INTEGER NOT NULL, rank INTEGER NOT NULL, "
        f"step INTEGER NOT NULL, {', '.join(sides)}, score REAL, ratio REAL, "
        "PRIMARY KEY (rank, series_id, step)) WITHOUT ROWID"
    )


def _real(value: float) -> float | None:
    """SQLite has no NaN (it would store NULL); infinities it keeps."""
    return None if np.isnan(value) else value


def write_report(report: MonitorReport, connection: sqlite3.Connection) -> None:
    write_trend_tables(connection, report.target)
    statistics = report.judged[0].cells.statistics if report.judged else []
    connection.execute(
        "CREATE TABLE gb_monitor_series (series_id INTEGER PRIMARY KEY, metric TEXT NOT NULL, "
        "target_name TEXT NOT NULL, vpp_stage INTEGER NOT NULL, micro_step INTEGER NOT NULL, "
        "module TEXT NOT NULL, position INTEGER NOT NULL, numel INTEGER, target_dtype TEXT, "
        "golden_dtype TEXT, departing INTEGER NOT NULL, first_step INTEGER)"
    )
    connection.execute(_series_table(statistics))
    series_id = 0
    for item in report.judged:
        cells = item.cells
        ids: dict[int, int] = {}
        size = len(cells.targets)
        departing = np.bincount(cells.target[item.departs], minlength=size)
        first_step = np.full(size, np.iinfo(np.int64).max)
        np.minimum.at(first_step, cells.target[item.departs], cells.step[item.departs])
        for position in np.unique(cells.target).tolist():
            series_id += 1
            ids[position] = series_id
            name, vpp, micro = cells.targets[position]
            connection.execute(
                "INSERT INTO gb_monitor_series VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    series_id,
                    cells.metric,
                    name,
                    vpp,
                    micro,
                    module_of(cells.metric, name),
                    position,
                    cells.numel.get(position),
                    cells.target_dtype.get(position),
                    cells.golden_dtype.get(position),
                    int(departing[position]),
                    int(first_step[position]) if departing[position] else None,
                ),
            )
        width = 3 + 2 * len(statistics) + 2
        order = np.lexsort((cells.step, cells.target, cells.rank))
        series_of = np.zeros(len(cells.targets), dtype=np.int64)
        for position, identifier in ids.items():
            series_of[position] = identifier
        # numpy columns to Python lists, zipped in C: NaN binds as NULL
        columns = [
            series_of[cells.target[order]].tolist(),
            cells.rank[order].tolist(),
            cells.step[order].tolist(),
            *(cells.target_values[order, j].tolist() for j in range(len(statistics))),
            *(cells.golden_values[order, j].tolist() for j in range(len(statistics))),
            item.score[order].tolist(),
            item.ratio[order].tolist(),
        ]
        connection.executemany(
            f"INSERT INTO gb_monitor_cells VALUES ({', '.join('?' * width)})",
            zip(*columns, strict=True),
        )
    connection.execute(
        "CREATE TABLE gb_monitor_grad_norm (side TEXT NOT NULL, rank INTEGER NOT NULL, "
        "step INTEGER NOT NULL, norm REAL, PRIMARY KEY (side, rank, step)) WITHOUT ROWID"
    )
    for side, run in (("target", report.target), ("golden", report.golden)):
        gradients = gradient_rows(run)
        if gradients is None or "norm" not in run.statistics:
            continue
        norms = global_norms(gradients, run.statistics.index("norm"))
        connection.executemany(
            "INSERT INTO gb_monitor_grad_norm VALUES (?, ?, ?, ?)",
            (
                (side, rank, step, _real(float(norm)))
                for rank, (steps, values) in norms.items()
                for step, norm in zip(steps, values.tolist(), strict=True)
            ),
        )
    connection.execute("CREATE TABLE gb_monitor_meta (key TEXT PRIMARY KEY, value TEXT)")
    meta = {
        "schema_version": str(SCHEMA_VERSION),
        "graphboard_version": __version__,
        "statistics": json.dumps(statistics),
        "report": json.dumps(report.as_json()),
    }
    connection.executemany("INSERT INTO gb_monitor_meta VALUES (?, ?)", meta.items())


def output_path(output_dir: Path) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S")
    return output_dir / f"monitor_{stamp}.trend.db"


def save_report(report: MonitorReport, output_dir: Path, name: str | None = None) -> Path:
    """Write the report's file into ``output_dir`` (which must exist) as ``name`` (by default
    ``monitor_<UTC time>.trend.db``); its path."""
    if not output_dir.is_dir():
        raise MonitorInputError(f"{output_dir}: no such folder for the output")
    final = output_dir / name if name is not None else output_path(output_dir)
    if final.exists():
        raise MonitorInputError(f"{final}: exists already; not overwritten")
    temp = final.with_name(f".{final.name}.{os.getpid()}.partial")
    try:
        connection = sqlite3.connect(temp)
        try:
            connection.execute("PRAGMA journal_mode = OFF")
            connection.execute("PRAGMA synchronous = OFF")
            with connection:
                write_report(report, connection)
        finally:
            connection.close()
        os.replace(temp, final)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return final
