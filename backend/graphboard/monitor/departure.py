"""Where two runs part: each shared cell judged against the rounding noise
(:mod:`graphboard.monitor.noise`), its size against the golden's own step-to-step variation,
and the first departure of each kind of metric.

A cell *departs* when any statistic's |target - golden| exceeds what rounding explains, or one
side is not finite where the other is (or is a different non-finite value). Its *ratio* is the
difference over the larger of that noise and the golden's typical change between consecutive
steps (the median over the run of |g[s] - g[s-1]| for that target, rank and statistic): at or
above 1 the runs are further apart than one training step moves the number ("large").

The first departure of a kind is its earliest departing step, and in it the first departing
target in the order the monitor recorded them (execution order: forward for activations,
backward for their gradients, the model's parameter order for weights), taking the kind's
metrics in the order a training step makes them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from graphboard.monitor.align import Aligned
from graphboard.monitor.noise import printing, roundoff, tolerance

Floats = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]

# Kinds of metric and the order a training step makes their metrics in.
KINDS: dict[str, tuple[str, ...]] = {
    "forward": ("actv",),
    "gradient": ("grad_unreduced", "grad_reduced", "actv_grad"),
    "state": ("param_origin", "param_updated", "exp_avg", "exp_avg_sq"),
}
KIND_OF = {metric: kind for kind, metrics in KINDS.items() for metric in metrics}


@dataclass
class Judged:
    """An Aligned metric with every cell judged."""

    cells: Aligned
    departs: Bools
    score: Floats  # max over statistics of |d| / noise (inf: a non-finite mismatch)
    ratio: Floats  # max over statistics of |d| / max(noise, golden's step-to-step change)
    worst: npt.NDArray[np.int64]  # the statistic (index) behind score


@dataclass(frozen=True)
class Departure:
    kind: str
    metric: str
    step: int
    rank: int
    target: str
    module: str
    statistic: str
    target_value: float
    golden_value: float
    ratio: float
    modules_at_step: list[str]  # every departing module of the kind at that step, in order

    def as_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "metric": self.metric,
            "step": self.step,
            "rank": self.rank,
            "target": self.target,
            "module": self.module,
            "statistic": self.statistic,
            "target_value": _json_float(self.target_value),
            "golden_value": _json_float(self.golden_value),
            "ratio": _json_float(self.ratio),
            "modules_at_step": self.modules_at_step,
        }


def _json_float(value: float) -> float | str:
    return value if np.isfinite(value) else str(value)


def module_of(metric: str, target: str) -> str:
    """The module a target belongs to: an activation's ``<module>.input`` / ``.output`` (or
    ``.input.<i>`` for one of several), a parameter's owner."""
    parts = target.split(".")
    if metric in ("actv", "actv_grad"):
        while parts and (parts[-1].isdigit() or parts[-1] in ("input", "output")):
            if parts[-1] in ("input", "output"):
                parts.pop()
                break
            parts.pop()
        return ".".join(parts)
    return ".".join(parts[:-1]) if len(parts) > 1 else target


def _step_change(cells: Aligned) -> Floats:
    """Per cell and statistic, the golden's median |g[s] - g[s-1]| over its (target, rank)."""
    count = len(cells)
    change = np.zeros((count, len(cells.statistics)))
    if count == 0:
        return change
    order = np.lexsort((cells.step, cells.rank, cells.target))
    group = cells.target[order] * (int(cells.rank.max()) + 1) + cells.rank[order]
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    ends = np.r_[starts[1:], count]
    values = cells.golden_values[order]
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        if end - start < 2:
            continue
        with np.errstate(all="ignore"):
            steps = np.abs(np.diff(values[start:end], axis=0))
        typical = [
            float(np.median(column[np.isfinite(column)])) if np.isfinite(column).any() else 0.0
            for column in steps.T
        ]
        change[order[start:end]] = typical
    return change


