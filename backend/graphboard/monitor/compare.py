"""Two runs' monitor data compared: the stage that returns everything a report shows."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from graphboard.monitor.align import align
from graphboard.monitor.csv_reader import rank_folders, read_csv_run
from graphboard.monitor.departure import (
    KINDS,
    Departure,
    Judged,
    first_departure,
    judge,
    overall_departure,
)
from graphboard.monitor.formats import RANK_FOLDER, TREND_DB_SUFFIX
from graphboard.monitor.reduction import ReductionReport, check_reduction
from graphboard.monitor.run import MonitorInputError, MonitorRun
from graphboard.monitor.spikes import Spike, find_spikes
from graphboard.monitor.trend_db import read_trend_db


def locate_run(path: Path) -> Path:
    """What :func:`read_run` reads at ``path``, found without reading it: the ``.trend.db``
    file, or the monitor's folder of rank folders (a MonitorInputError if neither)."""
    if path.is_file():
        if not path.name.endswith(TREND_DB_SUFFIX):
            raise MonitorInputError(
                f"{path}: expected a monitor output folder or a {TREND_DB_SUFFIX} file"
            )
        return path
    if path.is_dir():
        databases = sorted(path.glob(f"*{TREND_DB_SUFFIX}"))
        has_ranks = any(p.is_dir() and RANK_FOLDER.match(p.name) for p in path.iterdir())
        if databases and not has_ranks:
            if len(databases) > 1:
                raise MonitorInputError(
                    f"{path}: {len(databases)} {TREND_DB_SUFFIX} files; name the one to read"
                )
            return databases[0]
        rank_folders(path)  # or the reason it holds none (or two of a rank)
        return path
    raise MonitorInputError(f"{path}: no such file or folder")


def find_runs(root: Path, limit: int) -> tuple[list[Path], bool]:
    """Monitor runs under ``root``, by path: folders holding rank folders (not entered
    further) and ``.trend.db`` files; hidden folders and symbolic links are skipped. At most
    ``limit``; the flag says whether more were left out."""
    found: list[Path] = []
    for folder, subfolders, files in os.walk(root, followlinks=False):
        base = Path(folder)
        names = sorted(name for name in subfolders if not name.startswith("."))
        if any(RANK_FOLDER.match(name) for name in names):
            found.append(base)
            subfolders[:] = []
        else:
            subfolders[:] = names
        found += [
            base / name
            for name in sorted(files)
            if name.endswith(TREND_DB_SUFFIX)
            and not name.startswith(".")
            and not (base / name).is_symlink()
        ]
        if len(found) > limit:
            return sorted(found)[:limit], True
    return sorted(found), False


def read_run(path: Path) -> MonitorRun:
    """A run from the monitor's folder of rank folders, a ``.trend.db``, or a folder holding
    exactly one ``.trend.db`` and no rank folders. Its source is the absolute path (the report
    names it, and the .vis.db link rule compares it with the dump folders builds record)."""
    found = locate_run(path.absolute())
    return read_trend_db(found) if found.is_file() else read_csv_run(found)


@dataclass
class MonitorReport:
    target: MonitorRun
    golden: MonitorRun
    judged: list[Judged]
    departures: dict[str, Departure | None]
    large: dict[str, Departure | None]
    first: Departure | None
    spikes: dict[str, list[Spike]]  # by side
    reduction: dict[str, ReductionReport]  # by side

    @property
    def cells(self) -> int:
        return sum(len(j.cells) for j in self.judged)

    @property
    def departing(self) -> int:
        return sum(int(j.departs.sum()) for j in self.judged)

    def summary(self) -> str:
        parts = [
            f"{self.cells} cells compared over {len(self.judged)} metrics, "
            f"{len(self.target.ranks)} rank(s), steps {self.target.min_step}-{self.target.max_step}",
            f"{self.departing} departing",
        ]
        if self.first is None:
            parts.append("no departure")
        else:
            f = self.first
            parts.append(
                f"first departure: step {f.step}, {f.module} ({f.kind}, {f.metric} {f.target}, rank {f.rank})"
            )
        spikes = self.spikes.get("target", [])
        if spikes:
            parts.append(
                f"{len(spikes)} grad-norm spike(s) in the target, first at step {spikes[0].step}"
            )
        reduction = self.reduction.get("target")
        if reduction is not None:
            if reduction.non_finite:
                first = reduction.non_finite[0].first_step
                ranks = ", ".join(
                    str(n.rank) for n in reduction.non_finite if n.first_step == first
                )
                parts.append(
                    f"non-finite unreduced gradients first on rank {ranks} at step {first}"
                )
            if reduction.bad:
                parts.append(
                    f"{len(reduction.bad)} reduced gradient(s) not the {reduction.reduction} of the ranks'"
                )
        return "; ".join(parts)

    def as_json(self) -> dict[str, object]:
        return {
            "target": str(self.target.source),
            "golden": str(self.golden.source),
            "ranks": self.target.ranks,
            "steps": [self.target.min_step, self.target.max_step],
            "cells": self.cells,
            "departing": self.departing,
            "first_departure": self.first.as_json() if self.first else None,
            "departures": {k: (d.as_json() if d else None) for k, d in self.departures.items()},
            "large_departures": {k: (d.as_json() if d else None) for k, d in self.large.items()},
            "metrics": {
                j.cells.metric: {
                    "cells": len(j.cells),
                    "departing": int(j.departs.sum()),
                    "only_target": j.cells.only_target,
                    "only_golden": j.cells.only_golden,
                }
                for j in self.judged
            },
            "spikes": {side: [s.as_json() for s in found] for side, found in self.spikes.items()},
            "reduction": {side: r.as_json() for side, r in self.reduction.items()},
            "summary": self.summary(),
        }


def compare_runs(target: MonitorRun, golden: MonitorRun) -> MonitorReport:
    judged = [judge(cells, target.decimals, golden.decimals) for cells in align(target, golden)]
    departures = {kind: first_departure(judged, kind) for kind in KINDS}
    large = {kind: first_departure(judged, kind, large=True) for kind in KINDS}
    return MonitorReport(
        target=target,
        golden=golden,
        judged=judged,
        departures=departures,
        large=large,
        first=overall_departure(departures),
        spikes={"target": find_spikes(target), "golden": find_spikes(golden)},
        reduction={"target": check_reduction(target), "golden": check_reduction(golden)},
    )


__all__ = ["MonitorReport", "compare_runs", "find_runs", "locate_run", "read_run"]
