"""A side's Params as one column per field, the form in which they cross between processes.

A compare may read its two sides in two tasks, and a task's result is pickled. Params pickled
as they are go one by one through their dataclass state; as columns, pickle writes one list
per field and each string the Params share (keys and dtypes: parsing interns them) once,
referring back to it after. The receiver builds the Params with one ``map`` over the columns,
interning the keys and sharing the shapes with its own parses, as parsing does.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from itertools import accumulate
from operator import attrgetter
from typing import Any

from graphboard.dump.records import Param, Role, shared_shape

# record names, each record's Param count, then one list per Param field (in field order)
ParamColumns = tuple[list[str], list[int], list[list[Any]]]

FIELDS: tuple[str, ...] = Param.__slots__
_READERS = [attrgetter(field) for field in FIELDS]
_KEY, _ROLE, _SHAPE = FIELDS.index("key"), FIELDS.index("role"), FIELDS.index("shape")
# Role is a StrEnum: a member and its value look up the same entry (JSON gives the value)
_ROLES = {role.value: role for role in Role}


def fields_of(params: Sequence[Param]) -> list[list[Any]]:
    """One list per Param field (``FIELDS`` order) over ``params``: the columns both a pickled
    side and a gb_params row (store/param_table.py) are made of."""
    return [list(map(read, params)) for read in _READERS]


def params_of(fields: Sequence[Sequence[Any]]) -> list[Param]:
    """The Params ``fields_of`` was given, with keys interned, roles as Role and each shape
    (a tuple, or the list JSON gives back) shared with this process's parses."""
    shapes: list[tuple[Any, ...] | None] = [
        shape if shape is None or shape.__class__ is tuple else tuple(shape)
        for shape in fields[_SHAPE]
    ]
    shared: dict[tuple[Any, ...] | None, tuple[Any, ...] | None] = {None: None}
    shared.update((shape, shared_shape(shape)) for shape in set(shapes) if shape is not None)
    values: list[Iterable[Any]] = list(fields)
    values[_KEY] = map(sys.intern, fields[_KEY])
    values[_ROLE] = map(_ROLES.__getitem__, fields[_ROLE])
    values[_SHAPE] = map(shared.__getitem__, shapes)
    return list(map(Param, *values))


def params_to_columns(params: dict[str, list[Param]]) -> ParamColumns:
    flat = [param for record in params.values() for param in record]
    counts = [len(record) for record in params.values()]
    return list(params), counts, fields_of(flat)


def params_from_columns(columns: ParamColumns) -> dict[str, list[Param]]:
    """The dict ``params_to_columns`` was given."""
    names, counts, fields = columns
    flat = params_of(fields)
    params: dict[str, list[Param]] = {}
    start = 0
    for name, end in zip(names, accumulate(counts), strict=True):
        params[name] = flat[start:end]
        start = end
    return params
