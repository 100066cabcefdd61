"""The noise model of the dtype-aware rules: unit roundoffs, dtype relations, and one measured
difference per parameter (docs/dtype-aware.md derives each).

A parameter's *difference* is a unitless number comparable with a unit roundoff: each dumped
statistic's difference divided by the scale that bounds it (``d``, docs/dtype-aware.md §2).
It never exceeds the tensors' relative error, so noise can never make it look larger than
the tensors really differ.
"""

from __future__ import annotations

import math
from enum import Enum

from graphboard.compare.result import DataMode, Metric, ParamRow
from graphboard.dump.records import Param, Stat

# Unit roundoff (half the machine epsilon) of each floating dtype, under every spelling the
# dumps use: PyTorch's, numpy's (tensor files), MindSpore's.
_ROUNDOFF_BITS = {"bfloat16": 8, "float16": 11, "half": 11, "float32": 24, "float": 24}
_ROUNDOFF_BITS |= {"float64": 53, "double": 53}
UNIT_ROUNDOFF: dict[str, float] = {name: 2.0**-bits for name, bits in _ROUNDOFF_BITS.items()}


class DtypeRelation(Enum):
    SAME = "same"
    NARROWER = "narrower"  # a floating target narrower than its golden: mixed precision
    OTHER = "other"  # integer against float, a wider target, bf16 against fp16 ...


def _bare(dtype: str) -> str:
    """``torch.bfloat16`` / ``BFloat16`` / ``bfloat16`` -> ``bfloat16``."""
    return dtype.rsplit(".", 1)[-1].lower()


def unit_roundoff(dtype: str | None) -> float | None:
    """The unit roundoff of a floating dtype; None for any other (integers, bool, unknown)."""
    return None if dtype is None else UNIT_ROUNDOFF.get(_bare(dtype))


def dtype_relation(target: str | None, golden: str | None) -> DtypeRelation:
    if target == golden or (target and golden and _bare(target) == _bare(golden)):
        return DtypeRelation.SAME
    target_u, golden_u = unit_roundoff(target), unit_roundoff(golden)
    if target_u is None or golden_u is None or target_u <= golden_u:
        return DtypeRelation.OTHER
    # bf16 keeps more exponent and fewer mantissa bits than fp16: neither holds the other.
    if {_bare(target or ""), _bare(golden or "")} <= {"bfloat16", "float16", "half"}:
        return DtypeRelation.OTHER
    return DtypeRelation.NARROWER


# The smallest subnormal of each floating dtype, 2^-bits. Below its smallest normal a dtype's
# spacing is fixed: rounding there errs by up to half the smallest subnormal in absolute
# terms, whatever the value (fl(x) = x (1 + δ) + η, |η| <= η_min / 2), so a tensor of small
# magnitude is held far less precisely than u says (fp16 gradients of 1e-6 are multiples of
# 6e-8). The dumped Mean and Norm, computed in the tensor's dtype, are rounded so too.
_SUBNORMAL_BITS = {"bfloat16": 133, "float16": 24, "half": 24, "float32": 149, "float": 149}
_SUBNORMAL_BITS |= {"float64": 1074, "double": 1074}
HALF_SUBNORMAL: dict[str, float] = {
    name: 2.0**-bits / 2.0 for name, bits in _SUBNORMAL_BITS.items()
}
_UNDERFLOW: dict[tuple[str | None, str | None], float] = {}


def underflow_rounding(target: Param, golden: Param) -> float:
    """A rounding's absolute part (half the smallest subnormal of the coarser of the two
    dtypes) as a relative difference of the tensor: over its rms, the smallest scale ``d``
    sets a statistic against (a Mean's; |ΔNorm| <= √n η/2 over the Norm is the same). 0 where
    the rms is unknown or zero; negligible but for tensors near fp16's subnormals."""
    pair = (target.dtype, golden.dtype)
    half = _UNDERFLOW.get(pair)
    if half is None:
        half = max(
            (HALF_SUBNORMAL.get(_bare(dtype), 0.0) for dtype in pair if dtype is not None),
            default=0.0,
        )
        _UNDERFLOW[pair] = half
    norm = golden.norm
    if half == 0.0 or not isinstance(norm, float) or not 0.0 < norm < math.inf:
        return 0.0
    return half * math.sqrt(numel_of(golden.shape)) / norm


def narrower_roundoff(target: str | None, golden: str | None) -> float:
    """The unit roundoff of the narrower of two dtypes (0 when neither is floating: such
    values agree exactly or not at all)."""
    values = [u for u in (unit_roundoff(target), unit_roundoff(golden)) if u is not None]
    return max(values, default=0.0)