def judge(cells: Aligned, target_decimals: int | None, golden_decimals: int | None) -> Judged:
    count, width = len(cells), len(cells.statistics)
    printed = max(printing(target_decimals), printing(golden_decimals))
    noise = np.zeros((count, width))
    known = range(len(cells.targets))
    numel = np.array([cells.numel.get(i, 1) for i in known], dtype=np.float64)[cells.target]
    u_target = np.array([roundoff(cells.target_dtype.get(i)) for i in known])[cells.target]
    u_golden = np.array([roundoff(cells.golden_dtype.get(i)) for i in known])[cells.target]
    norm_at = cells.statistics.index("norm") if "norm" in cells.statistics else None
    t_norm = cells.target_values[:, norm_at] if norm_at is not None else None
    g_norm = cells.golden_values[:, norm_at] if norm_at is not None else None
    for column, statistic in enumerate(cells.statistics):
        noise[:, column] = tolerance(
            statistic,
            cells.target_values[:, column],
            cells.golden_values[:, column],
            t_norm,
            g_norm,
            numel,
            u_target,
            u_golden,
            printed,
        )
    t, g = cells.target_values, cells.golden_values
    with np.errstate(all="ignore"):
        difference = np.abs(t - g)
        finite = np.isfinite(t) & np.isfinite(g)
        same_special = ~finite & ((np.isnan(t) & np.isnan(g)) | (t == g))
        score = np.where(finite, difference / np.maximum(noise, np.finfo(float).tiny), np.inf)
        score = np.where(same_special, 0.0, score)
        change = _step_change(cells)
        ratio = np.where(finite, difference / np.maximum(noise, change), np.inf)
        ratio = np.where(same_special, 0.0, ratio)
    # a statistic one side lacks altogether (NaN on both: not written) says nothing
    score = np.where(np.isnan(t) & np.isnan(g), 0.0, score)
    worst = np.argmax(score, axis=1) if width else np.zeros(count, dtype=np.int64)
    best_score = score.max(axis=1) if width else np.zeros(count)
    best_ratio = ratio.max(axis=1) if width else np.zeros(count)
    return Judged(cells, best_score > 1.0, best_score, best_ratio, worst)


def first_departure(judged: list[Judged], kind: str, large: bool = False) -> Departure | None:
    """The kind's first departure (``large``: only cells with ratio >= 1)."""
    by_metric = {j.cells.metric: j for j in judged}
    earliest: int | None = None
    for metric in KINDS[kind]:
        item = by_metric.get(metric)
        if item is None:
            continue
        hits = item.departs & (item.ratio >= 1.0) if large else item.departs
        if hits.any():
            step = int(item.cells.step[hits].min())
            earliest = step if earliest is None else min(earliest, step)
    if earliest is None:
        return None
    found: Departure | None = None
    modules: list[str] = []
    for metric in KINDS[kind]:
        item = by_metric.get(metric)
        if item is None:
            continue
        hits = item.departs & (item.cells.step == earliest)
        if large:
            hits &= item.ratio >= 1.0
        rows = np.flatnonzero(hits)
        if not len(rows):
            continue
        rows = rows[np.lexsort((item.cells.rank[rows], item.cells.target[rows]))]
        for row in rows.tolist():
            module = module_of(metric, item.cells.targets[int(item.cells.target[row])][0])
            if module not in modules:
                modules.append(module)
        if found is None:
            row = int(rows[0])
            column = int(item.worst[row])
            name = item.cells.targets[int(item.cells.target[row])][0]
            found = Departure(
                kind=kind,
                metric=metric,
                step=earliest,
                rank=int(item.cells.rank[row]),
                target=name,
                module=module_of(metric, name),
                statistic=item.cells.statistics[column] if item.cells.statistics else "",
                target_value=float(item.cells.target_values[row, column]),
                golden_value=float(item.cells.golden_values[row, column]),
                ratio=float(item.ratio[row]),
                modules_at_step=modules,
            )
    return found


def overall_departure(departures: dict[str, Departure | None]) -> Departure | None:
    """The earliest of the kinds' first departures; within a step, forward before gradient
    before state, the order a training step runs them."""
    found = [d for kind in KINDS if (d := departures.get(kind)) is not None]
    return min(found, key=lambda d: (d.step, list(KINDS).index(d.kind)), default=None)
