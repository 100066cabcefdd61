"""Facts of msprobe's monitor formats, in one place: file and folder names, the metrics and
statistics its trend database knows (in its order), and how ``data2db`` stores a number."""

from __future__ import annotations

import math
import re

# A rank's folder, as the monitor names it: ``<time tag>-rank<r>-<id>``.
RANK_FOLDER = re.compile(r"([\w-]{0,20})-rank(\d{1,5})-")
# A CSV's name: ``<metric>_<first step>-<last step>.csv``.
CSV_STEPS = r"_(\d+)-(\d+)\.csv"

# data2db's metrics and statistics, in the order it writes them.
METRICS = (
    "actv",
    "actv_grad",
    "exp_avg",
    "exp_avg_sq",
    "grad_unreduced",
    "grad_reduced",
    "param_origin",
    "param_updated",
    "other",
)
STATISTICS = (
    "norm",
    "min",
    "max",
    "zeros",
    "nans",
    "mean",
    "entropy",
    "softmax_max",
    "sr",
    "kernel_norm",
    "std_x",
    "jacobian",
    "proxy",
    "token_similarity",
)

# data2db stores a statistic clamped to +-1e9, an infinity one beyond, NaN as NULL.
STORED_LIMIT = 1e9
TREND_DB_SUFFIX = ".trend.db"


def metric_of_file(file_name: str) -> str | None:
    """The metric a monitor CSV holds, or None for any other file (data2db's rule: the name
    without its last ``_`` part is a known metric, followed by the step range)."""
    metric = file_name.rpartition("_")[0]
    if metric not in METRICS or not re.match(re.escape(metric) + CSV_STEPS, file_name):
        return None
    return metric


def stored_value(value: float) -> float | None:
    """A statistic as data2db stores it in trend_data."""
    if math.isnan(value):
        return None
    if value == math.inf:
        return STORED_LIMIT + 1
    if value == -math.inf:
        return -STORED_LIMIT - 1
    return max(-STORED_LIMIT, min(STORED_LIMIT, value))


def layer_tags(target_name: str) -> set[tuple[str, str]]:
    """data2db's tags of a target: every non-numeric part of the dotted name is a ``module``
    tag, and ``<part>.<number>`` (a number after a non-numeric part) a ``layer`` tag."""
    tags: set[tuple[str, str]] = set()
    parts = target_name.split(".")
    for index, part in enumerate(parts):
        if not part.isdigit():
            tags.add((part, "module"))
        elif index > 0 and not parts[index - 1].isdigit():
            tags.add((f"{parts[index - 1]}.{part}", "layer"))
    return tags
