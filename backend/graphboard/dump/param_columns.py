"""A side's Params as one column per field, the form in which they cross between processes.

A compare may read its two sides in two tasks, and a task's result is pickled. Params pickled
as they are go one by one through their dataclass state; as columns, pickle writes one list
per field and each string the Params share (keys and dtypes: parsing interns them) once,
referring back to it after. The receiver builds the Params with one ``map`` over the columns,
interning the keys and sharing the shapes with its own parses, as parsing does.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from itertools import accumulate
from operator import attrgetter
from typing import Any

from graphboard.dump.records import Param, shared_shape

# record names, each record's Param count, then one list per Param field (in field order)
ParamColumns = tuple[list[str], list[int], list[list[Any]]]

_FIELDS = Param.__slots__
_READERS = [attrgetter(field) for field in _FIELDS]
_KEY, _SHAPE = _FIELDS.index("key"), _FIELDS.index("shape")


def params_to_columns(params: dict[str, list[Param]]) -> ParamColumns:
    flat = [param for record in params.values() for param in record]
    counts = [len(record) for record in params.values()]
    return list(params), counts, [list(map(read, flat)) for read in _READERS]


def params_from_columns(columns: ParamColumns) -> dict[str, list[Param]]:
    """The dict ``params_to_columns`` was given."""
    names, counts, fields = columns
    shapes = fields[_SHAPE]
    shared = {shape: shared_shape(shape) for shape in set(shapes) if shape is not None}
    values: list[Iterable[Any]] = list(fields)
    values[_KEY] = map(sys.intern, fields[_KEY])
    values[_SHAPE] = map(shared.get, shapes)  # None stays None
    flat = list(map(Param, *values))
    params: dict[str, list[Param]] = {}
    start = 0
    for name, end in zip(names, accumulate(counts), strict=True):
        params[name] = flat[start:end]
        start = end
    return params
