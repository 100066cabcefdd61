"""Per-parameter metrics for the three data modes (reference-builder.md §3.4).

Numbers stay numbers (float64, NaN and inf kept); the string markers are msprobe's:
``N/A`` (not computable), ``Nan`` (NaN difference), ``unsupported``, ``shape unmatched``.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphboard.compare.result import Metric
from graphboard.dump.records import Param, Stat

if TYPE_CHECKING:  # numpy is imported by the tensor-mode functions that use it
    import numpy as np

# msprobe's column names, in its order: the differences, then the relative errors.
SUMMARY_METRIC_NAMES = (
    "Max diff",
    "Min diff",
    "Mean diff",
    "L2norm diff",
    "MaxRelativeErr",
    "MinRelativeErr",
    "MeanRelativeErr",
    "NormRelativeErr",
)
RELATIVE_METRIC_NAMES = SUMMARY_METRIC_NAMES[4:]
TENSOR_METRIC_NAMES = (
    "Cosine",
    "EucDist",
    "MaxAbsErr",
    "MaxRelativeErr",
    "One Thousandth Err Ratio",
    "Five Thousandths Err Ratio",
)
NA = "N/A"
NAN = "Nan"
UNSUPPORTED = "unsupported"
SHAPE_UNMATCHED = "shape unmatched"


def is_number(value: Stat) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _difference(target: Stat, golden: Stat) -> tuple[Metric, Metric]:
    """(difference, relative error) of one statistic."""
    # floats (nearly always) skip the general check
    if not (target.__class__ is float or is_number(target)) or not (
        golden.__class__ is float or is_number(golden)
    ):
        return NA, NA
    # Python's own arithmetic, as msprobe's: two integer statistics differ by an integer.
    diff = target - golden  # type: ignore[operator]
    if diff != diff:  # NaN
        return NAN, NAN
    return diff, abs(diff / float(golden)) if golden != 0 else NA  # type: ignore[arg-type,operator]


_NO_STATS: tuple[Stat, Stat, Stat, Stat] = (None, None, None, None)
(
    _MAX_DIFF,
    _MIN_DIFF,
    _MEAN_DIFF,
    _NORM_DIFF,
    _MAX_RELATIVE,
    _MIN_RELATIVE,
    _MEAN_RELATIVE,
    _NORM_RELATIVE,
) = SUMMARY_METRIC_NAMES


def summary_metrics(target: Param | None, golden: Param | None) -> dict[str, Metric]:
    """Differences and relative errors of Max, Min, Mean and Norm, once per compared
    parameter."""
    target_stats = (
        (target.max, target.min, target.mean, target.norm) if target is not None else _NO_STATS
    )
    golden_stats = (
        (golden.max, golden.min, golden.mean, golden.norm) if golden is not None else _NO_STATS
    )
    max_diff, max_relative = _difference(target_stats[0], golden_stats[0])
    min_diff, min_relative = _difference(target_stats[1], golden_stats[1])
    mean_diff, mean_relative = _difference(target_stats[2], golden_stats[2])
    norm_diff, norm_relative = _difference(target_stats[3], golden_stats[3])
    # One dict display instead of eight insertions: this runs once per compared parameter.
    return {
        _MAX_DIFF: max_diff,
        _MAX_RELATIVE: max_relative,
        _MIN_DIFF: min_diff,
        _MIN_RELATIVE: min_relative,
        _MEAN_DIFF: mean_diff,
        _MEAN_RELATIVE: mean_relative,
        _NORM_DIFF: norm_diff,
        _NORM_RELATIVE: norm_relative,
    }


def crc32_of(value: Any) -> str:
    return f"{zlib.crc32(str(value).encode()):08x}"


def md5_of(param: Param | None) -> str | None:
    """The checksum msprobe compares: the dumped one, or the CRC-32 of a scalar's value."""
    if param is None:
        return None
    if param.md5 is not None:
        return param.md5
    if param.is_tensor:
        return None
    return crc32_of(param.value)


def _load_tensor(path: Path) -> np.ndarray[Any, Any]:
    import numpy as np  # only tensor mode needs it: 0.1 s of every other start-up

    if path.suffix == ".npy":
        return np.asarray(np.load(path, allow_pickle=False))
    import torch  # only tensor-mode compares pay for importing torch

    tensor = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(tensor, torch.Tensor):
        raise ValueError(f"{path.name} holds a {type(tensor).__name__}, not a tensor")
    if tensor.dtype in (torch.bfloat16, torch.float16):
        tensor = tensor.float()
    return tensor.detach().numpy()


