"""Spikes of the global gradient norm, and the parameters that jump with them.

The global norm of a step and rank is sqrt(sum of the parameters' squared gradient norms)
(reduced gradients; unreduced where a run has no reduced ones). A step *spikes* when its log
norm stands above the median of the previous ``WINDOW`` steps by more than ``Z`` robust
standard deviations of that window (1.4826 x the median absolute deviation: a normal
variable's standard deviation, unmoved by an earlier spike); the window's rounding floors the
deviation so that a flat run does not call its rounding a spike. Parameters jumping with a
spike are those whose own log norm stands out of their window by the same rule, in the order
of their share of the rise of the squared global norm (largest first).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from graphboard.monitor.noise import FLOAT32_ROUNDOFF
from graphboard.monitor.run import MetricRows, MonitorRun

WINDOW = 10  # steps a spike is judged against
MIN_HISTORY = 5  # steps needed before a step can be judged at all
Z = 5.0  # robust standard deviations: a normal step this far out once in ~3.5 million
MAD_TO_SD = 1.4826
Floats = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Spike:
    rank: int
    step: int
    norm: float
    baseline: float  # the window's median norm
    parameters: list[str]  # jumping with it, largest share of the rise first

    def as_json(self) -> dict[str, object]:
        return {
            "rank": self.rank,
            "step": self.step,
            "norm": self.norm,
            "baseline": self.baseline,
            "parameters": self.parameters,
        }


def gradient_rows(run: MonitorRun) -> MetricRows | None:
    return run.metrics.get("grad_reduced") or run.metrics.get("grad_unreduced")


def _stands_out(history: Floats, value: float) -> bool:
    finite = history[np.isfinite(history)]
    if len(finite) < MIN_HISTORY or not np.isfinite(value):
        return False
    centre = float(np.median(finite))
    spread = MAD_TO_SD * float(np.median(np.abs(finite - centre)))
    return value - centre > Z * max(spread, 4 * FLOAT32_ROUNDOFF)


def global_norms(rows: MetricRows, norm_at: int) -> dict[int, tuple[list[int], Floats]]:
    """Per rank: the steps and the global gradient norm at each."""
    result: dict[int, tuple[list[int], Floats]] = {}
    for rank in np.unique(rows.rank).tolist():
        mine = rows.rank == rank
        steps, inverse = np.unique(rows.step[mine], return_inverse=True)
        squares = np.zeros(len(steps))
        np.add.at(squares, inverse, rows.values[mine, norm_at] ** 2)
        result[int(rank)] = (steps.tolist(), np.sqrt(squares))
    return result


def find_spikes(run: MonitorRun) -> list[Spike]:
    rows = gradient_rows(run)
    if rows is None or "norm" not in run.statistics:
        return []
    norm_at = run.statistics.index("norm")
    spikes: list[Spike] = []
    for rank, (steps, norms) in global_norms(rows, norm_at).items():
        with np.errstate(all="ignore"):
            logs = np.log(norms)
        for position in range(len(steps)):
            history = logs[max(0, position - WINDOW) : position]
            if _stands_out(history, float(logs[position])):
                step = steps[position]
                spikes.append(
                    Spike(
                        rank=rank,
                        step=step,
                        norm=float(norms[position]),
                        baseline=float(np.exp(np.median(history[np.isfinite(history)]))),
                        parameters=_jumping(rows, norm_at, rank, steps, position),
                    )
                )
    return sorted(spikes, key=lambda s: (s.step, s.rank))


def _jumping(
    rows: MetricRows, norm_at: int, rank: int, steps: list[int], position: int
) -> list[str]:
    window = set(steps[max(0, position - WINDOW) : position])
    step = steps[position]
    shares: list[tuple[float, int]] = []
    mine = np.flatnonzero(rows.rank == rank)
    for target in np.unique(rows.target[mine]).tolist():
        cells = mine[rows.target[mine] == target]
        history = [rows.values[c, norm_at] for c in cells if int(rows.step[c]) in window]
        now = [rows.values[c, norm_at] for c in cells if int(rows.step[c]) == step]
        if not now:
            continue
        with np.errstate(all="ignore"):
            logs = np.log(np.array(history, dtype=np.float64))
            if not _stands_out(logs, float(np.log(now[0]))):
                continue
        rise = float(now[0]) ** 2 - float(np.median(np.array(history) ** 2))
        shares.append((rise, target))
    shares.sort(key=lambda item: -item[0])
    return [rows.targets[target][0] for _rise, target in shares]