# The largest finite value of each floating dtype (torch.finfo(dtype).max: bf16, fp16, fp32,
# fp64). A value at a dtype's limit is a constant of the code, not a result of arithmetic:
# ``torch.finfo(dtype).min`` as a mask fill is -3.3895e38 in bf16 and -3.4028e38 in fp32, the
# same value "for this dtype" (docs/dtype-aware.md §1).
DTYPE_LIMITS = (3.3895313892515355e38, 65504.0, 3.4028234663852886e38, 1.7976931348623157e308)
# How near a limit counts as at it: half a bf16 step (2^-8 relative), the coarsest rounding of
# any dtype here. bf16's and fp32's limits are 2^-8 apart, each is within it of itself; a mask
# fill plus an ordinary score stays at the limit (the score is far below the limit's ulp).
LIMIT_TOLERANCE = 2.0**-8


def dtype_limit(value: Stat) -> int:
    """+1 or -1 when ``value`` is a dtype's limit (±inf, or ± a floating dtype's largest finite
    value), else 0."""
    if not isinstance(value, float):
        return 0
    magnitude = abs(value)
    if magnitude < 65000.0:  # nearly always: below every limit, fp16's the lowest
        return 0
    sign = 1 if value > 0 else -1
    if magnitude == math.inf:
        return sign
    for limit in DTYPE_LIMITS:
        if abs(magnitude - limit) <= LIMIT_TOLERANCE * limit:
            return sign
    return 0


def same_limit(first: Stat, second: Stat) -> bool:
    """Both values a dtype's limit of the same sign (fp16's -65504 and fp32's -3.4e38 too)."""
    found = dtype_limit(first)
    return found != 0 and found == dtype_limit(second)


_FACTS: dict[tuple[str | None, str | None], tuple[bool, float]] = {}


def dtype_facts(target: str | None, golden: str | None) -> tuple[bool, float]:
    """(mixed precision explains the pair, the narrower's roundoff), computed once per pair:
    a compare holds a handful of dtype pairs and judges every parameter by one."""
    found = _FACTS.get((target, golden))
    if found is None:
        found = (
            dtype_relation(target, golden) is not DtypeRelation.OTHER,
            narrower_roundoff(target, golden),
        )
        _FACTS[(target, golden)] = found
    return found


def _number(value: Stat) -> float | None:
    """A finite statistic as a float; None for text, None, inf and NaN (an infinite statistic
    on both sides, a masked ``-inf`` fill say, carries no measure of difference, and one on
    the target only is the overflow rule's)."""
    if value.__class__ is float:
        return value if math.isfinite(value) else None
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return None


_NUMEL: dict[tuple[object, ...] | None, int] = {}


def numel_of(shape: tuple[object, ...] | None) -> int:
    """Elements in a tensor of ``shape`` (unknown sizes count 1), once per shape."""
    found = _NUMEL.get(shape)
    if found is None:
        found = 1
        for size in shape or ():
            found *= size if isinstance(size, int) and size > 0 else 1
        if len(_NUMEL) < 100_000:  # shapes repeat: a model holds a few hundred
            _NUMEL[shape] = found
    return found


def statistics_difference(target: Param, golden: Param) -> float | None:
    """``d`` of two tensors from their Max, Min, Mean and Norm; None when none is a number.

    |Δmax|, |Δmin| <= ‖t-g‖∞ and |ΔNorm| <= ‖t-g‖₂, |Δmean| <= ‖t-g‖₂/√n, so each statistic's
    difference over its scale (the largest magnitude, the norm, the rms) is at most the
    tensors' relative error; ``d`` is the largest of the four.
    """
    t_max, t_min, t_mean, t_norm = target.max, target.min, target.mean, target.norm
    g_max, g_min, g_mean, g_norm = golden.max, golden.min, golden.mean, golden.norm
    if (  # nearly always: eight finite floats, in one straight pass
        t_max.__class__ is float
        and t_min.__class__ is float
        and t_mean.__class__ is float
        and t_norm.__class__ is float
        and g_max.__class__ is float
        and g_min.__class__ is float
        and g_mean.__class__ is float
        and g_norm.__class__ is float
        and _isfinite(t_max + t_min + t_mean + t_norm + g_max + g_min + g_mean + g_norm)
    ):
        # max |x| is max(Max, -Min) (Max >= Min): four comparisons instead of four abs()
        magnitude = max(t_max, -t_min, g_max, -g_min)
        if magnitude >= 65000.0 and (same_limit(t_max, g_max) or same_limit(t_min, g_min)):
            return _general(target, golden)  # a mask fill at a dtype's limit
        norm = t_norm if t_norm > g_norm else g_norm
        if magnitude <= 0.0 or norm == 0.0:
            return _general(target, golden)
        return max(
            max(abs(t_max - g_max), abs(t_min - g_min)) / magnitude,
            abs(t_norm - g_norm) / norm,
            abs(t_mean - g_mean) * _sqrt(numel_of(golden.shape)) / norm,  # over the rms
        )
    return _general(target, golden)


