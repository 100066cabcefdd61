"""dump.json records flattened into typed, named parameter entries.

A record ``{"input_args": [...], "input_kwargs": {...}, "output": [...], "parameters": {...}}``
becomes entries named as msprobe names them: ``input.0``, ``input.3.1`` (nested),
``input.<kwarg>``, ``output.0``, ``parameters.weight``; a parameters_grad record
``{"weight": [leaf]}`` becomes ``weight``. The node name is not repeated in each entry
(``Param.full_name`` rebuilds it) so a million-record dump stays small in memory.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from graphboard.errors import DumpError

MAX_DEPTH = 400

Stat = float | int | str | bool | None


class Role(StrEnum):
    INPUT = "input"
    OUTPUT = "output"
    PARAMETERS = "parameters"
    PARAMETERS_GRAD = "parameters_grad"


# record key -> (role, name prefix), in the order msprobe visits them
_SECTIONS = (
    ("input_args", Role.INPUT, "input"),
    ("input_kwargs", Role.INPUT, "input"),
    ("input", Role.INPUT, "input"),
    ("output", Role.OUTPUT, "output"),
    ("parameters", Role.PARAMETERS, "parameters"),
)
# The fields a leaf record may carry; anything else is kept in Param.extra.
LEAF_FIELDS = frozenset(
    {
        "type",
        "dtype",
        "shape",
        "Max",
        "Min",
        "Mean",
        "Norm",
        "requires_grad",
        "md5",
        "data_name",
        "value",
    }
)
# A merged dump's provenance lines (msprobe's JSON export of a parallel merge), also inside
# a parameters_grad record, whose other keys are all parameter names.
MERGE_INFO = "parallel_merge_info"
_PEER_SUFFIXES = ("src", "dst", "group_src", "group_dst")
_shapes: dict[tuple[Any, ...], tuple[Any, ...]] = {}


@dataclass(slots=True)
class Param:
    key: str  # name under the node: "input.0", "output.0", "parameters.weight", "weight" (grads)
    role: Role
    type: str | None = None  # leaf "type"; None for a masked (null) leaf
    dtype: str | None = None
    shape: tuple[Any, ...] | None = None
    max: Stat = None
    min: Stat = None
    mean: Stat = None
    norm: Stat = None
    requires_grad: bool | None = None
    md5: str | None = None
    data_name: str | None = None
    value: Any = None  # the value of a non-tensor leaf
    extra: dict[str, Any] | None = None  # other leaf fields: group_ranks, group_id, op, peer ...
    is_tensor: bool = False

    def full_name(self, node_name: str) -> str:
        return f"{node_name}.{self.key}"

    @property
    def is_null(self) -> bool:
        return self.type is None and self.value is None and self.max is None and not self.extra


def is_parameters_grad(name: str) -> bool:
    if "parameters_grad" not in name:  # nearly every record: one substring search
        return False
    segments = name.rsplit(".", 2)
    return segments[-1] == "parameters_grad" or (
        len(segments) > 1 and segments[-2] == "parameters_grad"
    )


_text_statistics = 0  # see text_statistics_read


def _tensor_stat(value: Any) -> Stat:
    """Numbers, None, booleans and strings stay as they are: an integer tensor's Max of 0 stays
    0, which msprobe shows as "0" (and its differences as integers too); anything else is text.
    Text is counted (text_statistics_read): this runs only for a statistic that is no float."""
    global _text_statistics
    if value is None or isinstance(value, float | int):
        return value
    _text_statistics += 1
    return value if isinstance(value, str) else str(value)


def text_statistics_read() -> int:
    """How many tensor statistics were read as text so far (counted as they are read, at no
    cost to a number): a caller that sees the count move while it parses scans its records
    for them, and only then. Never reset, so parses in other threads can only make a caller
    scan for nothing, never miss its own."""
    return _text_statistics


STAT_FIELDS = ("Max", "Min", "Mean", "Norm")


def text_statistics(param: Param) -> list[tuple[str, str]]:
    """(field, text) of each statistic of a tensor parameter that is text, not a number."""
    if not param.is_tensor:
        return []
    stats = (param.max, param.min, param.mean, param.norm)
    return [
        (field, value)
        for field, value in zip(STAT_FIELDS, stats, strict=True)
        if isinstance(value, str)
    ]


def text_statistics_warning(path: Path, records: dict[str, list[Param]]) -> str | None:
    """One line for a file whose tensor statistics include text: how many, and the first."""
    count = 0
    first = ""
    for name, params in records.items():
        for param in params:
            found = text_statistics(param)
            if found and not first:
                field, value = found[0]
                first = f"the first in record {name!r}: {param.key} {field} {value!r}"
            count += len(found)
    if not count:
        return None
    many = "statistics are" if count > 1 else "statistic is"
    return (
        f"{path}: {count} tensor {many} not numbers (scored as warnings where msprobe passes"
        f" them), {first}"
    )


def shared_shape(shape: tuple[Any, ...]) -> tuple[Any, ...]:
    """The one tuple kept for this shape: a dump holds a few hundred for a million Params."""
    return _shapes.setdefault(shape, shape)


def _shape(value: Any) -> tuple[Any, ...] | None:
    if value is None:
        return None
    return shared_shape(tuple(value) if isinstance(value, list) else (value,))


def _scalar_dtype(value: Any) -> str:
    return sys.intern(f"<class '{type(value).__name__}'>")  # as a tensor's dtype (_leaf)


def _leaf(key: str, role: Role, leaf: dict[str, Any]) -> Param:
    extra = (
        None
        if LEAF_FIELDS.issuperset(leaf)
        else {k: v for k, v in leaf.items() if k not in LEAF_FIELDS}
    )
    if "dtype" in leaf or "shape" in leaf:  # a tensor: the hot path, built in one call
        dtype, kind = leaf.get("dtype"), leaf.get("type")
        maximum, minimum, mean, norm = (
            leaf.get("Max"),
            leaf.get("Min"),
            leaf.get("Mean"),
            leaf.get("Norm"),
        )
        return Param(
            sys.intern(key),
            role,
            # interned as the dtype: a million tensors share a few strings, not one each
            sys.intern(kind) if kind.__class__ is str else kind,
            sys.intern(dtype) if dtype.__class__ is str else dtype,
            _shape(leaf.get("shape")),
            # floats (almost always) as they are; the rest through _tensor_stat
            maximum if maximum.__class__ is float else _tensor_stat(maximum),
            minimum if minimum.__class__ is float else _tensor_stat(minimum),
            mean if mean.__class__ is float else _tensor_stat(mean),
            norm if norm.__class__ is float else _tensor_stat(norm),
            leaf.get("requires_grad"),
            leaf.get("md5"),
            leaf.get("data_name"),
            None,
            extra,
            True,
        )
    kind = leaf.get("type", leaf.get("class_type"))
    param = Param(
        sys.intern(key),
        role,
        type=sys.intern(kind) if isinstance(kind, str) else None,
        requires_grad=leaf.get("requires_grad"),
        md5=leaf.get("md5"),
        data_name=leaf.get("data_name"),
        extra=extra,
    )
    value = leaf.get("value")
    param.value = value
    last = key.rsplit(".", 1)[-1]
    stat: Stat
    if extra and "group_ranks" in extra:  # a process group
        stat = str(extra["group_ranks"])
        param.shape, param.md5 = (), stat
    elif last in _PEER_SUFFIXES:
        stat = str(value)
        param.dtype, param.shape, param.md5 = param.type, (), stat
    elif kind == "torch.Size":
        param.dtype, param.shape, stat = kind, _shape(value), None
    elif kind == "slice":
        param.dtype, param.shape, stat = kind, (len(value) if isinstance(value, list) else 0,), None
    elif kind == "ellipsis":
        param.shape, stat = (), value
    else:
        param.dtype, param.shape = _scalar_dtype(value), ()
        stat = value if isinstance(value, int | float | str | bool) or value is None else str(value)
    param.max = param.min = param.mean = param.norm = stat
    return param


def _flatten(
    value: Any,
    key: str,
    role: Role,
    out: list[Param],
    depth: int,
    grad: bool,
    path: Path,
    node: str,
) -> None:
    if depth > MAX_DEPTH:
        raise DumpError(path, f"nesting deeper than {MAX_DEPTH} levels", record=node)
    if value is None:
        out.append(Param(sys.intern(key), role))
    elif isinstance(value, dict):
        if isinstance(value.get("type"), str) or isinstance(value.get("class_type"), str):
            out.append(_leaf(key, role, value))
        else:
            for name, item in value.items():
                _flatten(item, f"{key}.{name}", role, out, depth + 1, grad, path, node)
    elif isinstance(value, list | tuple):
        if grad and len(value) == 1:  # msprobe appends no index inside parameters_grad
            _flatten(value[0], key, role, out, depth + 1, grad, path, node)
        else:
            for index, item in enumerate(value):
                _flatten(item, f"{key}.{index}", role, out, depth + 1, grad, path, node)
    else:  # a bare scalar where msprobe would write {"type": ..., "value": ...}
        out.append(_leaf(key, role, {"type": type(value).__name__, "value": value}))


def parse_record(name: str, record: Any, path: Path) -> list[Param]:
    """Flatten one dump.json record; input entries first, then output, then parameters."""
    if not isinstance(record, dict):
        raise DumpError(
            path,
            f"record is a JSON {type(record).__name__}",
            record=name,
            expected="an object with input_args / input_kwargs / output / parameters",
        )
    params: list[Param] = []
    if is_parameters_grad(name):
        for grad_name, value in record.items():
            if grad_name == MERGE_INFO:
                continue
            _flatten(value, grad_name, Role.PARAMETERS_GRAD, params, 1, True, path, name)
        return params
    for section, role, prefix in _SECTIONS:
        value = record.get(section)
        if value is None:
            continue
        if isinstance(value, list):
            items: Any = enumerate(value)
        elif isinstance(value, dict):
            items = value.items()
        else:
            raise DumpError(
                path,
                f'"{section}" is a JSON {type(value).__name__}',
                record=name,
                expected="a list or an object",
            )
        for item_key, item in items:
            key = f"{prefix}.{item_key}"
            if item.__class__ is dict and item.get("type").__class__ is str:
                params.append(_leaf(key, role, item))  # the common case: a leaf, no recursion
            else:
                _flatten(item, key, role, params, 1, False, path, name)
    return params


def batch_p2p_ops(record: Any) -> list[dict[str, Any]]:
    """The {op, peer, group_id} of each op of a batch_isend_irecv record, in order."""
    if not isinstance(record, dict):
        return []
    output = record.get("output")
    if not (isinstance(output, list) and output and isinstance(output[0], list)):
        return []
    return [
        {"op": item.get("op"), "peer": item.get("peer"), "group_id": item.get("group_id")}
        for item in output[0]
        if isinstance(item, dict)
    ]
