"""The monitor's CSV folders of one run into a MonitorRun, as msprobe's ``data2db`` reads them
(micro-step mode, its default): a row's step becomes the global step ``prefix[step] +
micro_step``, where ``prefix`` counts the micro steps of every earlier step seen in any rank or
metric, and targets are ``(name, vpp_stage, 0)``; the first row of a repeated key wins.

A file is parsed column by column (numpy converts a column of text at once); a file whose key
columns do not all convert is read row by row, skipping the rows data2db skips."""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from graphboard.monitor.formats import METRICS, RANK_FOLDER, STATISTICS, metric_of_file
from graphboard.monitor.run import MetricRows, MonitorInputError, MonitorRun, Target

MAX_DECIMALS = 17  # more printed decimals than a double holds say nothing more
Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]


def rank_folders(root: Path) -> dict[int, Path]:
    """The monitor's rank folders under ``root`` (one per rank; data2db keeps the last listed
    of a rank's several, graphboard refuses the ambiguity)."""
    if not root.is_dir():
        raise MonitorInputError(
            f"{root}: not a folder of monitor output (expected <time>-rank<r>-<id>/)"
        )
    found: dict[int, Path] = {}
    for entry in sorted(os.listdir(root)):
        match = RANK_FOLDER.match(entry)
        if match is None or not (root / entry).is_dir():
            continue
        rank = int(match.group(2))
        if rank in found:
            raise MonitorInputError(
                f"{root}: two folders for rank {rank} ({found[rank].name}, {entry}); "
                "expected one run's output (move the other run's folders away)"
            )
        found[rank] = root / entry
    if not found:
        raise MonitorInputError(f"{root}: no monitor rank folders (expected <time>-rank<r>-<id>/)")
    return found


@dataclass
class _Block:
    """One file's rows, converted."""

    rank: int
    step: Ints
    micro: Ints
    target: Ints
    statistics: list[str]
    values: Floats  # (rows, len(statistics))


@dataclass
class _Metric:
    targets: dict[Target, int] = field(default_factory=dict)
    blocks: list[_Block] = field(default_factory=list)
    numel: dict[int, int] = field(default_factory=dict)
    dtype: dict[int, str] = field(default_factory=dict)


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan  # data2db stores what float() refuses as NULL


def _decimals(text: str) -> int:
    """Decimals printed in a fixed or exponent notation number (``1e-12`` has 12)."""
    mantissa, _, exponent = text.lower().partition("e")
    places = len(mantissa.partition(".")[2])
    if exponent:
        try:
            places -= int(exponent)
        except ValueError:
            return 0
    return max(0, min(MAX_DECIMALS, places))


