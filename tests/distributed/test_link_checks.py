"""The statistics checks on their own: copies, reductions, tolerances, NaN and inf."""

from __future__ import annotations

import math

from graphboard.distributed import (
    Consistency,
    TensorStats,
    Verdict,
    check_reduction,
    combine,
    compare_copy,
)


def stats(
    high: float, low: float, mean: float, norm: float, dtype: str = "torch.float32"
) -> TensorStats:
    return TensorStats(dtype, (4,), high, low, mean, norm)


def test_copy_of_identical_statistics_is_consistent() -> None:
    sent = stats(4.0, 1.0, 2.5, math.sqrt(30))
    assert compare_copy(sent, sent).status is Consistency.CONSISTENT


def test_copy_tolerates_only_float_noise() -> None:
    sent = stats(4.0, 1.0, 2.5, 5.0)
    assert compare_copy(sent, stats(4.0, 1.0, 2.5 + 1e-7, 5.0)).status is Consistency.CONSISTENT
    verdict = compare_copy(sent, stats(4.0, 1.0, 2.6, 5.0))
    assert verdict.status is Consistency.MISMATCH
    assert verdict.reason == "received Mean 2.6, expected 2.5"


def test_mean_near_zero_is_judged_against_the_data_scale() -> None:
    sent = stats(1.0, -1.0, 1e-9, 2.0)
    assert compare_copy(sent, stats(1.0, -1.0, 2e-9, 2.0)).status is Consistency.CONSISTENT


def test_nan_and_inf_carried_over_are_consistent() -> None:
    nan, inf = math.nan, math.inf
    sent = stats(inf, -inf, nan, nan)
    assert compare_copy(sent, stats(inf, -inf, nan, nan)).status is Consistency.CONSISTENT
    assert compare_copy(sent, stats(inf, -inf, 0.0, nan)).status is Consistency.MISMATCH


def test_missing_statistics_are_unknown() -> None:
    sent = stats(4.0, 1.0, 2.5, 5.0)
    assert compare_copy(None, sent).status is Consistency.UNKNOWN
    partial = TensorStats("torch.float32", (4,), None, None, None, None)
    assert compare_copy(sent, partial).status is Consistency.UNKNOWN


def test_sum_reduction() -> None:
    a = stats(4.0, 1.0, 2.5, 5.477)
    b = stats(2.0, 0.0, 1.0, 2.449)
    assert (
        check_reduction(stats(6.0, 1.0, 3.5, 7.8), [a, b], "SUM").status is Consistency.CONSISTENT
    )
    wrong_mean = check_reduction(stats(6.0, 1.0, 3.0, 7.8), [a, b], "SUM")
    assert wrong_mean.status is Consistency.MISMATCH and "SUM Mean" in (wrong_mean.reason or "")
    # Max of a sum can never exceed the sum of the Maxes
    too_big = check_reduction(stats(7.0, 1.0, 3.5, 7.8), [a, b], "SUM")
    assert too_big.status is Consistency.MISMATCH and "SUM Max" in (too_big.reason or "")


def test_avg_max_min_reductions() -> None:
    a = stats(4.0, 1.0, 2.5, 5.477)
    b = stats(2.0, 0.0, 1.0, 2.449)
    assert (
        check_reduction(stats(3.0, 0.5, 1.75, 3.9), [a, b], "AVG").status is Consistency.CONSISTENT
    )
    assert (
        check_reduction(stats(4.0, 1.0, 2.6, 5.6), [a, b], "MAX").status is Consistency.CONSISTENT
    )
    assert check_reduction(stats(3.0, 1.0, 2.6, 5.6), [a, b], "MAX").status is Consistency.MISMATCH
    assert (
        check_reduction(stats(2.0, 0.0, 0.9, 2.0), [a, b], "MIN").status is Consistency.CONSISTENT
    )
    product = check_reduction(stats(8.0, 0.0, 2.0, 9.0), [a, b], "PRODUCT")
    assert product.status is Consistency.UNKNOWN


def test_low_precision_reduction_gets_a_wider_tolerance() -> None:
    a = stats(4.0, 1.0, 2.5, 5.477, dtype="torch.bfloat16")
    b = stats(2.0, 0.0, 1.0, 2.449, dtype="torch.bfloat16")
    rounded = stats(6.0, 1.0, 3.52, 7.8, dtype="torch.bfloat16")
    assert check_reduction(rounded, [a, b], "SUM").status is Consistency.CONSISTENT
    as_float32 = stats(6.0, 1.0, 3.52, 7.8)
    assert check_reduction(as_float32, [a, b], "SUM").status is Consistency.MISMATCH


def test_combine_prefers_mismatch_then_consistent() -> None:
    unknown = Verdict(Consistency.UNKNOWN, "no data")
    consistent = Verdict(Consistency.CONSISTENT)
    mismatch = Verdict(Consistency.MISMATCH, "Max")
    assert combine([unknown, consistent]) is consistent
    assert combine([consistent, mismatch, unknown]) is mismatch
    assert combine([unknown]) is unknown
    assert combine([]).status is Consistency.UNKNOWN
