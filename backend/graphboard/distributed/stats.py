"""Statistics of a tensor as dump.json records them (dtype, shape, Max, Min, Mean, Norm)."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from graphboard.dump.records import Param


def as_float(value: Any) -> float | None:
    if type(value) is float:  # nearly always: checked first, it runs millions of times
        return value
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


class TensorStats(NamedTuple):
    """Immutable and hashable; a NamedTuple rather than a frozen dataclass because hundreds of
    thousands are made and compared per link run, and a tuple is built and compared in C."""

    dtype: str | None
    shape: tuple[Any, ...] | None
    max: float | None
    min: float | None
    mean: float | None
    norm: float | None

    @classmethod
    def of_param(cls, param: Param | None) -> TensorStats | None:
        if param is None:
            return None
        if param.is_tensor:
            high, low, mean, norm = param.max, param.min, param.mean, param.norm
            # dump.json statistics are floats: convert only what is not (one call each saved)
            return cls(
                param.dtype,
                param.shape,
                high if type(high) is float else as_float(high),
                low if type(low) is float else as_float(low),
                mean if type(mean) is float else as_float(mean),
                norm if type(norm) is float else as_float(norm),
            )
        nested = (param.extra or {}).get("tensor")  # a P2POp leaf keeps its tensor raw
        return cls.of_leaf(nested) if isinstance(nested, dict) else None

    @classmethod
    def of_leaf(cls, leaf: dict[str, Any]) -> TensorStats | None:
        if "dtype" not in leaf and "shape" not in leaf:
            return None
        shape = leaf.get("shape")
        return cls(
            leaf.get("dtype"),
            tuple(shape) if isinstance(shape, list) else None,
            as_float(leaf.get("Max")),
            as_float(leaf.get("Min")),
            as_float(leaf.get("Mean")),
            as_float(leaf.get("Norm")),
        )

    @property
    def numel(self) -> int | None:
        if self.shape is None or not all(isinstance(size, int) for size in self.shape):
            return None
        return math.prod(self.shape)

    @property
    def scale(self) -> float:
        """Largest finite magnitude: what an absolute tolerance is relative to."""
        values = (abs(value) for value in (self.max, self.min) if value is not None)
        return max((value for value in values if math.isfinite(value)), default=0.0)
