"""What the monitor page and API show, read from a ``graphboard monitor`` output file: plain
queries on a connection (graphboard.monitor.store wrote the tables). A heatmap reads one
metric's series on one rank: one range of the (rank, series, step) key."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from graphboard.monitor.run import MonitorInputError

Side = Literal["target", "golden", "diff", "score"]


@dataclass(frozen=True)
class Grid:
    rows: list[str]  # target names (module x step) or ranks
    cols: list[int]  # steps
    values: list[list[float | None]]
    series: list[int]  # series id per row (module x step), for click-through


def report(connection: sqlite3.Connection) -> dict[str, object]:
    try:
        row = connection.execute(
            "SELECT value FROM gb_monitor_meta WHERE key = 'report'"
        ).fetchone()
    except sqlite3.OperationalError:
        row = None
    if row is None:
        raise MonitorInputError("not a graphboard monitor file (no gb_monitor_meta report)")
    answer: dict[str, object] = json.loads(row[0])
    return answer


def read_report(path: Path) -> dict[str, object]:
    """The report of the file at ``path``, opened read-only."""
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return report(connection)
    finally:
        connection.close()


def statistics(connection: sqlite3.Connection) -> list[str]:
    row = connection.execute(
        "SELECT value FROM gb_monitor_meta WHERE key = 'statistics'"
    ).fetchone()
    found: list[str] = json.loads(row[0]) if row else []
    return found


def series(connection: sqlite3.Connection, metric: str | None = None) -> list[dict[str, object]]:
    query = (
        "SELECT series_id, metric, target_name, module, position, numel, target_dtype, "
        "golden_dtype, departing, first_step FROM gb_monitor_series"
    )
    rows = (
        connection.execute(query + " WHERE metric = ? ORDER BY position", (metric,))
        if metric
        else connection.execute(query + " ORDER BY series_id")
    )
    keys = (
        "series_id",
        "metric",
        "target",
        "module",
        "position",
        "numel",
        "target_dtype",
        "golden_dtype",
        "departing",
        "first_step",
    )
    return [dict(zip(keys, row, strict=True)) for row in rows]


def _column(statistic: str, side: Side, known: list[str]) -> str:
    if side == "score":
        return "score"
    if statistic not in known:
        raise MonitorInputError(f"statistic {statistic!r}: expected one of {known}")
    if side == "diff":
        return f"target_{statistic} - golden_{statistic}"
    return f"{side}_{statistic}"


def heatmap(
    connection: sqlite3.Connection, metric: str, statistic: str, side: Side, rank: int
) -> Grid:
    """Targets of ``metric`` (the monitor's order) x every step, on one rank."""
    expression = _column(statistic, side, statistics(connection))
    found = series(connection, metric)
    if not found:
        raise MonitorInputError(f"metric {metric!r}: not in this file")
    ids = [int(str(item["series_id"])) for item in found]
    row_of = {series_id: index for index, series_id in enumerate(ids)}
    cells = connection.execute(
        f"SELECT series_id, step, {expression} FROM gb_monitor_cells "
        "WHERE rank = ? AND series_id BETWEEN ? AND ?",
        (rank, min(ids), max(ids)),
    ).fetchall()
    steps = sorted({cell[1] for cell in cells})
    at_step = {step: index for index, step in enumerate(steps)}
    values: list[list[float | None]] = [[None] * len(steps) for _ in ids]
    for series_id, step, value in cells:
        row = row_of.get(series_id)
        if row is not None:
            values[row][at_step[step]] = value
    return Grid(
        rows=[str(item["target"]) for item in found],
        cols=steps,
        values=values,
        series=[int(str(item["series_id"])) for item in found],
    )


def ranks_grid(connection: sqlite3.Connection, series_id: int, statistic: str, side: Side) -> Grid:
    """One series: rank x step."""
    expression = _column(statistic, side, statistics(connection))
    ranks_present = [int(rank) for rank in report(connection).get("ranks", [])]  # type: ignore[attr-defined]
    cells = [
        (rank, step, value)
        for rank in ranks_present
        for step, value in connection.execute(
            f"SELECT step, {expression} FROM gb_monitor_cells WHERE rank = ? AND series_id = ?",
            (rank, series_id),
        )
    ]
    ranks = sorted({row[0] for row in cells})
    steps = sorted({row[1] for row in cells})
    at_rank = {r: i for i, r in enumerate(ranks)}
    at_step = {s: i for i, s in enumerate(steps)}
    values: list[list[float | None]] = [[None] * len(steps) for _ in ranks]
    for rank, step, value in cells:
        values[at_rank[rank]][at_step[step]] = value
    return Grid(
        rows=[str(r) for r in ranks], cols=steps, values=values, series=[series_id] * len(ranks)
    )


def lines(
    connection: sqlite3.Connection, series_id: int, statistic: str, rank: int
) -> dict[str, list[float | None] | list[int]]:
    """One series on one rank over steps: both runs, and the score."""
    known = statistics(connection)
    if statistic not in known:
        raise MonitorInputError(f"statistic {statistic!r}: expected one of {known}")
    rows = connection.execute(
        f"SELECT step, target_{statistic}, golden_{statistic}, score FROM gb_monitor_cells "
        "WHERE series_id = ? AND rank = ? ORDER BY step",
        (series_id, rank),
    ).fetchall()
    return {
        "steps": [row[0] for row in rows],
        "target": [row[1] for row in rows],
        "golden": [row[2] for row in rows],
        "score": [row[3] for row in rows],
    }


def grad_norm(
    connection: sqlite3.Connection, rank: int
) -> dict[str, list[float | None] | list[int]]:
    answer: dict[str, list[float | None] | list[int]] = {}
    for side in ("target", "golden"):
        rows = connection.execute(
            "SELECT step, norm FROM gb_monitor_grad_norm WHERE side = ? AND rank = ? ORDER BY step",
            (side, rank),
        ).fetchall()
        answer[f"{side}_steps"] = [row[0] for row in rows]
        answer[side] = [row[1] for row in rows]
    return answer
