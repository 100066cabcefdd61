"""Checking data from its statistics: a copy must agree, a reduction must fit its parts."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence

from graphboard.distributed.stats import TensorStats
from graphboard.distributed.verdicts import CONSISTENT, Verdict, combine, mismatch, unknown

# A copy is bit-identical: the slack only absorbs statistics summed in another order.
COPY_RTOL = 1e-5
# A reduction rounds in the tensor's dtype: allow a few ulps of it, and never less than 1e-4.
DTYPE_EPS = {"float64": 2.2e-16, "float32": 1.2e-7, "float16": 9.8e-4, "bfloat16": 7.8e-3}
MIN_REDUCE_RTOL = 1e-4


def _fmt(value: float) -> str:
    return f"{value:.6g}"


def _slack(a: float, b: float, rtol: float, scale: float) -> float:
    return rtol * max(abs(a), abs(b), scale)


def agree(
    label: str, expected: float | None, actual: float | None, rtol: float, scale: float
) -> Verdict:
    if expected is None or actual is None:
        return unknown(f"{label} missing")
    if math.isnan(expected) or math.isnan(actual):
        same = math.isnan(expected) and math.isnan(actual)  # NaN faithfully carried over
    elif math.isinf(expected) or math.isinf(actual):
        same = expected == actual
    else:
        same = abs(expected - actual) <= _slack(expected, actual, rtol, scale)
    return CONSISTENT if same else mismatch(f"{label} {_fmt(actual)}, expected {_fmt(expected)}")


def _within(
    label: str, value: float | None, limit: float | None, upper: bool, rtol: float, scale: float
) -> Verdict:
    """``value <= limit`` (``upper``) or ``value >= limit``, with the same slack as ``agree``."""
    if value is None or limit is None or math.isnan(value) or math.isnan(limit):
        return unknown(f"{label} missing")
    slack = _slack(value, limit, rtol, scale)
    inside = value <= limit + slack if upper else value >= limit - slack
    if inside:
        return CONSISTENT
    return mismatch(f"{label} {_fmt(value)} {'above' if upper else 'below'} {_fmt(limit)}")


def reduce_rtol(dtype: str | None) -> float:
    return max(MIN_REDUCE_RTOL, 8 * DTYPE_EPS.get((dtype or "").rsplit(".", 1)[-1], 0.0))


def _fields(
    expected: TensorStats, actual: TensorStats
) -> Iterator[tuple[str, float | None, float | None]]:
    yield "Max", expected.max, actual.max
    yield "Min", expected.min, actual.min
    yield "Mean", expected.mean, actual.mean
    yield "Norm", expected.norm, actual.norm


def compare_copy(
    sent: TensorStats | None, received: TensorStats | None, what: str = "received"
) -> Verdict:
    """A tensor copied from one rank to another: its statistics must agree."""
    if sent is None or received is None:
        return unknown(f"no statistics for the {'sent' if sent is None else what} tensor")
    if sent == received:  # a faithful copy has the very same statistics: skip the arithmetic
        return CONSISTENT
    if sent.dtype and received.dtype and sent.dtype != received.dtype:
        return mismatch(f"{what} dtype {received.dtype}, sent {sent.dtype}")
    if sent.shape is not None and received.shape is not None and sent.shape != received.shape:
        return mismatch(f"{what} shape {list(received.shape)}, sent {list(sent.shape)}")
    scale = max(sent.scale, received.scale)
    return combine(
        agree(f"{what} {label}", want, got, COPY_RTOL, scale)
        for label, want, got in _fields(sent, received)
    )


def _known(values: Iterable[float | None]) -> list[float] | None:
    """The values, or None if any is missing: a statistic over part of the data misleads."""
    out: list[float] = []
    for value in values:
        if value is None:
            return None
        out.append(value)
    return out


def pooled(parts: Sequence[TensorStats | None]) -> TensorStats | None:
    """The statistics of the concatenation of ``parts`` (exact for Max, Min, Mean and Norm)."""
    known = [part for part in parts if part is not None]
    sizes = _known(None if part.numel is None else float(part.numel) for part in known)
    if not known or len(known) != len(parts) or sizes is None or not sum(sizes):
        return None
    maxima = _known(part.max for part in known)
    minima = _known(part.min for part in known)
    means = _known(part.mean for part in known)
    norms = _known(part.norm for part in known)
    total = sum(sizes)
    return TensorStats(
        known[0].dtype,
        (int(total),),
        max(maxima) if maxima else None,
        min(minima) if minima else None,
        sum(m * n for m, n in zip(means, sizes, strict=True)) / total if means else None,
        math.sqrt(sum(n * n for n in norms)) if norms else None,
    )


def compare_pooled(expected: TensorStats | None, actual: TensorStats | None, what: str) -> Verdict:
    if expected is None or actual is None:
        return unknown(f"no statistics to check the {what}")
    if expected.numel is not None and actual.numel is not None and expected.numel != actual.numel:
        return mismatch(f"{what} has {actual.numel} elements, expected {expected.numel}")
    rtol = reduce_rtol(actual.dtype)
    scale = max(expected.scale, actual.scale)
    return combine(
        agree(f"{what} {label}", want, got, rtol, scale)
        for label, want, got in _fields(expected, actual)
    )


def check_reduction(
    result: TensorStats | None, parts: Sequence[TensorStats | None], op: str
) -> Verdict:
    """An elementwise reduction of ``parts`` with ``op``: what its statistics must satisfy."""
    known = [part for part in parts if part is not None]
    if result is None or not known or len(known) != len(parts):
        return unknown("no statistics for the reduction")
    for part in known:
        if part.shape is not None and result.shape is not None and part.shape != result.shape:
            return mismatch(f"result shape {list(result.shape)}, a contribution {list(part.shape)}")
    rtol = reduce_rtol(result.dtype)
    if op in ("SUM", "AVG"):
        divisor = 1 if op == "SUM" else len(known)
        scale = sum(part.scale for part in known) / divisor

        def total(values: Iterable[float | None]) -> float | None:
            found = _known(values)
            return sum(found) / divisor if found is not None else None

        return combine(
            [
                agree(f"{op} Mean", total(p.mean for p in known), result.mean, rtol, scale),
                _within(f"{op} Max", result.max, total(p.max for p in known), True, rtol, scale),
                _within(f"{op} Min", result.min, total(p.min for p in known), False, rtol, scale),
                _within(f"{op} Norm", result.norm, total(p.norm for p in known), True, rtol, scale),
            ]
        )
    if op in ("MAX", "MIN"):
        # elementwise max: its Max is the largest Max, its Mean at least every Mean (MIN: mirror)
        is_max = op == "MAX"
        pick = max if is_max else min
        scale = max(part.scale for part in known)
        extremes = _known(p.max if is_max else p.min for p in known)
        means = _known(p.mean for p in known)
        return combine(
            [
                agree(
                    f"{op} {'Max' if is_max else 'Min'}",
                    pick(extremes) if extremes else None,
                    result.max if is_max else result.min,
                    rtol,
                    scale,
                ),
                _within(
                    f"{op} Mean",
                    result.mean,
                    pick(means) if means else None,
                    not is_max,
                    rtol,
                    scale,
                ),
            ]
        )
    return unknown(f"ReduceOp {op} cannot be checked from statistics")
