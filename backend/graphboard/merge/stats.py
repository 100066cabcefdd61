"""Statistics of one tensor sharded over TP ranks, merged into the whole tensor's, as msprobe
merges them: Max of the Maxes, Min of the Mins, the unweighted mean of the Means, the root of
the summed squared Norms; each merged value rounded back to the tensor's dtype (the ranks'
statistics were computed in it) and explained by a formula for ``parallel_merge_info``.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence

from graphboard.dump.records import Param, Stat

# The dtypes whose statistics msprobe compares and merges; a parameter of another dtype is left
# as the main rank has it.
MERGED_DTYPES = frozenset(
    {
        "torch.int8",
        "torch.int32",
        "torch.int64",
        "torch.bfloat16",
        "torch.float16",
        "torch.float32",
        "torch.float64",
        "Float16",
        "Float32",
        "BFloat16",
    }
)
UNCERTAINTY = 1e-6  # Mean and Norm of equal shards may differ by this much (no determinism)
TP_MERGED = (
    "This data is the merged data after tensor parallelism(TP), and the data is merged from rank "
)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _close(main: Stat, other: Stat, uncertain: bool) -> bool:
    if not _is_number(main) or not _is_number(other):
        return True  # text or missing statistics do not make two shards differ
    first, second = float(main), float(other)  # type: ignore[arg-type]
    if not uncertain:
        return first == second
    difference = abs(first - second)
    if math.isnan(difference):  # as msprobe: inf - inf is NaN, so two infinities differ
        return math.isnan(first) and math.isnan(second)
    if math.isinf(difference):
        return math.isinf(first) and math.isinf(second)
    return difference < UNCERTAINTY if first == 0 else abs(difference / first) < UNCERTAINTY


def same_statistics(main: Param, other: Param, uncertain: bool = True) -> bool:
    """Whether two ranks hold the same statistics: Max and Min exactly, Mean and Norm within
    ``UNCERTAINTY`` when ``uncertain``."""
    return (
        _close(main.max, other.max, False)
        and _close(main.min, other.min, False)
        and _close(main.mean, other.mean, uncertain)
        and _close(main.norm, other.norm, uncertain)
    )


def _bfloat16(value: float) -> float:
    """Round a float32 to bfloat16 (nearest, ties to even), as torch casts."""
    (bits,) = struct.unpack("<I", struct.pack("<f", value))
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    (rounded,) = struct.unpack("<f", struct.pack("<I", bits))
    return float(rounded)


def _packed(code: str) -> Callable[[float], float]:
    def cast(value: float) -> float:
        try:
            return float(struct.unpack(code, struct.pack(code, value))[0])
        except OverflowError:  # beyond the dtype's range: torch gives an infinity
            return math.copysign(math.inf, value)

    return cast


_FLOAT32 = _packed("<f")
_CASTS: dict[str, Callable[[float], float]] = {
    "torch.float32": _FLOAT32,
    "Float32": _FLOAT32,
    "torch.float16": _packed("<e"),
    "Float16": _packed("<e"),
    "torch.bfloat16": lambda value: _bfloat16(_FLOAT32(value)),
    "BFloat16": lambda value: _bfloat16(_FLOAT32(value)),
}


def in_dtype(value: float, dtype: str | None) -> float:
    """A merged statistic (computed in double) rounded to the dtype the shards' were in."""
    cast = _CASTS.get(dtype or "")
    if cast is None or math.isnan(value) or math.isinf(value):
        return value
    return cast(value)


def _merge_one(name: str, values: list[float]) -> tuple[float, str]:
    """The merged value of one statistic over the shards, and its formula's text."""
    if name == "Max":
        return max(values), f"max({', '.join(map(str, values))})"
    if name == "Min":
        return min(values), f"min({', '.join(map(str, values))})"
    if name == "Mean":
        total = values[0]
        for value in values[1:]:
            total += value
        return total / len(values), f"({' + '.join(map(str, values))}) / {len(values)}"
    squares = values[0] ** 2.0
    for value in values[1:]:
        squares += value**2.0
    return squares ** (1 / 2.0), f"({' + '.join(f'{value} ** 2' for value in values)}) ** 0.5"


_FIELDS = (("Max", "max"), ("Min", "min"), ("Mean", "mean"), ("Norm", "norm"))


def merge_shards(key: str, shards: Sequence[Param]) -> list[str]:
    """Merge the shards' statistics into ``shards[0]`` (the main rank's Param, changed in
    place); return one formula per merged statistic. A statistic is merged only when every
    shard has it as a number."""
    formulas: list[str] = []
    if len(shards) < 2:
        return formulas
    main = shards[0]
    for label, field in _FIELDS:
        values = [getattr(shard, field) for shard in shards]
        if not all(_is_number(value) for value in values):
            continue
        merged, formula = _merge_one(label, values)
        merged = in_dtype(merged, main.dtype) if isinstance(merged, float) else merged
        setattr(main, field, merged)
        formulas.append(f"The {label} value merging method for {key} is: {formula} = {merged}")
    return formulas
