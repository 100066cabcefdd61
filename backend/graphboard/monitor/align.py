"""The cells two runs share: per metric, the (target, rank, step) both recorded, by name."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from graphboard.monitor.run import MetricRows, MonitorRun, Target

Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]


@dataclass
class Aligned:
    """One metric's shared cells. ``targets`` is the target run's order, then the golden's
    targets it lacks; ``target`` indexes it. Values are in ``statistics`` order, both sides."""

    metric: str
    statistics: list[str]
    targets: list[Target]
    rank: Ints
    step: Ints
    target: Ints
    target_values: Floats
    golden_values: Floats
    numel: dict[int, int]
    target_dtype: dict[int, str]
    golden_dtype: dict[int, str]
    only_target: int  # cells one run has and the other lacks
    only_golden: int

    def __len__(self) -> int:
        return len(self.step)


def _keys(rows: MetricRows, positions: Ints, ranks: int, steps: int) -> Ints:
    return (positions[rows.target] * ranks + rows.rank) * steps + rows.step


def align(target: MonitorRun, golden: MonitorRun) -> list[Aligned]:
    statistics = [s for s in target.statistics if s in golden.statistics]
    t_columns = [target.statistics.index(s) for s in statistics]
    g_columns = [golden.statistics.index(s) for s in statistics]
    ranks = max(target.max_rank, golden.max_rank) + 1
    aligned: list[Aligned] = []
    for metric, t_rows in target.metrics.items():
        g_rows = golden.metrics.get(metric)
        if g_rows is None:
            continue
        steps = int(max(t_rows.step.max(initial=0), g_rows.step.max(initial=0))) + 1
        order: dict[Target, int] = {}
        for key in (*t_rows.targets, *g_rows.targets):
            order.setdefault(key, len(order))
        t_positions = np.array([order[k] for k in t_rows.targets], dtype=np.int64)
        g_positions = np.array([order[k] for k in g_rows.targets], dtype=np.int64)
        t_keys = _keys(t_rows, t_positions, ranks, steps)
        g_keys = _keys(g_rows, g_positions, ranks, steps)
        # the first row of a repeated key counts, as in data2db
        t_unique, t_first = np.unique(t_keys, return_index=True)
        g_unique, g_first = np.unique(g_keys, return_index=True)
        shared, t_at, g_at = np.intersect1d(
            t_unique, g_unique, assume_unique=True, return_indices=True
        )
        t_index, g_index = t_first[t_at], g_first[g_at]
        union_target = t_positions[t_rows.target[t_index]]
        numel = {int(t_positions[i]): n for i, n in t_rows.numel.items()}
        for i, n in g_rows.numel.items():
            numel.setdefault(int(g_positions[i]), n)
        aligned.append(
            Aligned(
                metric=metric,
                statistics=statistics,
                targets=list(order),
                rank=t_rows.rank[t_index],
                step=t_rows.step[t_index],
                target=union_target,
                target_values=t_rows.values[t_index][:, t_columns],
                golden_values=g_rows.values[g_index][:, g_columns],
                numel=numel,
                target_dtype={int(t_positions[i]): d for i, d in t_rows.dtype.items()},
                golden_dtype={int(g_positions[i]): d for i, d in g_rows.dtype.items()},
                only_target=len(t_unique) - len(shared),
                only_golden=len(g_unique) - len(shared),
            )
        )
    return aligned
