"""msprobe's display dicts (``tb_nodes.input_data`` / ``output_data``) read back as ``Param``s.

The inverse of :mod:`graphboard.store.display` for the fields the compare engine reads, so a
stored node can be scored again (manual matching) by the builder's own engine. It also splits
a stored dict into the parameter's own fields and the comparison fields the builder merged in.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

from graphboard.compare.metrics import SUMMARY_METRIC_NAMES, TENSOR_METRIC_NAMES
from graphboard.dump.records import LEAF_FIELDS, Param, Role, Stat, is_parameters_grad

# Fields the compare writes into the target's dicts (a scored row's fields: store/display.py).
COMPARISON_FIELDS = frozenset(
    {
        *SUMMARY_METRIC_NAMES,
        *TENSOR_METRIC_NAMES,
        "Requires_grad Consistent",
        "Result",
        "Err_message",
    }
)
_SPECIAL_FLOATS = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}
_ROLE_PREFIXES = (
    ("input.", Role.INPUT),
    ("output.", Role.OUTPUT),
    ("parameters.", Role.PARAMETERS),
)


def short_key(node_name: str, full_name: str) -> str:
    """``Module.a.forward.0.input.0`` under ``Module.a.forward.0`` -> ``input.0``."""
    prefix = node_name + "."
    return full_name[len(prefix) :] if full_name.startswith(prefix) else full_name


def role_of(node_name: str, key: str, in_output_data: bool) -> Role:
    if in_output_data:
        return Role.OUTPUT
    for prefix, role in _ROLE_PREFIXES:
        if key.startswith(prefix):
            return role
    return Role.PARAMETERS_GRAD if is_parameters_grad(node_name) else Role.INPUT


def _number(text: str) -> float | int | None:
    special = _SPECIAL_FLOATS.get(text.strip().lower())
    if special is not None:
        return special
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return None


def _tensor_stat(text: Any) -> Stat:
    """Tensor statistics were numbers (or None, or a string msprobe kept) before display."""
    if text is None or text == "null":
        return None
    if not isinstance(text, str):
        return text
    number = _number(text)
    return text if number is None else number


def _scalar(text: Any) -> Any:
    """A non-tensor value as ``str()`` showed it: numbers, booleans, null, else the text."""
    if text is None or text == "null":
        return None
    if not isinstance(text, str):
        return text
    if text in ("True", "False"):
        return text == "True"
    number = _number(text)
    return text if number is None else number


def _bool(text: Any) -> bool | None:
    if isinstance(text, bool):
        return text
    if text == "True":
        return True
    if text == "False":
        return False
    return None


def _shape(text: Any) -> tuple[Any, ...] | None:
    if text is None or text == "null":
        return None
    if isinstance(text, list):
        return tuple(text)
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return None
    if isinstance(value, list):
        return tuple(value)
    return (value,)


def shows_tensor(shown: dict[str, Any]) -> bool:
    """Whether a stored dict is a tensor's: a tensor shows dtype and shape, never a value."""
    return "value" not in shown and ("dtype" in shown or "shape" in shown)


def param_from_display(key: str, role: Role, shown: dict[str, Any]) -> Param:
    """One stored dict as the ``Param`` the builder scored (fields it did not keep stay None)."""
    if set(shown) == {"value"} and shown.get("value") == "null":
        return Param(key, role)  # a masked (null) leaf
    data_name = shown.get("data_name")
    param = Param(
        key,
        role,
        type=shown.get("type"),
        requires_grad=_bool(shown.get("requires_grad")),
        md5=shown.get("md5"),
        data_name=None if data_name in (None, "-1") else data_name,
    )
    extra = {
        name: value
        for name, value in shown.items()
        if name not in LEAF_FIELDS and name not in COMPARISON_FIELDS
    }
    param.extra = extra or None
    if shows_tensor(shown):
        param.is_tensor = True
        param.dtype = shown.get("dtype")
        param.shape = _shape(shown.get("shape"))
        param.max = _tensor_stat(shown.get("Max"))
        param.min = _tensor_stat(shown.get("Min"))
        param.mean = _tensor_stat(shown.get("Mean"))
        param.norm = _tensor_stat(shown.get("Norm"))
        return param
    param.value = _scalar(shown.get("value"))
    dtype = shown.get("dtype")
    param.dtype = None if dtype in (None, "null") else dtype
    param.shape = _shape(shown.get("shape"))
    param.max = _scalar(shown.get("Max"))
    param.min = _scalar(shown.get("Min"))
    param.mean = _scalar(shown.get("Mean"))
    param.norm = _scalar(shown.get("Norm"))
    return param


def stored_entries(
    node_name: str, input_data: dict[str, Any], output_data: dict[str, Any]
) -> Iterator[tuple[str, str, Role, dict[str, Any]]]:
    """(full name, key, role, stored dict) of each of a node's parameters in stored order:
    inputs (and parameters) first, then outputs."""
    for in_output, data in ((False, input_data), (True, output_data)):
        for full_name, shown in data.items():
            if isinstance(shown, dict):
                key = short_key(node_name, full_name)
                yield full_name, key, role_of(node_name, key, in_output), shown


def params_from_display(
    node_name: str, input_data: dict[str, Any], output_data: dict[str, Any]
) -> list[Param]:
    """A node's parameters in stored order: inputs (and parameters) first, then outputs."""
    return [
        param_from_display(key, role, shown)
        for _name, key, role, shown in stored_entries(node_name, input_data, output_data)
    ]


def split_fields(shown: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the parameter's own fields, the comparison fields the builder merged in)."""
    own: dict[str, Any] = {}
    comparison: dict[str, Any] = {}
    for name, value in shown.items():
        (comparison if name in COMPARISON_FIELDS else own)[name] = value
    return own, comparison
