"""Per-parameter pass / warning / error rules and the node's level (reference-builder.md §3.5).

Every row starts at pass; each rule can only raise a row's level. The node's level is the
worst row's. The rules that compare outputs with inputs find where an error *starts*.
"""

from __future__ import annotations

import math
import re

from graphboard.compare.metrics import RELATIVE_METRIC_NAMES, is_number
from graphboard.compare.result import DataMode, Level, ParamRow
from graphboard.dump.records import Stat, text_statistics

IGNORE_ALL = frozenset(
    {
        "empty",
        "empty_like",
        "numpy",
        "to",
        "__setitem__",
        "empty_with_format",
        "new_empty_strided",
        "new_empty",
        "empty_strided",
    }
)
IGNORE_INPUTS = frozenset(
    {"_reduce_scatter_base", "_all_gather_base", "all_to_all_single", "batch_isend_irecv"}
)

MSG_INF_NAN = "error: the target holds inf or nan where the golden is finite"
MSG_NORM_JUMP = (
    "error: the output's norm differs by more than 50% while the inputs agree within 10%"
)
MSG_REQUIRES_GRAD = "error: requires_grad differs"
MSG_SCALAR = "error: scalar arguments differ"
MSG_DTYPE = "error: dtypes differ"
MSG_SHAPE = "error: shapes differ"
MSG_NORM_WARN = "warning: the output's norm relative error is more than 10 times the inputs'"
MSG_ONE_THOUSANDTH = (
    "error: under 10% of output elements within 1/1000 while over 90% of input elements are"
)
MSG_COSINE_WARN = "warning: output cosine similarity dropped by more than 0.1 from the inputs'"
MSG_MD5 = "error: checksums differ"
MSG_MD5_MISSING = "warning: parameter has no checksum on one side"
MSG_ONLY_TARGET = "warning: parameter only in the target"
MSG_ONLY_GOLDEN = "warning: parameter only in the golden"
MSG_TEXT_STATISTICS = "warning: statistics that are not numbers cannot be compared: {}"

NORM_RELATIVE = RELATIVE_METRIC_NAMES[3]  # "NormRelativeErr"


_isfinite = math.isfinite


def _bad_float(value: Stat) -> bool:
    if value.__class__ is float:  # nearly always: skip the general check
        return not _isfinite(value)
    return is_number(value) and not _isfinite(float(value))  # type: ignore[arg-type]


def _fraction(row: ParamRow, name: str) -> float | None:
    value = row.metrics.get(name)
    if isinstance(value, float) and not math.isnan(value):
        return value
    return None


def _min_value(rows: list[ParamRow], name: str) -> float:
    values = [value for row in rows if (value := _fraction(row, name)) is not None]
    return min(values) if values else 1.0


def _bad_pair(high: Stat, low: Stat) -> bool:
    """_bad_float(high) or _bad_float(low), two floats (nearly always) in one test."""
    if high.__class__ is float and low.__class__ is float:
        return not (_isfinite(high) and _isfinite(low))
    return _bad_float(high) or _bad_float(low)


def _check_inf_nan(rows: list[ParamRow]) -> None:
    for row in rows:
        target_param, golden_param = row.target, row.golden
        if target_param is None or golden_param is None:
            continue
        if _bad_pair(golden_param.max, golden_param.min):
            continue
        if _bad_pair(target_param.max, target_param.min):
            row.raise_to(Level.ERROR, MSG_INF_NAN)


def _fused_projection(name: str) -> bool:
    """A fused q/k/v or gate/up projection, whose dtype msprobe does not judge (its halves
    may be kept in different precisions)."""
    return "qkv" in name or "gate_up" in name


