"""The table's columns: msprobe 26.2 ``compare``'s header for each data mode, in its order,
then graphboard's own."""

from __future__ import annotations

from graphboard.compare.metrics import SUMMARY_METRIC_NAMES, TENSOR_METRIC_NAMES
from graphboard.compare.result import DataMode

NPU_NAME = "NPU Name"
BENCH_NAME = "Bench Name"
RESULT = "Result"
ERR_MESSAGE = "Err_message"
REQUIRES_GRAD_CONSISTENT = "Requires_grad Consistent"
STACK = "NPU_Stack_Info"
DATA_NAME = "Data_name"
NPU_MD5 = "NPU MD5"
BENCH_MD5 = "BENCH MD5"
# graphboard's own, after msprobe's: the level of a divergence that starts at the row's node
STARTS_HERE = "Divergence Starts Here"

BASIC = (
    NPU_NAME,
    BENCH_NAME,
    "NPU Dtype",
    "Bench Dtype",
    "NPU Tensor Shape",
    "Bench Tensor Shape",
    "NPU Requires_grad",
    "Bench Requires_grad",
)
# The stored statistic behind each side's statistics column.
STATISTICS = (("max", "Max"), ("min", "Min"), ("mean", "Mean"), ("l2norm", "Norm"))
NPU_STATISTICS = tuple(f"NPU {name}" for name, _stored in STATISTICS)
BENCH_STATISTICS = tuple(f"Bench {name}" for name, _stored in STATISTICS)
VERDICT = (REQUIRES_GRAD_CONSISTENT, RESULT, ERR_MESSAGE)
GRAPHBOARD = (STARTS_HERE,)

_MSPROBE: dict[DataMode, tuple[str, ...]] = {
    DataMode.SUMMARY: (
        *BASIC,
        *SUMMARY_METRIC_NAMES,
        *NPU_STATISTICS,
        *BENCH_STATISTICS,
        *VERDICT,
        STACK,
    ),
    DataMode.MD5: (*BASIC, NPU_MD5, BENCH_MD5, *VERDICT, STACK),
    DataMode.TENSOR: (
        *BASIC,
        *TENSOR_METRIC_NAMES,
        *NPU_STATISTICS,
        *BENCH_STATISTICS,
        *VERDICT,
        STACK,
        DATA_NAME,
    ),
}
TABLE_MODES = frozenset(_MSPROBE)


def msprobe_columns(mode: DataMode) -> tuple[str, ...]:
    """msprobe compare's header for ``mode`` (summary, md5 or tensor)."""
    return _MSPROBE[mode]


def table_columns(mode: DataMode) -> tuple[str, ...]:
    """msprobe's header, then graphboard's columns."""
    return (*_MSPROBE[mode], *GRAPHBOARD)
