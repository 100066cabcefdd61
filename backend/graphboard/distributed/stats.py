"""Statistics of a tensor as dump.json records them (dtype, shape, Max, Min, Mean, Norm)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from graphboard.dump.records import Param


def as_float(value: Any) -> float | None:
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


@dataclass(frozen=True, slots=True)
class TensorStats:
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
            return cls(
                param.dtype,
                param.shape,
                as_float(param.max),
                as_float(param.min),
                as_float(param.mean),
                as_float(param.norm),
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
