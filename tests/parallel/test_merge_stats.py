"""Merged statistics: each rule on its own, and the rounding back to a shard's dtype against
torch's own casts (which msprobe uses), over ordinary, tiny, huge and tie-breaking values."""

from __future__ import annotations

import math
import struct

import pytest
import torch

from graphboard.dump.records import Param, Role
from graphboard.merge.stats import in_dtype, merge_shards, same_statistics


def _shard(maximum: object, minimum: object, mean: object, norm: object, dtype: str) -> Param:
    return Param(
        "input.0",
        Role.INPUT,
        "torch.Tensor",
        dtype,
        (4,),
        maximum,
        minimum,
        mean,
        norm,  # type: ignore[arg-type]
    )


def test_max_of_max_min_of_min_mean_of_means_root_of_squared_norms() -> None:
    shards = [
        _shard(1.0, -2.0, 0.25, 3.0, "torch.float64"),
        _shard(2.0, -1.0, 0.75, 4.0, "torch.float64"),
    ]
    formulas = merge_shards("input.0", shards)
    assert (shards[0].max, shards[0].min, shards[0].mean, shards[0].norm) == (2.0, -2.0, 0.5, 5.0)
    assert formulas == [
        "The Max value merging method for input.0 is: max(1.0, 2.0) = 2.0",
        "The Min value merging method for input.0 is: min(-2.0, -1.0) = -2.0",
        "The Mean value merging method for input.0 is: (0.25 + 0.75) / 2 = 0.5",
        "The Norm value merging method for input.0 is: (3.0 ** 2 + 4.0 ** 2) ** 0.5 = 5.0",
    ]


def test_a_statistic_some_shard_lacks_is_left_as_the_main_ranks() -> None:
    shards = [_shard(1, 0, None, 2.0, "torch.int64"), _shard(5, 3, 1.5, "nan", "torch.int64")]
    formulas = merge_shards("input.0", shards)
    assert (shards[0].max, shards[0].min, shards[0].mean, shards[0].norm) == (5, 0, None, 2.0)
    assert [formula.split(" value")[0] for formula in formulas] == ["The Max", "The Min"]


def test_same_statistics_exact_for_max_min_and_within_1e6_for_mean_norm() -> None:
    main = _shard(1.0, 0.0, 1.0, 0.0, "torch.float32")
    assert same_statistics(main, _shard(1.0, 0.0, 1.0 + 5e-7, 5e-7, "torch.float32"))
    assert not same_statistics(main, _shard(1.0, 0.0, 1.0 + 2e-6, 0.0, "torch.float32"))
    assert not same_statistics(main, _shard(1.0, 0.0, 1.0 + 5e-7, 5e-7, "torch.float32"), False)
    assert not same_statistics(main, _shard(1.0 + 1e-12, 0.0, 1.0, 0.0, "torch.float32"))
    nan = _shard(math.nan, 0.0, math.nan, math.inf, "torch.float32")
    assert same_statistics(nan, _shard(1.0, 0.0, math.nan, math.inf, "torch.float32")) is False
    nan_mean = _shard(2.0, 0.0, math.nan, 1.0, "torch.float32")
    assert same_statistics(nan_mean, _shard(2.0, 0.0, math.nan, 1.0, "torch.float32"))
    # msprobe's arithmetic: inf - inf is NaN, so two infinite norms count as different shards
    infinite = _shard(2.0, 0.0, 1.0, math.inf, "torch.float32")
    assert not same_statistics(infinite, _shard(2.0, 0.0, 1.0, math.inf, "torch.float32"))


VALUES = [
    0.1,
    -1 / 3,
    2.0**-140,  # a float32 subnormal
    1.00390625 + 2.0**-20,  # just above a bfloat16 tie
    1.00390625,  # a bfloat16 tie: to even
    1.01171875,  # a bfloat16 tie: up, to even
    65519.0,
    65520.0,  # float16 rounds to inf
    3.5e38,  # above float32's largest: inf
    -3.5e38,
    1e-8,
    123456.789,
]


@pytest.mark.parametrize(
    ("dtype", "torch_dtype"),
    [
        ("torch.float32", torch.float32),
        ("torch.float16", torch.float16),
        ("torch.bfloat16", torch.bfloat16),
        ("BFloat16", torch.bfloat16),
    ],
)
def test_rounding_back_to_the_dtype_is_torchs(dtype: str, torch_dtype: torch.dtype) -> None:
    for value in VALUES:
        expected = torch.tensor(value, dtype=torch_dtype).item()
        assert struct.pack("<d", in_dtype(value, dtype)) == struct.pack("<d", expected), value


def test_other_dtypes_and_non_finite_values_are_kept() -> None:
    assert in_dtype(0.1, "torch.float64") == 0.1
    assert in_dtype(0.1, None) == 0.1
    assert math.isnan(in_dtype(math.nan, "torch.float32"))
    assert in_dtype(-math.inf, "torch.bfloat16") == -math.inf