def _check_text_statistics(rows: list[ParamRow]) -> None:
    """A tensor statistic that is text (a damaged dump) cannot be compared: msprobe shows
    N/A and passes the row; here the row says so, as a warning."""
    for row in rows:
        target_param, golden_param = row.target, row.golden
        # Eight class tests inline, no call: this runs for every row of a statistics compare.
        if not (
            target_param is not None
            and (
                target_param.max.__class__ is str
                or target_param.min.__class__ is str
                or target_param.mean.__class__ is str
                or target_param.norm.__class__ is str
            )
        ) and not (
            golden_param is not None
            and (
                golden_param.max.__class__ is str
                or golden_param.min.__class__ is str
                or golden_param.mean.__class__ is str
                or golden_param.norm.__class__ is str
            )
        ):
            continue
        sides: list[str] = []
        for side, param in (("target", target_param), ("golden", golden_param)):
            found = text_statistics(param) if param is not None else []
            if found:
                stats = ", ".join(f"{field} {value!r}" for field, value in found)
                sides.append(f"{side} {stats}")
        if sides:  # not a scalar argument's text value
            row.raise_to(Level.WARNING, MSG_TEXT_STATISTICS.format("; ".join(sides)))


def _check_common(
    rows: list[ParamRow], outputs: set[int], golden_name: str, shapes: bool = True
) -> None:
    """Requires_grad, scalar arguments (inputs only: rows not in ``outputs``, by id), dtype
    (but on a fused projection, by the golden row's full name, as msprobe's bench name) and
    shape (not in msprobe's parallel-merge set: a merged tensor keeps its main rank's shard
    shape)."""
    fused_node = _fused_projection(golden_name)  # once per node: the rows share the prefix
    for row in rows:
        target_param, golden_param = row.target, row.golden
        if target_param is None or golden_param is None:
            continue
        if (
            target_param.requires_grad is not None
            and golden_param.requires_grad is not None
            and target_param.requires_grad != golden_param.requires_grad
        ):
            row.requires_grad_consistent = False
            row.raise_to(Level.ERROR, MSG_REQUIRES_GRAD)
        target_dtype, golden_dtype = target_param.dtype or "", golden_param.dtype or ""
        if (
            id(row) not in outputs
            and "class" in target_dtype
            and "class" in golden_dtype
            and target_param.shape == ()
            and target_param.max != golden_param.max
        ):
            row.raise_to(Level.ERROR, MSG_SCALAR)
        # A side with no dtype (or no shape) is a null leaf, an argument passed as None
        # (sdpa's attn_mask=None against eager's mask tensor): msprobe's DType and Shape
        # checkers skip a row where either side has none, so a difference of call is no
        # error of the op.
        if (
            target_dtype
            and golden_dtype
            and target_dtype != golden_dtype
            and not (fused_node or _fused_projection(golden_param.key))
        ):
            row.raise_to(Level.ERROR, MSG_DTYPE)
        if (
            shapes
            and target_param.shape != golden_param.shape
            and target_param.shape is not None
            and golden_param.shape is not None
        ):
            row.raise_to(Level.ERROR, MSG_SHAPE)


def _largest_norm_error(rows: list[ParamRow]) -> float:
    """The largest absolute NormRelativeErr among ``rows`` that have a number (not NaN)
    there, else 0."""
    largest = 0.0
    for row in rows:
        value = row.metrics.get(NORM_RELATIVE)
        if isinstance(value, float) and value == value:  # a float, not NaN
            size = abs(value)
            if size > largest:
                largest = size
    return largest


def _check_statistics(inputs: list[ParamRow], outputs: list[ParamRow], skip_inputs: bool) -> None:
    if skip_inputs or not outputs:
        return
    in_max = _largest_norm_error(inputs)
    if in_max < 0.1:
        for row in outputs:
            value = _fraction(row, NORM_RELATIVE)
            if value is not None and abs(value) > 0.5:
                row.raise_to(Level.ERROR, MSG_NORM_JUMP)
    out_max = _largest_norm_error(outputs)
    if (in_max == 0 and out_max > 0.1) or (in_max != 0 and out_max / in_max > 10):
        outputs[0].raise_to(Level.WARNING, MSG_NORM_WARN)