_isfinite, _sqrt = math.isfinite, math.sqrt


def _general(target: Param, golden: Param) -> float | None:
    """statistics_difference of any statistics: text, integers, inf and NaN, zeros, and the
    dtype limits: an extreme at the same limit on both sides (a mask fill of
    ``finfo(dtype).min``) is the same value and measures nothing, and the Mean and Norm, which
    the fill then dominates, are left out with it: the other extreme alone is compared."""
    t_max, t_min, g_max, g_min = (
        _number(target.max),
        _number(target.min),
        _number(golden.max),
        _number(golden.min),
    )
    t_norm, g_norm = _number(target.norm), _number(golden.norm)
    t_mean, g_mean = _number(target.mean), _number(golden.mean)
    limit_max = same_limit(target.max, golden.max)
    limit_min = same_limit(target.min, golden.min)
    if limit_max or limit_min:
        if limit_max:
            t_max = g_max = None
        if limit_min:
            t_min = g_min = None
        t_norm = g_norm = t_mean = g_mean = None
    magnitude = max(
        (abs(value) for value in (t_max, t_min, g_max, g_min) if value is not None), default=0.0
    )
    norm = max(t_norm or 0.0, g_norm or 0.0)
    found: list[float] = []
    for t_value, g_value in ((t_max, g_max), (t_min, g_min)):
        if t_value is not None and g_value is not None:
            found.append(_ratio(abs(t_value - g_value), magnitude))
    if t_norm is not None and g_norm is not None:
        found.append(_ratio(abs(t_norm - g_norm), norm))
    if t_mean is not None and g_mean is not None:
        rms = norm / math.sqrt(numel_of(golden.shape)) if norm else magnitude
        found.append(_ratio(abs(t_mean - g_mean), rms))
    return max(found) if found else None


def _ratio(difference: float, scale: float) -> float:
    if scale == 0.0:
        return 0.0 if difference == 0.0 else math.inf
    return difference / scale


def tensor_difference(metrics: dict[str, Metric], golden: Param | None) -> float | None:
    """``d`` of two whole tensors: the relative L2 error ‖t-g‖₂/‖g‖₂ (EucDist over the
    golden's norm) and the relative L∞ error (MaxAbsErr over the golden's magnitude), the
    larger; None when the metrics are markers (shape unmatched, unsupported)."""
    distance, largest = metrics.get("EucDist"), metrics.get("MaxAbsErr")
    found: list[float] = []
    if golden is not None:
        norm = _number(golden.norm)
        magnitude = max(
            (abs(v) for v in (_number(golden.max), _number(golden.min)) if v is not None),
            default=None,
        )
        if isinstance(distance, float) and norm is not None:
            found.append(_ratio(distance, norm))
        if isinstance(largest, float) and magnitude is not None:
            found.append(_ratio(largest, magnitude))
    return max(found) if found else None


def same_statistics(target: Param, golden: Param) -> bool:
    return (target.max, target.min, target.mean, target.norm) == (
        golden.max,
        golden.min,
        golden.mean,
        golden.norm,
    )


def value_of(param: Param) -> object:
    """A parameter's value as an argument: its value, or the Max msprobe writes for a scalar."""
    return param.value if param.value is not None else param.max


def row_difference(row: ParamRow, mode: DataMode) -> float | None:
    """``d`` of a row of two tensors: from the whole tensors' metrics where the dump has them
    (tensor mode), else from their statistics."""
    assert row.target is not None and row.golden is not None
    if mode is DataMode.TENSOR:
        found = tensor_difference(row.metrics, row.golden)
        if found is not None:
            return found
    difference = statistics_difference(row.target, row.golden)
    if difference is None and same_statistics(row.target, row.golden):
        return 0.0  # a bool or integer mask, say: equal statistics, nothing to judge
    return difference