def _numel(shape: str) -> int | None:
    text = shape.strip().strip("[]()")
    if not text:
        return 1
    try:
        return math.prod(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        return None


def _csv_files(folder: Path) -> Iterator[tuple[str, Path]]:
    """(metric, file) in data2db's metric order, each metric's files by first step."""
    files: dict[str, list[tuple[int, Path]]] = {}
    for entry in os.listdir(folder):
        metric = metric_of_file(entry)
        if metric is not None:
            first = int(entry[len(metric) + 1 :].partition("-")[0])
            files.setdefault(metric, []).append((first, folder / entry))
    for metric in METRICS:
        for _first, path in sorted(files.get(metric, [])):
            yield metric, path


def _integers(column: tuple[str, ...] | None, count: int) -> Ints:
    if column is None:
        return np.zeros(count, dtype=np.int64)
    # ValueError: a row data2db would skip
    return np.fromiter(map(int, column), dtype=np.int64, count=len(column))


def _floats(column: tuple[str, ...]) -> Floats:
    try:
        return np.array(column, dtype=np.float64)
    except ValueError:
        return np.array([_number(text) if text else math.nan for text in column])


def _keyed_rows(header: list[str], rows: list[list[str]]) -> list[list[str]]:
    """The rows data2db keeps: those whose name, vpp_stage, step and micro_step convert."""
    index = {name: position for position, name in enumerate(header)}
    kept = []
    for row in rows:
        if len(row) != len(header):
            continue
        try:
            int(row[index["vpp_stage"]])
            for key in ("step", "micro_step"):
                if key in index:
                    int(row[index[key]])
        except ValueError:
            continue
        kept.append(row)
    return kept


def _read_file(path: Path, rank: int, metric: _Metric) -> tuple[_Block, int | None] | None:
    with path.open(newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None:
            return None
        rows = list(reader)
    index = {name: position for position, name in enumerate(header)}
    for required in ("name", "vpp_stage"):
        if required not in index:
            raise MonitorInputError(
                f"{path}: no '{required}' column (expected the monitor's header "
                "vpp_stage,name,step,...)"
            )
    if not rows:
        return None
    try:
        columns = list(zip(*rows, strict=True))
        vpp = _integers(columns[index["vpp_stage"]], len(rows))
        step = _integers(columns[index["step"]] if "step" in index else None, len(rows))
        micro = _integers(
            columns[index["micro_step"]] if "micro_step" in index else None, len(rows)
        )
    except ValueError:
        rows = _keyed_rows(header, rows)
        if not rows:
            return None
        columns = list(zip(*rows, strict=True))
        vpp = _integers(columns[index["vpp_stage"]], len(rows))
        step = _integers(columns[index["step"]] if "step" in index else None, len(rows))
        micro = _integers(
            columns[index["micro_step"]] if "micro_step" in index else None, len(rows)
        )
    names = columns[index["name"]]
    targets = metric.targets
    before = len(targets)
    ids = [
        targets.setdefault((name, stage, 0), len(targets))
        for name, stage in zip(names, vpp.tolist(), strict=True)
    ]
    if len(targets) > before:  # a new target: its elements and dtype, from its first row
        new = set(range(before, len(targets)))
        for position, target in enumerate(ids):
            if target in new:
                new.discard(target)
                row = rows[position]
                if "shape" in index and (numel := _numel(row[index["shape"]])) is not None:
                    metric.numel[target] = numel
                if "dtype" in index:
                    metric.dtype[target] = row[index["dtype"]]
                if not new:
                    break
    statistics = [stat for stat in STATISTICS if stat in index]
    values = np.empty((len(rows), len(statistics)))
    for column, stat in enumerate(statistics):
        values[:, column] = _floats(columns[index[stat]])
    printed = [row[index[stat]] for stat in statistics for row in rows[:: max(1, len(rows) // 16)]]
    decimals = max((_decimals(text) for text in printed if text), default=None)
    block = _Block(rank, step, micro, np.array(ids, dtype=np.int64), statistics, values)
    return block, decimals


def read_csv_run(root: Path) -> MonitorRun:
    folders = rank_folders(root)
    metrics: dict[str, _Metric] = {}
    decimals: int | None = None
    for rank, folder in sorted(folders.items()):
        for name, path in _csv_files(folder):
            metric = metrics.setdefault(name, _Metric())
            found = _read_file(path, rank, metric)
            if found is None:
                continue
            block, printed = found
            metric.blocks.append(block)
            if printed is not None:
                decimals = printed if decimals is None else max(decimals, printed)
    # data2db's global step: prefix[step] + micro_step, prefix counting every earlier step's
    # micro steps (the most any rank or metric recorded)
    micro_counts: dict[int, int] = {}
    for metric in metrics.values():
        for block in metric.blocks:
            steps, inverse = np.unique(block.step, return_inverse=True)
            most = np.zeros(len(steps), dtype=np.int64)
            np.maximum.at(most, inverse, block.micro + 1)
            for step, count in zip(steps.tolist(), most.tolist(), strict=True):
                micro_counts[step] = max(micro_counts.get(step, 0), count)
    ordered = sorted(micro_counts)
    prefix = np.cumsum([0] + [micro_counts[s] for s in ordered])
    at = {step: int(prefix[i]) for i, step in enumerate(ordered)}
    statistics = [
        s
        for s in STATISTICS
        if any(s in block.statistics for m in metrics.values() for block in m.blocks)
    ]
    result: dict[str, MetricRows] = {}
    for name in METRICS:
        if name not in metrics or not metrics[name].blocks:
            continue
        metric = metrics[name]
        grid = np.full((sum(len(b.step) for b in metric.blocks), len(statistics)), np.nan)
        start = 0
        for block in metric.blocks:
            for column, stat in enumerate(block.statistics):
                grid[start : start + len(block.step), statistics.index(stat)] = block.values[
                    :, column
                ]
            start += len(block.step)
        raw = np.concatenate([b.step for b in metric.blocks])
        lookup = np.vectorize(at.__getitem__, otypes=[np.int64]) if len(at) else None
        base = lookup(raw) if lookup is not None else raw
        result[name] = MetricRows(
            targets=list(metric.targets),
            rank=np.concatenate(
                [np.full(len(b.step), b.rank, dtype=np.int64) for b in metric.blocks]
            ),
            step=base + np.concatenate([b.micro for b in metric.blocks]),
            target=np.concatenate([b.target for b in metric.blocks]),
            values=grid,
            numel=metric.numel,
            dtype=metric.dtype,
        )
    total = int(prefix[-1])
    return MonitorRun(
        source=root,
        statistics=statistics,
        metrics=result,
        ranks=sorted(folders),
        min_step=0,
        max_step=max(total - 1, 0),
        decimals=decimals,
    )