def load_param_tensor(
    param: Param | None, tensor_dir: str
) -> tuple[np.ndarray[Any, Any] | None, str | None]:
    """(array, problem): the tensor of a parameter in tensor mode, or why it is missing."""
    if param is None or not param.is_tensor:
        return None, None
    if not param.data_name or param.data_name == "-1":
        return None, "no tensor file recorded (data_name)"
    path = Path(tensor_dir) / param.data_name
    try:
        return _load_tensor(path), None
    except FileNotFoundError:
        return None, f"tensor file missing: {path}"
    except Exception as error:  # a corrupt file is reported on the row, not fatal
        return None, f"cannot load {path}: {error}"


def _fixed(value: float) -> float:
    return float(f"{value:.12f}")


def tensor_metrics(
    target: np.ndarray[Any, Any] | None, golden: np.ndarray[Any, Any] | None
) -> tuple[dict[str, Metric], list[str]]:
    """Cosine, EucDist, MaxAbsErr, MaxRelativeErr and the 1/1000 and 5/1000 ratios."""
    import numpy as np  # see _load_tensor

    messages: list[str] = []
    if target is None or golden is None:
        return dict.fromkeys(TENSOR_METRIC_NAMES, UNSUPPORTED), messages
    if target.size == 0 or golden.size == 0:
        return dict.fromkeys(TENSOR_METRIC_NAMES, UNSUPPORTED), ["empty tensor"]
    if target.shape != golden.shape:
        return dict.fromkeys(TENSOR_METRIC_NAMES, SHAPE_UNMATCHED), [
            f"shape {list(target.shape)} vs {list(golden.shape)}"
        ]
    if target.dtype != golden.dtype:
        messages.append(f"dtype {target.dtype} vs {golden.dtype}")
    result_dtype = np.result_type(target.dtype, golden.dtype, np.float32)
    n = target.astype(np.float64).ravel()
    b = golden.astype(np.float64).ravel()
    n_bad, b_bad = ~np.isfinite(n), ~np.isfinite(b)
    if n_bad.any() or b_bad.any():
        if not np.array_equal(n_bad, b_bad):
            return dict.fromkeys(TENSOR_METRIC_NAMES, NA), [
                *messages,
                "inf/nan at different positions",
            ]
        n = np.where(n_bad, 0.0, n)
        b = np.where(b_bad, 0.0, b)
    metrics: dict[str, Metric] = {}
    abs_err = np.abs(n - b)
    zero = b == 0
    if zero.any():
        eps = (
            float(np.finfo(result_dtype).eps)
            if np.issubdtype(result_dtype, np.floating)
            else float(np.finfo(np.float32).eps)
        )
        relative = np.abs(
            (np.where(zero, n + eps, n) - np.where(zero, eps, b)) / np.where(zero, eps, b)
        )
    else:
        relative = abs_err / np.abs(b)
    scalar = target.ndim == 0
    if scalar or n.size == 1:
        metrics["Cosine"] = UNSUPPORTED
    else:
        n_norm, b_norm = float(np.linalg.norm(n)), float(np.linalg.norm(b))
        eps64 = float(np.finfo(np.float64).eps)
        if n_norm <= eps64 and b_norm <= eps64:
            metrics["Cosine"] = 1.0
        elif n_norm <= eps64 or b_norm <= eps64:
            metrics["Cosine"] = NAN
            messages.append("one side is all zeros: cosine undefined")
        else:
            cosine = float(np.dot(n, b) / (n_norm * b_norm))
            metrics["Cosine"] = round(cosine, 6) if cosine > 0.9999 else _fixed(cosine)
    # msprobe shows the distance unrounded; the other metrics at 12 decimals.
    metrics["EucDist"] = UNSUPPORTED if scalar else float(np.linalg.norm(n - b))
    metrics["MaxAbsErr"] = _fixed(float(abs_err.max()))
    metrics["MaxRelativeErr"] = _fixed(float(relative.max()))
    if scalar:
        metrics["One Thousandth Err Ratio"] = UNSUPPORTED
        metrics["Five Thousandths Err Ratio"] = UNSUPPORTED
    else:
        metrics["One Thousandth Err Ratio"] = _fixed(
            float(np.count_nonzero(relative < 0.001)) / relative.size
        )
        metrics["Five Thousandths Err Ratio"] = _fixed(
            float(np.count_nonzero(relative < 0.005)) / relative.size
        )
    return metrics, messages
