"""Per-parameter metrics for the three data modes (reference-builder.md §3.4).

Numbers stay numbers (float64, NaN and inf kept); the string markers are msprobe's:
``N/A`` (not computable), ``Nan`` (NaN difference), ``unsupported``, ``shape unmatched``.
"""

from __future__ import annotations

import math
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from graphboard.compare.result import Metric
from graphboard.dump.records import Param, Stat

STAT_NAMES = (("max", "Max"), ("min", "Min"), ("mean", "Mean"), ("norm", "L2norm"))
_RELATIVE_NAMES = {
    "max": "MaxRelativeErr",
    "min": "MinRelativeErr",
    "mean": "MeanRelativeErr",
    "norm": "NormRelativeErr",
}
RELATIVE_METRIC_NAMES = tuple(_RELATIVE_NAMES.values())
_SUMMARY_PARTS = tuple(
    (attribute, label, _RELATIVE_NAMES[attribute]) for attribute, label in STAT_NAMES
)
# msprobe's column names, in its order: the differences, then the relative errors.
SUMMARY_METRIC_NAMES = (*(f"{label} diff" for _, label in STAT_NAMES), *RELATIVE_METRIC_NAMES)
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


def summary_metrics(target: Param | None, golden: Param | None) -> dict[str, Metric]:
    """Differences and relative errors of Max, Min, Mean and Norm."""
    metrics: dict[str, Metric] = {}
    for attribute, label, relative in _SUMMARY_PARTS:
        npu = getattr(target, attribute) if target is not None else None
        bench = getattr(golden, attribute) if golden is not None else None
        # floats (nearly always) skip the general check
        if not (npu.__class__ is float or is_number(npu)) or not (
            bench.__class__ is float or is_number(bench)
        ):
            metrics[f"{label} diff"] = NA
            metrics[relative] = NA
            continue
        # Python's own arithmetic, as msprobe's: two integer statistics differ by an integer.
        diff = npu - bench  # type: ignore[operator]
        if math.isnan(diff):
            metrics[f"{label} diff"] = NAN
            metrics[relative] = NAN
            continue
        metrics[f"{label} diff"] = diff
        metrics[relative] = abs(diff / float(bench)) if bench != 0 else NA  # type: ignore[arg-type]
    return metrics


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
    npu: np.ndarray[Any, Any] | None, bench: np.ndarray[Any, Any] | None
) -> tuple[dict[str, Metric], list[str]]:
    """Cosine, EucDist, MaxAbsErr, MaxRelativeErr and the 1/1000 and 5/1000 ratios."""
    messages: list[str] = []
    if npu is None or bench is None:
        return dict.fromkeys(TENSOR_METRIC_NAMES, UNSUPPORTED), messages
    if npu.size == 0 or bench.size == 0:
        return dict.fromkeys(TENSOR_METRIC_NAMES, UNSUPPORTED), ["empty tensor"]
    if npu.shape != bench.shape:
        return dict.fromkeys(TENSOR_METRIC_NAMES, SHAPE_UNMATCHED), [
            f"shape {list(npu.shape)} vs {list(bench.shape)}"
        ]
    if npu.dtype != bench.dtype:
        messages.append(f"dtype {npu.dtype} vs {bench.dtype}")
    result_dtype = np.result_type(npu.dtype, bench.dtype, np.float32)
    n = npu.astype(np.float64).ravel()
    b = bench.astype(np.float64).ravel()
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
    scalar = npu.ndim == 0
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
