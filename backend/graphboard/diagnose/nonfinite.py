"""What a parameter's statistics say about non-finite values, and which of them an op was
asked to make (docs/diagnose.md, "Non-finite by design").

A tensor's Max and Min are taken over its elements, so they see every infinity (Max is +inf
when any element is, Min -inf likewise) and a NaN (torch's max and min propagate it). Mean and
Norm can overflow on finite elements, so they are not read here.
"""

from __future__ import annotations

import math
import sys

from graphboard.dump.records import Param, Stat

NAN, POS_INF, NEG_INF = "nan", "+inf", "-inf"
Kinds = frozenset[str]
NONE: Kinds = frozenset()

# The largest finite value of each floating dtype a dump holds: (2 - 2**-m) * 2**e with m
# mantissa bits and e the largest exponent. A mask filled with "the dtype's min" holds
# minus one of these exactly, and arithmetic on it may round to -inf by design.
DTYPE_LIMITS = frozenset(
    {
        (2 - 2**-10) * 2.0**15,  # float16: 65504
        (2 - 2**-7) * 2.0**127,  # bfloat16
        (2 - 2**-23) * 2.0**127,  # float32
        sys.float_info.max,  # float64
    }
)

# Ops that only place values they are given (a mask, a fill value, one of two tensors): an
# infinity in what they return was handed to them, never made by their arithmetic.
PLACING_OPS = frozenset(
    {
        "masked_fill",
        "masked_fill_",
        "where",
        "triu",
        "tril",
        "triu_",
        "tril_",
        "full",
        "full_like",
        "fill",
        "fill_",
        "masked_scatter",
        "index_fill",
        "index_fill_",
    }
)


def _number(value: Stat) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(value)  # "inf", "-inf", "nan" as text
    except ValueError:
        return None


def kinds(param: Param) -> Kinds:
    """The non-finite kinds a tensor holds (by its Max and Min), or a float argument is."""
    if param.is_tensor:
        high, low = param.max, param.min
        if type(high) is float and type(low) is float and math.isfinite(high + low):
            # nearly every tensor, in one test: the sum is NaN or infinite when either is, and
            # two finite float64 sums overflow only near float64's own limit, where the full
            # check below runs anyway
            return NONE
        found: set[str] = set()
        for stat in (param.max, param.min):
            number = _number(stat)
            if number is None:
                continue
            if math.isnan(number):
                found.add(NAN)
            elif math.isinf(number):
                found.add(POS_INF if number > 0 else NEG_INF)
        return frozenset(found)
    if isinstance(param.value, float) and not math.isfinite(param.value):
        return frozenset(
            {NAN if math.isnan(param.value) else POS_INF if param.value > 0 else NEG_INF}
        )
    return NONE


def _extreme(value: float | None, sign: int) -> bool:
    """An infinity, or a dtype's largest finite value, of this sign."""
    if value is None or math.isnan(value) or value * sign <= 0:
        return False
    return math.isinf(value) or abs(value) in DTYPE_LIMITS


def carries(param: Param, kind: str) -> bool:
    """Whether an argument hands an op the infinity ``kind``: it is that infinity or its
    dtype's limit of that sign (a float argument, or a tensor's Max or Min)."""
    if kind == NAN:
        return False
    sign = 1 if kind == POS_INF else -1
    if param.is_tensor:
        return _extreme(_number(param.max if sign > 0 else param.min), sign)
    if isinstance(param.value, float | int) and not isinstance(param.value, bool):
        return _extreme(float(param.value), sign)
    return False


def is_additive_mask(param: Param) -> bool:
    """A tensor of zeros and -inf (Max exactly 0, Min -inf): an attention mask added to the
    scores, handed to the op on purpose even when the op that made it was not captured (msprobe
    captures neither ``torch.full`` nor ``torch.triu``). An activation whose largest element is
    exactly zero and that holds -inf would be read as a mask too: the limit of the rule."""
    if not param.is_tensor:
        return False
    high, low = _number(param.max), _number(param.min)
    return high == 0.0 and low == -math.inf


def op_family(name: str) -> str:
    """An API node's op (``Torch.masked_fill.0.forward`` -> ``masked_fill``); a module's
    class name (``Module.fc.Linear.forward.0`` -> ``Linear``)."""
    parts = name.split(".")
    if parts[0] == "Module" and len(parts) >= 4:
        return parts[-3]
    return parts[1] if len(parts) > 1 else name
