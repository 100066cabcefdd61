"""The monitor's CSV folders of one run into a MonitorRun, as msprobe's ``data2db`` reads them
(micro-step mode, its default): a row's step becomes the global step ``prefix[step] +
micro_step``, where ``prefix`` counts the micro steps of every earlier step seen in any rank or
metric, and targets are ``(name, vpp_stage, 0)``; the first row of a repeated key wins."""

from __future__ import annotations

import csv
import math
import os
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from graphboard.monitor.formats import METRICS, RANK_FOLDER, STATISTICS, metric_of_file
from graphboard.monitor.run import MetricRows, MonitorRun, Target
from graphboard.monitor.run import MonitorInputError as InputError

MAX_DECIMALS = 17  # more printed decimals than a double holds say nothing more


def rank_folders(root: Path) -> dict[int, Path]:
    """The monitor's rank folders under ``root`` (one per rank; data2db keeps the last listed
    of a rank's several, graphboard refuses the ambiguity)."""
    if not root.is_dir():
        raise InputError(f"{root}: not a folder of monitor output (expected <time>-rank<r>-<id>/)")
    found: dict[int, Path] = {}
    for entry in sorted(os.listdir(root)):
        match = RANK_FOLDER.match(entry)
        if match is None or not (root / entry).is_dir():
            continue
        rank = int(match.group(2))
        if rank in found:
            raise InputError(
                f"{root}: two folders for rank {rank} ({found[rank].name}, {entry}); "
                "expected one run's output (move the other run's folders away)"
            )
        found[rank] = root / entry
    if not found:
        raise InputError(f"{root}: no monitor rank folders (expected <time>-rank<r>-<id>/)")
    return found


@dataclass
class _Scratch:
    """One metric's rows while reading, before the global steps are known."""

    targets: dict[Target, int]
    rank: array[int]
    step: array[int]
    micro: array[int]
    target: array[int]
    # per file: its first row, its statistics (indices into STATISTICS) and their values
    chunks: list[tuple[int, list[int], array[float]]]
    numel: dict[int, int]
    dtype: dict[int, str]

    @classmethod
    def empty(cls) -> _Scratch:
        return cls({}, array("q"), array("q"), array("q"), array("q"), [], {}, {})


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


def read_csv_run(root: Path) -> MonitorRun:
    folders = rank_folders(root)
    scratch: dict[str, _Scratch] = {}
    columns: dict[str, set[str]] = {}
    micro_counts: dict[int, int] = {}
    decimals: int | None = None
    for rank, folder in sorted(folders.items()):
        for metric, path in _csv_files(folder):
            rows = scratch.setdefault(metric, _Scratch.empty())
            with path.open(newline="") as handle:
                reader = csv.reader(handle)
                header = next(reader, None)
                if header is None:
                    continue
                index = {name: position for position, name in enumerate(header)}
                for required in ("name", "vpp_stage"):
                    if required not in index:
                        raise InputError(
                            f"{path}: no '{required}' column (expected the monitor's header "
                            "vpp_stage,name,step,...)"
                        )
                stats = [s for s in STATISTICS if s in index]
                columns.setdefault(metric, set()).update(stats)
                stat_columns = [index[s] for s in stats]
                values: array[float] = array("d")
                rows.chunks.append((len(rows.step), [STATISTICS.index(s) for s in stats], values))
                name_at, vpp_at = index["name"], index["vpp_stage"]
                step_at, micro_at = index.get("step"), index.get("micro_step")
                shape_at, dtype_at = index.get("shape"), index.get("dtype")
                first_file_row = True
                for row in reader:
                    try:
                        name = row[name_at]
                        vpp = int(row[vpp_at])
                        step = int(row[step_at]) if step_at is not None else 0
                        micro = int(row[micro_at]) if micro_at is not None else 0
                    except (ValueError, IndexError):
                        continue  # data2db skips a row it cannot key, so does graphboard
                    if micro + 1 > micro_counts.get(step, 0):
                        micro_counts[step] = micro + 1
                    key = (name, vpp, 0)
                    target = rows.targets.setdefault(key, len(rows.targets))
                    texts = [row[at] if at < len(row) else "" for at in stat_columns]
                    if first_file_row or len(rows.step) % 4096 == 0:
                        printed = max((_decimals(t) for t in texts if t), default=0)
                        decimals = printed if decimals is None else max(decimals, printed)
                        first_file_row = False
                    values.extend(_number(t) if t else math.nan for t in texts)
                    rows.rank.append(rank)
                    rows.step.append(step)
                    rows.micro.append(micro)
                    rows.target.append(target)
                    if target not in rows.dtype:
                        if shape_at is not None and shape_at < len(row):
                            numel = _numel(row[shape_at])
                            if numel is not None:
                                rows.numel[target] = numel
                        if dtype_at is not None and dtype_at < len(row):
                            rows.dtype[target] = row[dtype_at]
    prefix: dict[int, int] = {}
    total = 0
    for step in sorted(micro_counts):
        prefix[step] = total
        total += micro_counts[step]
    statistics = [s for s in STATISTICS if any(s in found for found in columns.values())]
    metrics: dict[str, MetricRows] = {}
    for metric in METRICS:
        found = scratch.get(metric)
        if found is None:
            continue
        rows = found
        steps = np.fromiter(
            (prefix[s] + m for s, m in zip(rows.step, rows.micro, strict=True)),
            dtype=np.int64,
            count=len(rows.step),
        )
        grid = np.full((len(rows.step), len(statistics)), np.nan)
        for start, stat_indices, chunk in rows.chunks:
            if not stat_indices:
                continue
            block = np.frombuffer(chunk, dtype=np.float64).reshape(-1, len(stat_indices))
            for position, stat in enumerate(stat_indices):
                column = statistics.index(STATISTICS[stat])
                grid[start : start + len(block), column] = block[:, position]
        metrics[metric] = MetricRows(
            targets=list(rows.targets),
            rank=np.frombuffer(rows.rank, dtype=np.int64),
            step=steps,
            target=np.frombuffer(rows.target, dtype=np.int64),
            values=grid,
            numel=rows.numel,
            dtype=rows.dtype,
        )
    return MonitorRun(
        source=root,
        statistics=statistics,
        metrics=metrics,
        ranks=sorted(folders),
        min_step=0,
        max_step=max(total - 1, 0),
        decimals=decimals,
    )