def _check_tensors(inputs: list[ParamRow], outputs: list[ParamRow], skip_inputs: bool) -> None:
    if skip_inputs or not outputs:
        return
    if (
        _min_value(inputs, "One Thousandth Err Ratio") > 0.9
        and _min_value(outputs, "One Thousandth Err Ratio") < 0.1
    ):
        outputs[0].raise_to(Level.ERROR, MSG_ONE_THOUSANDTH)
    cosine_in = _min_value(inputs, "Cosine")
    if cosine_in > 0.9 and cosine_in - _min_value(outputs, "Cosine") > 0.1:
        outputs[0].raise_to(Level.WARNING, MSG_COSINE_WARN)


def _check_md5(rows: list[ParamRow], checksums: list[tuple[str | None, str | None]]) -> None:
    for row, (target_param, golden_param) in zip(rows, checksums, strict=True):
        if target_param == golden_param:
            continue
        if (
            not target_param
            or not golden_param
            or "N/A" in (target_param, golden_param)
            or "Nan" in (target_param, golden_param)
        ):
            row.raise_to(Level.WARNING, MSG_MD5_MISSING)
        else:
            row.raise_to(Level.ERROR, MSG_MD5)


def api_name(node_name: str) -> str:
    parts = node_name.split(".", 2)
    return parts[1] if len(parts) > 1 else ""


_RANK_SUFFIX = re.compile(r"_rank\d+$")  # a merged graph's other-rank APIs (merge/apis.py)


def apply_rules(
    node_name: str,
    rows: list[ParamRow],
    mode: DataMode,
    checksums: list[tuple[str | None, str | None]] | None = None,
    golden_name: str | None = None,
    parallel_merge: bool = False,
) -> Level | None:
    """Score the rows in place and return the node's level (None without rows).

    ``golden_name`` is the paired golden node's (``node_name`` when not given): the dtype
    rule reads it, as msprobe reads the bench name. ``parallel_merge``: msprobe's rule set for
    merged graphs (no shape rule; ``_rank<r>`` left out of API names for the ignore lists)."""
    if not rows:
        return None
    name = api_name(node_name)
    if parallel_merge:
        name = _RANK_SUFFIX.sub("", name)
    if name in IGNORE_ALL:  # uninitialised buffers and conversions: nothing to judge
        return Level.PASS
    skip_inputs = name in IGNORE_INPUTS
    outputs: list[ParamRow] = []
    inputs: list[ParamRow] = []
    for row in rows:
        (outputs if row.is_output else inputs).append(row)
    checked = outputs if skip_inputs else rows
    for row in checked:
        # a null leaf (an argument or gradient that is None) on one side only holds nothing
        # to pair: msprobe drops an extra golden item and passes an extra target null one
        if row.target is None:
            if not row.golden.is_null:  # type: ignore[union-attr]
                row.raise_to(Level.WARNING, MSG_ONLY_GOLDEN)
        elif row.golden is None and not row.target.is_null:
            row.raise_to(Level.WARNING, MSG_ONLY_TARGET)
    if mode is DataMode.MD5:
        assert checksums is not None
        index = {id(row): position for position, row in enumerate(rows)}
        _check_md5(checked, [checksums[index[id(row)]] for row in checked])
    elif mode is DataMode.SUMMARY:
        _check_text_statistics(checked)
        _check_inf_nan(checked)
        _check_statistics(inputs, outputs, skip_inputs)
        _check_common(
            checked, {id(row) for row in outputs}, golden_name or node_name, not parallel_merge
        )
    elif mode is DataMode.TENSOR:
        _check_inf_nan(checked)
        _check_tensors(inputs, outputs, skip_inputs)
        _check_common(checked, {id(row) for row in outputs}, golden_name or node_name)
    return max(row.level for row in rows)
