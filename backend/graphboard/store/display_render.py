"""msprobe's display strings of a node, in Python: the reference the compiled renderer matches.

One parameter's fields, by the kind of leaf (in this order):
  masked leaf:      value "null", and nothing else (no comparison either)
  tensor:           type, dtype, shape, Max, Min, Mean, Norm, requires_grad, md5 (md5 mode,
                    when dumped), data_name ("-1" when none)
  process group:    type, group_ranks, group_id, data_name
  anything else:    type, value, data_name, requires_grad, Max, Min, Mean, Norm, dtype, shape,
                    md5 (md5 mode: the CRC-32 of the value, as md5_of gives it)
then the leaf's other fields (not over the ones above), then, for a scored target parameter,
its row's fields (over any of the same name):
  statistics mode:  the four differences (repr) and four relative errors (percentages)
  tensor mode:      Cosine ... Five Thousandths Err Ratio
  every mode:       Requires_grad Consistent, Result (md5 mode: Result first), Err_message
Every value is shown as msprobe shows it: floats as repr, None as "null", strings through
clean_string, the rest str(); a shape as "[1, 2048, 4096]"; a relative error is a percentage,
rounded to 6 decimals when it has more (never an exponent, inf/nan or a negative one). A text
field msprobe copies as it is (data_name, a tensor's md5, the verdict) is not cleaned.

The JSON is orjson's compact form, whose escapes (only quote, backslash and control
characters; UTF-8 kept) are the compiled renderer's too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import orjson

from graphboard.compare.metrics import (
    NA,
    RELATIVE_METRIC_NAMES,
    SUMMARY_METRIC_NAMES,
    TENSOR_METRIC_NAMES,
    UNSUPPORTED,
    md5_of,
)
from graphboard.compare.result import Level, ParamRow
from graphboard.dump.records import Param, Role

# The renderer's mode codes (display.py maps DataMode to them).
MODE_NONE, MODE_SUMMARY, MODE_MD5, MODE_TENSOR = 0, 1, 2, 3

_DECIMAL = re.compile(r"^\d{1,20}\.(\d{1,20})(%?)$")


def _round_decimal(text: str) -> str:
    match = _DECIMAL.match(text)
    if match is None or len(match.group(1)) <= 6:
        return text
    return f"{float(text.rstrip('%')):.6f}{match.group(2)}"


def clean_string(value: str) -> str:
    """msprobe's text for a string value: quotes dropped, None as null, long decimals rounded."""
    if value == " ":
        return "null"
    return _round_decimal(value.replace("'", "").replace("None", "null"))


# dtype and type strings repeat on every parameter: each short one is cleaned once.
_CLEANED: dict[str, str] = {}
_CLEANED_MAX = 50_000
_CLEANED_LEN = 64


def _cleaned(value: str) -> str:
    text = _CLEANED.get(value)
    if text is None:
        text = clean_string(value)
        if value.__class__ is str and len(value) <= _CLEANED_LEN and len(_CLEANED) < _CLEANED_MAX:
            _CLEANED[value] = text
    return text


_repr = float.__repr__


def show(value: Any) -> str:
    """One value as msprobe shows it: floats as repr, None as null, strings cleaned, else str()."""
    if value.__class__ is float:
        return _repr(value)
    if value is None:
        return "null"
    if isinstance(value, str):
        return _cleaned(value)
    return str(value)


_SHAPES: dict[tuple[Any, ...], str] = {}


def show_shape(shape: tuple[Any, ...] | None) -> str:
    """A shape as msprobe shows it: "[1, 2048, 4096]", or null."""
    if shape is None:
        return "null"
    if shape.__class__ is not tuple:
        raise TypeError(f"Param.shape must be a tuple or None, not {type(shape).__name__}")
    text = _SHAPES.get(shape)
    if text is None:
        text = "[" + ", ".join([str(size) for size in shape]) + "]"
        if len(_SHAPES) < _CLEANED_MAX:
            _SHAPES[shape] = text  # records.py shares the tuples of equal shapes
    return text


def _text(value: Any) -> str:
    """A text field msprobe copies as it is."""
    return value if isinstance(value, str) else str(value)


def _percent(fraction: float) -> str:
    """A relative error as msprobe shows it: more than 6 decimals rounded to 6."""
    percent = fraction * 100
    text = _repr(percent)
    point = text.find(".")
    if point < 0 or len(text) - point <= 7 or text[0] == "-" or "e" in text:
        return text + "%"
    return f"{percent:.6f}%"


# A tensor's requires_grad is looked up (so 1 shows as True, as msprobe's own dict does).
_FLAGS: dict[Any, str] = {True: "True", False: "False", None: "null"}
# (name, shown as a percentage) of each statistics-mode metric, in msprobe's order
_SUMMARY_FORMATS = tuple((name, name in RELATIVE_METRIC_NAMES) for name in SUMMARY_METRIC_NAMES)
_LABELS = {level: level.label for level in Level}  # a property: asked once per level


