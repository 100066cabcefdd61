"""One run's monitor data in memory, column by column: per metric its targets in the order the
monitor first wrote them (the order it ran them: forward for activations, backward for their
gradients, the model's parameter order for weights and optimizer state) and one row per
(rank, step, target) with the statistics as floats (NaN and infinities kept)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from graphboard.errors import GraphboardError


class MonitorInputError(GraphboardError):
    """Monitor output that cannot be read: names the file, the record and what was expected."""


Target = tuple[str, int, int]  # data2db's key: (name, vpp_stage, micro_step)


@dataclass
class MetricRows:
    """One metric's rows; ``values[:, j]`` is the run's ``statistics[j]`` (NaN where absent)."""

    targets: list[Target]
    rank: npt.NDArray[np.int64]
    step: npt.NDArray[np.int64]
    target: npt.NDArray[np.int64]  # index into targets
    values: npt.NDArray[np.float64]
    numel: dict[int, int] = field(default_factory=dict)  # target index -> elements (from shape)
    dtype: dict[int, str] = field(default_factory=dict)  # target index -> dtype as written

    def __len__(self) -> int:
        return len(self.step)


@dataclass
class MonitorRun:
    source: Path
    statistics: list[str]  # the statistic columns, in data2db's order
    metrics: dict[str, MetricRows]  # in data2db's metric order
    ranks: list[int]
    min_step: int
    max_step: int
    decimals: int | None  # the decimals the monitor printed (its ``ndigits``), if known

    @property
    def max_rank(self) -> int:
        return max(self.ranks, default=0)
