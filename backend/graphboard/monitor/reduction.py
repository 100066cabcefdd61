"""Reduction checks on one run of several ranks: the ranks whose unreduced gradients hold
non-finite values, and the parameters whose reduced gradient is neither the mean nor the sum
of the ranks' unreduced ones.

The mean is linear, so a reduced gradient's mean must be the average (or sum) of the ranks'
unreduced means, up to rounding: each element of the reduction rounds ``log2(R) + 1`` times
(a tree of R - 1 additions and the division), each by at most ``u`` of the ranks' mean
magnitudes, which their root mean squares ``norm / sqrt(n)`` bound; plus the printed digits.
The triangle inequality adds a check the mean alone could miss: the reduced norm can not exceed
the average (sum) of the ranks' norms. The run's reduction is the one most of its checks fit;
the checks that fit neither are named.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from graphboard.monitor.noise import printing, roundoff
from graphboard.monitor.run import MonitorRun


@dataclass(frozen=True)
class NonFinite:
    rank: int
    first_step: int
    parameters: list[str]  # non-finite at first_step
    steps: int  # steps where this rank's unreduced gradients hold a non-finite value


@dataclass(frozen=True)
class BadReduction:
    step: int
    parameter: str
    reduced_mean: float
    expected_mean: float  # under the run's reduction
    ranks: int


@dataclass
class ReductionReport:
    ranks: int
    reduction: str | None  # "mean", "sum" or None (one rank, or nothing to check)
    checked: int = 0
    non_finite: list[NonFinite] = field(default_factory=list)
    bad: list[BadReduction] = field(default_factory=list)  # earliest first

    def as_json(self) -> dict[str, object]:
        return {
            "ranks": self.ranks,
            "reduction": self.reduction,
            "checked": self.checked,
            "non_finite": [vars(n) for n in self.non_finite],
            "not_reduced": [vars(b) for b in self.bad[:100]],
            "not_reduced_count": len(self.bad),
        }


def check_reduction(run: MonitorRun) -> ReductionReport:
    unreduced = run.metrics.get("grad_unreduced")
    reduced = run.metrics.get("grad_reduced")
    report = ReductionReport(ranks=len(run.ranks), reduction=None)
    if unreduced is None:
        return report
    stats = run.statistics
    checked = [stats.index(s) for s in stats if s in ("norm", "mean", "max", "min")]
    finite: npt.NDArray[np.bool_] = np.asarray(
        np.isfinite(unreduced.values[:, checked]).all(axis=1), dtype=np.bool_
    )
    for rank in sorted(set(unreduced.rank[~finite].tolist())):
        rows = np.flatnonzero(~finite & (unreduced.rank == rank))
        first = int(unreduced.step[rows].min())
        names = [
            unreduced.targets[int(t)][0]
            for t in unreduced.target[rows[unreduced.step[rows] == first]]
        ]
        report.non_finite.append(
            NonFinite(int(rank), first, names, len(set(unreduced.step[rows].tolist())))
        )
    report.non_finite.sort(key=lambda n: (n.first_step, n.rank))
    if reduced is None or len(run.ranks) < 2 or "mean" not in stats or "norm" not in stats:
        return report
    mean_at, norm_at = stats.index("mean"), stats.index("norm")
    ranks = len(run.ranks)
    groups: dict[tuple[int, int], list[int]] = {}
    position = {key: i for i, key in enumerate(unreduced.targets)}
    for row, (target, step) in enumerate(
        zip(unreduced.target.tolist(), unreduced.step.tolist(), strict=True)
    ):
        groups.setdefault((target, step), []).append(row)
    printed = 2 * printing(run.decimals)
    candidates: list[tuple[int, str, float, float, float, float, float]] = []
    for row in np.flatnonzero(reduced.rank == min(run.ranks)).tolist():
        key = reduced.targets[int(reduced.target[row])]
        at = position.get(key)
        members = groups.get((at, int(reduced.step[row]))) if at is not None else None
        if not members or len(members) != ranks or not finite[members].all():
            continue
        means = unreduced.values[members, mean_at]
        norms = unreduced.values[members, norm_at]
        numel = max(reduced.numel.get(int(reduced.target[row]), 1), 1)
        u = roundoff(reduced.dtype.get(int(reduced.target[row])))
        scale = float(np.mean(norms)) / math.sqrt(numel)
        noise = (math.log2(ranks) + 2) * u * scale + printed
        candidates.append(
            (
                int(reduced.step[row]),
                key[0],
                float(reduced.values[row, mean_at]),
                float(np.sum(means)),
                noise,
                float(reduced.values[row, norm_at]),
                float(np.sum(norms)),
            )
        )
    fits = {"mean": 0, "sum": 0}

    def fit(candidate: tuple[int, str, float, float, float, float, float], divisor: int) -> bool:
        _step, _name, mean, total, noise, norm, norms = candidate
        return (
            abs(mean - total / divisor) <= noise * (ranks / divisor)
            and norm <= (norms / divisor) * (1 + 4 * u_norm) + printed
        )

    u_norm = 2.0**-24
    for candidate in candidates:
        fits["mean"] += fit(candidate, ranks)
        fits["sum"] += fit(candidate, 1)
    report.checked = len(candidates)
    if not candidates:
        return report
    report.reduction = "mean" if fits["mean"] >= fits["sum"] else "sum"
    divisor = ranks if report.reduction == "mean" else 1
    for candidate in candidates:
        if not fit(candidate, divisor):
            step, name, mean, total, _noise, _norm, _norms = candidate
            report.bad.append(BadReduction(step, name, mean, total / divisor, ranks))
    report.bad.sort(key=lambda b: b.step)  # stable: the parameters' own order within a step
    return report