def _tensor_fields(param: Param, md5_mode: bool) -> dict[str, str]:
    maximum, minimum, mean, norm = param.max, param.min, param.mean, param.norm
    flag = param.requires_grad
    fields = {
        "type": show(param.type),
        "dtype": show(param.dtype),
        "shape": show_shape(param.shape),
        "Max": _repr(maximum) if maximum.__class__ is float else show(maximum),
        "Min": _repr(minimum) if minimum.__class__ is float else show(minimum),
        "Mean": _repr(mean) if mean.__class__ is float else show(mean),
        "Norm": _repr(norm) if norm.__class__ is float else show(norm),
        "requires_grad": _FLAGS[flag] if flag in _FLAGS else show(flag),
    }
    if md5_mode and param.md5 is not None:
        fields["md5"] = _text(param.md5)
    data_name = param.data_name
    fields["data_name"] = _text(data_name) if data_name else "-1"
    return fields


def _group_fields(param: Param, extra: dict[str, Any]) -> dict[str, str]:
    """A process group's fields, and no others."""
    data_name = param.data_name
    return {
        "type": show(param.type),
        "group_ranks": show(extra["group_ranks"]),
        "group_id": show(extra.get("group_id")),
        "data_name": _text(data_name) if data_name else "-1",
    }


def _leaf_fields(param: Param, md5_mode: bool) -> dict[str, str]:
    """The fields of any other leaf: a scalar, a string, a slice..."""
    data_name = param.data_name
    fields = {
        "type": show(param.type),
        "value": show(param.value),
        "data_name": _text(data_name) if data_name else "-1",
        "requires_grad": show(param.requires_grad),
        "Max": show(param.max),
        "Min": show(param.min),
        "Mean": show(param.mean),
        "Norm": show(param.norm),
        "dtype": show(param.dtype),
        "shape": show_shape(param.shape),
    }
    if md5_mode:
        fields["md5"] = show(md5_of(param))
    return fields


def _add_extra(fields: dict[str, str], extra: Any) -> None:
    """The leaf's other fields, after (and never over) its own."""
    if not isinstance(extra, dict):
        raise TypeError("Param.extra must be a dict")
    for key, value in extra.items():
        if not isinstance(key, str):
            raise TypeError(f"display text must be str, not {type(key).__name__}")
        if key not in fields:
            fields[key] = show(value)


def _add_row(fields: dict[str, str], row: ParamRow, mode: int) -> None:
    """A scored parameter's row: its metrics and verdict, assigned over the parameter's fields."""
    metrics = row.metrics
    if not isinstance(metrics, dict):
        raise TypeError("ParamRow.metrics must be a dict")
    if mode == MODE_SUMMARY:
        get = metrics.get
        for name, relative in _SUMMARY_FORMATS:
            value = get(name, NA)
            if value.__class__ is not float:
                fields[name] = show(value)
            else:
                fields[name] = _percent(value) if relative else _repr(value)
    elif mode == MODE_TENSOR:
        for name in TENSOR_METRIC_NAMES:
            fields[name] = show(metrics.get(name, UNSUPPORTED))
    consistent = "True" if row.requires_grad_consistent else "False"
    level = row.level
    label = _LABELS.get(level) or level.label
    if mode == MODE_MD5:  # msprobe's order differs between the modes
        fields["Result"] = label
        fields["Requires_grad Consistent"] = consistent
    else:
        fields["Requires_grad Consistent"] = consistent
        fields["Result"] = label
    messages = row.messages
    fields["Err_message"] = json.dumps(messages) if messages else "[]"


def render_node(
    params: Sequence[Param] | None, node_name: str, mode: int, rows: Sequence[ParamRow] | None
) -> tuple[str, str]:
    """(input_data, output_data) of one node as JSON text, keyed by the full parameter name."""
    if not isinstance(node_name, str):
        raise TypeError("node_name must be str")
    inputs: dict[str, dict[str, str]] = {}
    outputs: dict[str, dict[str, str]] = {}
    if params is not None:
        by_param = (
            {id(row.target): row for row in rows if row.target is not None}
            if rows is not None and mode != MODE_NONE
            else {}
        )
        md5_mode = mode == MODE_MD5
        prefix = node_name + "."
        output = Role.OUTPUT
        for param in params:
            extra = param.extra
            if param.type is None and param.value is None and param.max is None and not extra:
                fields = {"value": "null"}  # a masked leaf: never scored
            else:
                if param.is_tensor:
                    fields = _tensor_fields(param, md5_mode)
                elif extra and isinstance(extra, dict) and "group_ranks" in extra:
                    fields = _group_fields(param, extra)
                    extra = None
                else:
                    fields = _leaf_fields(param, md5_mode)
                if extra:
                    _add_extra(fields, extra)
                row = by_param.get(id(param)) if by_param else None
                if row is not None:
                    _add_row(fields, row, mode)
            key = param.key
            if not isinstance(key, str):
                raise TypeError("Param.key must be str")
            (outputs if param.role is output else inputs)[prefix + key] = fields
    return orjson.dumps(inputs).decode(), orjson.dumps(outputs).decode()
