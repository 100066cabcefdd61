"""msprobe's display form of parameter dicts: every value a string (reference-builder.md §7.5).

These strings fill the compatibility columns ``tb_nodes.input_data`` / ``output_data`` that
tb_graph_ascend shows; graphboard's own logic never reads numbers back from them.
"""

from __future__ import annotations

import json
import re
from typing import Any

from graphboard.compare.metrics import (
    RELATIVE_METRIC_NAMES,
    SUMMARY_METRIC_NAMES,
    TENSOR_METRIC_NAMES,
    md5_of,
)
from graphboard.compare.result import DataMode, Metric, NodeComparison, ParamRow
from graphboard.dump.records import Param, Role

SUMMARY_METRICS = SUMMARY_METRIC_NAMES
RELATIVE_METRICS = frozenset(RELATIVE_METRIC_NAMES)
TENSOR_METRICS = TENSOR_METRIC_NAMES
_DECIMAL = re.compile(r"^\d{1,20}\.(\d{1,20})(%?)$")


def _round_decimal(text: str) -> str:
    match = _DECIMAL.match(text)
    if match is None or len(match.group(1)) <= 6:
        return text
    return f"{float(text.rstrip('%')):.6f}{match.group(2)}"


def _clean(value: str) -> str:
    if value == " ":
        return "null"
    return _round_decimal(value.replace("'", "").replace("None", "null"))


_cleaned: dict[str, str] = {}  # dtype and type strings repeat: clean each once


def display_value(value: Any) -> str:
    """msprobe's string for one value: strings cleaned and rounded, the rest ``str()``."""
    if value.__class__ is float:
        return repr(value)  # the hot path: statistics
    if value is None:
        return "null"
    if isinstance(value, str):
        if len(value) <= 64 and len(_cleaned) < 50_000:
            cleaned = _cleaned.get(value)
            if cleaned is None:
                cleaned = _cleaned[value] = _clean(value)
            return cleaned
        return _clean(value)
    return str(value)


_shapes: dict[tuple[Any, ...] | None, str] = {None: "null"}


def _shape(shape: tuple[Any, ...] | None) -> str:
    text = _shapes.get(shape)
    if text is None:
        text = _shapes[shape] = "[" + ", ".join(str(item) for item in shape) + "]"  # type: ignore[union-attr]
    return text


_BOOLEANS: dict[bool | None, str] = {True: "True", False: "False", None: "null"}


def param_display(param: Param, keep_md5: bool) -> dict[str, str]:
    if param.is_null:
        return {"value": "null"}
    data_name = param.data_name or "-1"
    out: dict[str, str]
    if param.is_tensor:
        # The hot path (millions of calls): floats straight to repr, the rest through display_value.
        maximum, minimum, mean, norm = param.max, param.min, param.mean, param.norm
        out = {
            "type": display_value(param.type),
            "dtype": display_value(param.dtype),
            "shape": _shape(param.shape),
            "Max": repr(maximum) if maximum.__class__ is float else display_value(maximum),
            "Min": repr(minimum) if minimum.__class__ is float else display_value(minimum),
            "Mean": repr(mean) if mean.__class__ is float else display_value(mean),
            "Norm": repr(norm) if norm.__class__ is float else display_value(norm),
            "requires_grad": _BOOLEANS.get(param.requires_grad)
            or display_value(param.requires_grad),
        }
        if keep_md5 and param.md5 is not None:
            out["md5"] = param.md5
        out["data_name"] = data_name
    elif param.extra and "group_ranks" in param.extra:
        out = {
            "type": display_value(param.type),
            "group_ranks": display_value(param.extra.get("group_ranks")),
            "group_id": display_value(param.extra.get("group_id")),
            "data_name": data_name,
        }
        return out
    else:
        out = {
            "type": display_value(param.type),
            "value": display_value(param.value),
            "data_name": data_name,
            "requires_grad": display_value(param.requires_grad),
            "Max": display_value(param.max),
            "Min": display_value(param.min),
            "Mean": display_value(param.mean),
            "Norm": display_value(param.norm),
            "dtype": display_value(param.dtype),
            "shape": _shape(param.shape),
        }
        if keep_md5:  # the CRC-32 of the value, which md5 mode compares
            out["md5"] = display_value(md5_of(param))
    if param.extra:
        for key, value in param.extra.items():
            out.setdefault(key, display_value(value))
    return out


def _percent(fraction: float) -> str:
    """A relative error as msprobe shows it: a percentage, more than 6 decimals rounded to 6."""
    text = repr(fraction * 100)
    point = text.find(".")
    if point < 0 or "e" in text or len(text) - point - 1 <= 6 or text[0] == "-":
        return text + "%"  # exponents, inf/nan and negatives are never rounded, as in msprobe
    return f"{fraction * 100:.6f}%"


def summary_metric_display(name: str, value: Metric) -> str:
    """Statistics-mode metric: relative errors are shown as percentages."""
    if value.__class__ is float:
        return _percent(value) if name in RELATIVE_METRICS else repr(value)
    return display_value(value)


def _comparison_fields(row: ParamRow, mode: DataMode) -> dict[str, str]:
    fields: dict[str, str] = {}
    metrics = row.metrics
    if mode is DataMode.SUMMARY:
        for name in SUMMARY_METRICS:
            fields[name] = summary_metric_display(name, metrics.get(name, "N/A"))
    elif mode is DataMode.TENSOR:
        for name in TENSOR_METRICS:
            fields[name] = display_value(metrics.get(name, "unsupported"))
    consistent = "True" if row.requires_grad_consistent else "False"
    if mode is DataMode.MD5:  # msprobe's order differs between the modes
        fields["Result"] = row.level.label
        fields["Requires_grad Consistent"] = consistent
    else:
        fields["Requires_grad Consistent"] = consistent
        fields["Result"] = row.level.label
    fields["Err_message"] = json.dumps(row.messages) if row.messages else "[]"
    return fields


def node_display(
    params: list[Param] | None,
    node_name: str,
    mode: DataMode | None,
    comparison: NodeComparison | None = None,
) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]]]:
    """(input_data, output_data) of one node, keyed by the full parameter name."""
    inputs: dict[str, dict[str, str]] = {}
    outputs: dict[str, dict[str, str]] = {}
    if not params:
        return inputs, outputs
    keep_md5 = mode is DataMode.MD5
    rows: dict[int, ParamRow] = {}
    if comparison is not None and mode is not None and mode is not DataMode.STRUCTURE:
        rows = {id(row.npu): row for row in comparison.rows if row.npu is not None}
    for param in params:
        shown = param_display(param, keep_md5)
        row = rows.get(id(param))
        if row is not None and mode is not None and not param.is_null:
            shown.update(_comparison_fields(row, mode))
        target = outputs if param.role is Role.OUTPUT else inputs
        target[f"{node_name}.{param.key}"] = shown
    return inputs, outputs
