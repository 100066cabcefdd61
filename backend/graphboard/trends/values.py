"""A statistic of one node, from its parameters as the reader gives them (typed from gb_params
in graphboard's files, parsed back from the display strings only in msprobe's), and from the
relative errors the compare stored on its rows.

A node's tensors are its results: a forward or backward call's outputs (a backward call's
outputs are the gradients of the module's inputs), a ``parameters_grad`` node's parameter
gradients (kept in ``input_data``). Scalars and non-tensor arguments are left out.

Several tensors make one value: norm is the norm of them all (the root of the sum of
squares), max the largest, min the smallest, mean the mean over all their elements (each
tensor's mean weighted by its element count, equally when a shape is missing). The error is
the worst relative error msprobe stored on the target's rows (``MaxRelativeErr``,
``MinRelativeErr``, ``MeanRelativeErr``, ``NormRelativeErr``; tensor mode has only the
first) as a fraction ("12.5%" is 0.125); ``N/A`` rows have none. NaN or infinite metrics are
kept as infinity: the worst there is.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from enum import StrEnum
from typing import Any

from graphboard.compare.metrics import RELATIVE_METRIC_NAMES
from graphboard.dump.records import Param, Role
from graphboard.trends.modules import Pass


class Statistic(StrEnum):
    # how many times its noise band the dtype-aware verdict found a node's own difference,
    # the largest in its subtree (> 1: an error starts there): the default, where the viewer points
    EXCESS = "excess"
    ERROR = "error"  # worst relative error of a compare's target rows
    LEVEL = "level"  # worst precision level in the node's subtree: 0 pass, 1 warning, 2 error
    NORM = "norm"
    MAX = "max"
    MIN = "min"
    MEAN = "mean"


RAW_STATISTICS = frozenset({Statistic.NORM, Statistic.MAX, Statistic.MIN, Statistic.MEAN})


def results_column(pass_: Pass) -> str:
    """The ``tb_nodes`` column holding a node's results."""
    return "input_data" if pass_ is Pass.PARAMETERS_GRAD else "output_data"


def result_tensors(params: list[Param], pass_: Pass) -> list[Param]:
    """The node's results among its parameters (the tensors ``results_column`` holds)."""
    outputs = pass_ is not Pass.PARAMETERS_GRAD
    return [param for param in params if param.is_tensor and (param.role is Role.OUTPUT) is outputs]


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _elements(param: Param) -> float:
    if not param.shape:
        return 1.0
    count = 1.0
    for size in param.shape:
        if isinstance(size, bool) or not isinstance(size, int):
            return 1.0
        count *= size
    return count


def raw_value(tensors: list[Param], statistic: Statistic) -> float | None:
    """Norm, max, min or mean of the node's result tensors (None: no tensor holds that
    number)."""
    if statistic is Statistic.NORM:
        norms = [_float(param.norm) for param in tensors]
        present = [norm for norm in norms if norm is not None]
        return math.sqrt(math.fsum(norm * norm for norm in present)) if present else None
    if statistic is Statistic.MEAN:
        weighted = [
            (mean, _elements(param))
            for param in tensors
            if (mean := _float(param.mean)) is not None
        ]
        total = math.fsum(count for _mean, count in weighted)
        if not weighted or total == 0:
            return None
        return math.fsum(mean * count for mean, count in weighted) / total
    field = "max" if statistic is Statistic.MAX else "min"
    found = [number for param in tensors if (number := _float(getattr(param, field))) is not None]
    if not found:
        return None
    return max(found) if statistic is Statistic.MAX else min(found)


def _relative_error(shown: Any) -> float | None:
    """A stored relative error as a fraction: "12.5%" -> 0.125; "N/A", "" -> None."""
    if isinstance(shown, bool):
        return None
    if isinstance(shown, int | float):
        value = float(shown)
    elif isinstance(shown, str):
        text = shown.strip()
        percent = text.endswith("%")
        try:
            value = float(text.removesuffix("%"))
        except ValueError:
            return None
        if percent:
            value /= 100
    else:
        return None
    return math.inf if math.isnan(value) else abs(value)


def worst_relative_error(shown: dict[str, Any]) -> float | None:
    """The largest relative error over the node's stored rows; None when none has one."""
    found: Iterable[float | None] = (
        _relative_error(entry.get(metric))
        for entry in shown.values()
        if isinstance(entry, dict)
        for metric in RELATIVE_METRIC_NAMES
    )
    present = [value for value in found if value is not None]
    return max(present) if present else None
