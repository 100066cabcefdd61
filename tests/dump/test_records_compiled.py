"""The compiled hot path of parse_record (_records.c) must build exactly the Params the
Python rules build: same fields, same types (1, 1.0 and True are equal but not the same
statistic), same order, for every record of the real dumps and for the odd leaves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fixture_cases import FIXTURES, fixture_path
from graphboard.dump.jsonio import DumpFile
from graphboard.dump.records import Param, Role, parse_record, parse_record_in_python


def _strict(params: list[Param]) -> list[tuple[tuple[str, str], ...]]:
    """Each field as (type name, repr): equal only if equally typed."""
    return [
        tuple(
            (type(value).__name__, repr(value))
            for value in (getattr(param, name) for name in Param.__slots__)
        )
        for param in params
    ]


def _same_both_ways(name: str, record: Any, path: Path) -> list[Param]:
    compiled = parse_record(name, record, path)
    assert _strict(compiled) == _strict(parse_record_in_python(name, record, path)), name
    return compiled


def test_every_record_of_the_real_dumps_parses_the_same(tmp_path: Path) -> None:
    fixture_path()  # skips without ../shared
    dumps = sorted(FIXTURES.rglob("dump.json"))
    assert len(dumps) >= 8
    records = 0
    for path in dumps:
        for name, record in DumpFile(path).records():
            _same_both_ways(name, record, path)
            records += 1
    assert records > 1000


def _tensor(**fields: Any) -> dict[str, Any]:
    return {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2, 3], **fields}


@pytest.mark.parametrize(
    "record",
    [
        {"input_args": [_tensor(Max=1.5, Min=-1, Mean=0.0, Norm=True)]},  # float, int, bool stats
        {
            "input_args": [_tensor(Max="inf", Min=None, Mean=[1, 2], Norm={"a": 1})]
        },  # text of others
        {
            "input_args": [
                _tensor(shape=None),
                _tensor(shape=7),
                {"type": "torch.Tensor", "shape": []},
            ]
        },
        {"input_args": [_tensor(dtype=None), {"type": "torch.Tensor", "dtype": 5}]},
        {
            "input_args": [
                _tensor(md5="abc", data_name="x.pt", requires_grad=True, group_ranks=[0, 1])
            ]
        },
        {"input_kwargs": {"alpha": _tensor(), "inplace": {"type": "bool", "value": False}}},
        {
            "input_args": [None, 3, "text", [_tensor(), [_tensor()]], {"a": _tensor()}]
        },  # to _flatten
        {
            "input_args": [
                {"type": "slice", "value": [1, 2, None]},
                {"type": "torch.Size", "value": [2]},
            ]
        },
        {
            "input_args": [
                {"type": 5, "class_type": "torch.Tensor"},
                {"type": "ellipsis", "value": "..."},
            ]
        },
        {
            "output": [_tensor(Max=float("nan"), Min=float("inf"))],
            "parameters": {"weight": _tensor()},
        },
        {"input": [_tensor()], "output": None, "input_args": []},
        {"input_args": [{"type": "torch.ProcessGroup", "group_ranks": [0, 1], "group_id": "g"}]},
        {},
    ],
)
def test_odd_leaves_parse_the_same(record: dict[str, Any], tmp_path: Path) -> None:
    params = _same_both_ways("Module.m.M.forward.0", json.loads(json.dumps(record)), tmp_path)
    assert all(isinstance(param.role, Role) for param in params)


@pytest.mark.parametrize(
    ("name", "record"),
    [
        ("Module.m.M.forward.0", {"input_args": 5}),  # the Python rules say what is wrong
        ("Module.m.M.forward.0", [1, 2]),
        ("Module.m.M.parameters_grad", {"weight": [_tensor()]}),  # gradients: Python alone
    ],
)
def test_records_the_compiled_path_declines_go_to_the_python_rules(
    name: str, record: Any, tmp_path: Path
) -> None:
    try:
        expected: Any = _strict(parse_record_in_python(name, record, tmp_path))
    except Exception as error:
        expected = repr(error)
    try:
        got: Any = _strict(parse_record(name, record, tmp_path))
    except Exception as error:
        got = repr(error)
    assert got == expected
