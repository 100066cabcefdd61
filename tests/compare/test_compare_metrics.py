"""Per-parameter metrics with known answers, in every data mode."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from compare_factories import scalar, tensor

from graphboard.compare import metrics


def test_summary_differences_and_relative_errors() -> None:
    result = metrics.summary_metrics(
        tensor("input.0", (3.0, -2.0, 0.5, 10.0)), tensor("input.0", (2.0, -2.0, 0.0, 8.0))
    )
    assert result["Max diff"] == 1.0
    assert result["MaxRelativeErr"] == pytest.approx(0.5)
    assert result["Min diff"] == 0.0 and result["MinRelativeErr"] == 0.0
    assert result["Mean diff"] == 0.5 and result["MeanRelativeErr"] == "N/A"  # golden mean is 0
    assert result["NormRelativeErr"] == pytest.approx(0.25)


def test_integer_statistics_differ_by_integers_as_in_msprobe() -> None:
    """msprobe subtracts the dumped numbers as Python does: int - int stays an int ("0")."""
    result = metrics.summary_metrics(
        tensor("input.0", (7, 2, 4.5, 9)), tensor("input.0", (7, 1, 4.0, 9.0))
    )
    assert result["Max diff"] == 0 and type(result["Max diff"]) is int
    assert result["Min diff"] == 1 and type(result["Min diff"]) is int
    assert result["MinRelativeErr"] == 1.0 and type(result["MinRelativeErr"]) is float
    assert type(result["Mean diff"]) is float and type(result["L2norm diff"]) is float


def test_summary_nan_difference_and_non_numbers() -> None:
    inf = math.inf
    result = metrics.summary_metrics(
        tensor("output.0", (inf, 0.0, 0.0, 1.0)), tensor("output.0", (inf, 0.0, 0.0, 1.0))
    )
    assert result["Max diff"] == "Nan" and result["MaxRelativeErr"] == "Nan"  # inf - inf
    strings = metrics.summary_metrics(scalar("input.mode", "tanh"), scalar("input.mode", "none"))
    assert set(strings.values()) == {"N/A"}
    missing = metrics.summary_metrics(tensor("input.0"), None)
    assert set(missing.values()) == {"N/A"}


class _Float(float):
    """A float that is not exactly a float (numpy's float64 is one)."""


@pytest.mark.parametrize(
    ("target", "golden", "difference", "relative"),
    [
        (True, 1.0, "N/A", "N/A"),  # a boolean is no number, though Python adds it
        (1.0, False, "N/A", "N/A"),
        ("text", 1.0, "N/A", "N/A"),
        (None, 1.0, "N/A", "N/A"),
        ([1.0], 1.0, "N/A", "N/A"),
        (1.0, -0.0, 1.0, "N/A"),  # a golden zero of either sign: no relative error
        (3, 0, 3, "N/A"),
        (2**70, 2**70 - 1, 1, 1 / float(2**70 - 1)),  # integers stay exact
        (_Float(2.5), 0.5, 2.0, 4.0),
        (1.0, _Float(4.0), -3.0, 0.75),
        (math.inf, 1.0, math.inf, math.inf),
        (1.0, math.inf, -math.inf, math.nan),  # -inf / inf
        (math.nan, 1.0, "Nan", "Nan"),
        (-math.inf, -math.inf, "Nan", "Nan"),
        (1e308, -1e308, math.inf, math.inf),  # the difference overflows, as in Python
    ],
)
def test_odd_statistics_differ_as_in_msprobe(
    target: object, golden: object, difference: object, relative: object
) -> None:
    result = metrics.summary_metrics(
        tensor("input.0", (target, 0.0, 0.0, 0.0)),  # type: ignore[arg-type]
        tensor("input.0", (golden, 0.0, 0.0, 0.0)),  # type: ignore[arg-type]
    )
    got = (result["Max diff"], result["MaxRelativeErr"])
    assert [(type(value), repr(value)) for value in got] == [
        (type(value), repr(value)) for value in (difference, relative)
    ]


def test_the_metrics_come_in_msprobe_order() -> None:
    result = metrics.summary_metrics(tensor("input.0", (1.0, 1.0, 1.0, 1.0)), None)
    assert list(result) == [
        "Max diff",
        "MaxRelativeErr",
        "Min diff",
        "MinRelativeErr",
        "Mean diff",
        "MeanRelativeErr",
        "L2norm diff",
        "NormRelativeErr",
    ]


def test_md5_of_scalars_is_crc32_of_their_text() -> None:
    assert metrics.md5_of(scalar("input.1", 1)) == metrics.crc32_of("1") == "83dcefb7"
    assert metrics.md5_of(tensor("input.0", md5="deadbeef")) == "deadbeef"
    assert metrics.md5_of(tensor("input.0")) is None


def test_tensor_metrics_identical() -> None:
    values = np.array([1.0, -2.0, 3.0, 4.0])
    result, messages = metrics.tensor_metrics(values, values.copy())
    assert result["Cosine"] == 1.0
    assert (
        result["EucDist"] == 0.0 and result["MaxAbsErr"] == 0.0 and result["MaxRelativeErr"] == 0.0
    )
    assert result["One Thousandth Err Ratio"] == 1.0 and result["Five Thousandths Err Ratio"] == 1.0
    assert messages == []


def test_tensor_metrics_known_values() -> None:
    npu = np.array([1.0, 0.0, 1.002, 2.0])
    bench = np.array([0.0, 1.0, 1.0, 2.0])
    result, _ = metrics.tensor_metrics(npu, bench)
    expected_cosine = float(np.dot(npu, bench) / (np.linalg.norm(npu) * np.linalg.norm(bench)))
    assert result["Cosine"] == pytest.approx(expected_cosine, abs=1e-12)
    # unrounded, as msprobe shows it (the other metrics keep 12 decimals)
    assert result["EucDist"] == float(np.linalg.norm(npu - bench))
    assert result["EucDist"] == pytest.approx(math.sqrt(1 + 1 + 0.002**2), abs=1e-12)
    assert result["MaxAbsErr"] == pytest.approx(1.0)
    # golden 0 gets eps added on both sides: |1+eps-eps|/eps is huge
    assert result["MaxRelativeErr"] > 1e6
    # element errors: huge, 1.0, 0.002, 0 -> 1/4 under 1/1000, 2/4 under 5/1000
    assert result["One Thousandth Err Ratio"] == 0.25
    assert result["Five Thousandths Err Ratio"] == 0.5


def test_tensor_metrics_orthogonal_is_zero_cosine() -> None:
    result, _ = metrics.tensor_metrics(np.array([1.0, 0.0]), np.array([0.0, 1.0]))
    assert result["Cosine"] == 0.0


def test_tensor_metrics_edge_cases() -> None:
    shape, messages = metrics.tensor_metrics(np.zeros((2, 3)), np.zeros((3, 2)))
    assert set(shape.values()) == {"shape unmatched"} and "shape" in messages[0]
    scalar_result, _ = metrics.tensor_metrics(np.array(2.0), np.array(1.0))
    assert scalar_result["Cosine"] == "unsupported" and scalar_result["EucDist"] == "unsupported"
    assert scalar_result["MaxAbsErr"] == 1.0 and scalar_result["MaxRelativeErr"] == 1.0
    empty, _ = metrics.tensor_metrics(np.array([]), np.array([]))
    assert set(empty.values()) == {"unsupported"}
    missing, _ = metrics.tensor_metrics(None, np.array([1.0]))
    assert set(missing.values()) == {"unsupported"}


def test_tensor_metrics_inf_nan_positions() -> None:
    same, _ = metrics.tensor_metrics(
        np.array([np.inf, 1.0, np.nan]), np.array([np.inf, 1.0, np.nan])
    )
    assert (
        same["MaxAbsErr"] == 0.0 and same["Cosine"] == 1.0
    )  # set to 0 on both sides, then compared
    moved, messages = metrics.tensor_metrics(np.array([np.inf, 1.0]), np.array([1.0, np.inf]))
    assert set(moved.values()) == {"N/A"} and "different positions" in messages[-1]


def test_tensor_metrics_one_side_all_zeros() -> None:
    result, messages = metrics.tensor_metrics(np.zeros(3), np.ones(3))
    assert result["Cosine"] == "Nan" and messages


def test_tensor_files_are_loaded_from_pt_and_npy(tmp_path: Path) -> None:
    torch.save(torch.tensor([1.0, 2.0], dtype=torch.bfloat16), tmp_path / "a.pt")
    np.save(tmp_path / "b.npy", np.array([1.0, 2.0]))
    loaded_pt, problem = metrics.load_param_tensor(
        tensor("input.0", data_name="a.pt"), str(tmp_path)
    )
    assert problem is None and loaded_pt is not None and loaded_pt.tolist() == [1.0, 2.0]
    loaded_npy, _ = metrics.load_param_tensor(tensor("input.0", data_name="b.npy"), str(tmp_path))
    assert loaded_npy is not None and loaded_npy.tolist() == [1.0, 2.0]
    absent, problem = metrics.load_param_tensor(
        tensor("input.0", data_name="gone.pt"), str(tmp_path)
    )
    assert absent is None and problem is not None and "missing" in problem
    unnamed, problem = metrics.load_param_tensor(tensor("input.0", data_name="-1"), str(tmp_path))
    assert unnamed is None and problem is not None
