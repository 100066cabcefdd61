"""The compiled hot path of parse_record (_records.c) must build exactly the Params the
Python rules build: same fields, same types (1, 1.0 and True are equal but not the same
statistic), same order, for every record of the real dumps and for the odd leaves."""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path
from typing import Any

import pytest

from fixture_cases import FIXTURES, fixture_path
from graphboard.accel import _records
from graphboard.dump.jsonio import DumpFile
from graphboard.dump.records import (
    Param,
    Role,
    _shapes,
    parse_record,
    parse_record_in_python,
    text_statistics,
    text_statistics_read,
)
from graphboard.dump.repeats import (
    count_keys,
    count_keys_in_python,
    count_line_starts,
    count_line_starts_in_python,
)
from graphboard.graph.builder import DumpRecords


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
    """The same Params, and the same count of statistics read as text (which is how many
    text statistics the Params hold)."""
    before = text_statistics_read()
    compiled = parse_record(name, record, path)
    texts = text_statistics_read() - before
    assert _strict(compiled) == _strict(parse_record_in_python(name, record, path)), name
    assert text_statistics_read() - before == 2 * texts, name
    assert texts == sum(len(text_statistics(param)) for param in compiled), name
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


# ---- handing records to another process (pack_params / unpack_params) -------------------


def _round_trip(params: dict[str, list[Param]]) -> dict[str, list[Param]]:
    back = _records.unpack_params(_records.pack_params(params))
    assert list(back) == list(params)
    for name, values in params.items():
        assert _strict(back[name]) == _strict(values), name
        for before, after in zip(values, back[name], strict=True):
            assert after.role is before.role
            if after.shape is not None:  # one tuple per distinct shape, as parsing keeps them
                assert _shapes[after.shape] is after.shape
            assert sys.intern(after.key) is after.key
    return back


def test_every_real_dump_is_handed_over_exactly() -> None:
    fixture_path()  # skips without ../shared
    for path in sorted(FIXTURES.rglob("dump.json")):
        records = DumpRecords(path)
        _round_trip(records.params)
        back = pickle.loads(pickle.dumps(records, protocol=pickle.HIGHEST_PROTOCOL))
        assert (back.task, back.level, back.framework, back.dump_data_dir, back.has_md5) == (
            records.task,
            records.level,
            records.framework,
            records.dump_data_dir,
            records.has_md5,
        )
        assert back.batch_p2p == records.batch_p2p
        assert _strict([p for ps in back.params.values() for p in ps]) == _strict(
            [p for ps in records.params.values() for p in ps]
        )


def test_odd_values_are_handed_over_exactly(tmp_path: Path) -> None:
    odd = [
        Param("input.0", Role.INPUT, value=2**70, extra={"group_ranks": [0, 1], "op": None}),
        Param("input.1", Role.INPUT, "int", "<class 'int'>", (), -(2**63), 2**63 - 1, 0, -1),
        Param("output.0", Role.OUTPUT, max=float("nan"), min=float("-inf"), mean="文字", norm=""),
        Param("weight", Role.PARAMETERS_GRAD, shape=(2, None, 3), value=[1.5, "x", [True]]),
        Param("input.2", Role.INPUT, value=(1, (2, "a")), requires_grad=False, is_tensor=True),
    ]
    params = {"Module.m.M.forward.0": odd, "Functional.relu.0.forward": [], "文字": odd[:1]}
    for record in (
        {"input_args": [_tensor(Max=1.5, Min=-1, Mean=0.0, Norm=True, md5="ab", group_ranks=[0])]},
        {"input_args": [None, 3, "text", {"type": "slice", "value": [1, 2, None]}]},
    ):
        params[f"Module.r{len(params)}.forward.0"] = parse_record("r", record, tmp_path)
    back = _round_trip(params)
    assert back["Module.m.M.forward.0"][0].value == 2**70


def test_a_damaged_pack_is_an_error_not_a_crash() -> None:
    packed = _records.pack_params(
        {"a": [Param("input.0", Role.INPUT, "t", "d", (1,), 1.0, 2, "x", None)], "b": []}
    )
    for end in range(len(packed)):
        with pytest.raises(ValueError, match="packed Params"):
            _records.unpack_params(packed[:end])
    with pytest.raises(ValueError, match="packed Params"):
        _records.unpack_params(packed + b"\x00")
    with pytest.raises(TypeError, match="expected a list"):
        _records.pack_params({"a": (Param("k", Role.INPUT),)})


# ---- counting keys and line starts (repeats.py's cheap tests for repeated keys) ----------


def test_keys_and_line_starts_count_the_same_in_every_real_dump_file() -> None:
    fixture_path()  # skips without ../shared
    files = sorted(FIXTURES.rglob("*.json"))
    assert len(files) >= 24
    for path in files:
        text = path.read_bytes()
        for prefix in (b' "', b'  "', b"  }", b""):
            expected = count_line_starts_in_python(text, prefix)
            assert count_line_starts(text, prefix) == expected, (path, prefix)
        compact = json.dumps(json.loads(text)).encode()
        for depth in (0, 1, 2, 3):
            for layout in (text, compact):
                assert count_keys(layout, depth) == count_keys_in_python(layout, depth), path
        if path.name == "dump.json":  # every record name, in both layouts
            records = len(json.loads(text)["data"])
            assert count_keys(text, 2) == count_keys(compact, 2) == records, path


@pytest.mark.parametrize(
    ("text", "depth", "keys"),
    [
        (b"{}", 1, 0),
        (b'{"a": 1, "b" : {"c": [1, {"d": 2}]}}', 1, 2),
        (b'{"a": 1, "b" : {"c": [1, {"d": 2}]}}', 2, 1),
        (b'{"a": 1, "b" : {"c": [1, {"d": 2}]}}', 4, 1),  # inside a list, one level more
        (b'{"a\\"": ":", "b\\\\": "x\\\\", "c": "\\\\\\"}"}', 1, 3),  # escapes
        (b'{"x": ["a", "b:", {"k"\n\t\r :1}]}', 3, 1),  # values are not keys
        ('{"é": {"名": 1}}'.encode(), 2, 1),
        (b'{"a": NaN, "b": -Infinity}', 1, 2),
    ],
)
def test_keys_count_the_same_at_the_edges(text: bytes, depth: int, keys: int) -> None:
    assert count_keys_in_python(text, depth) == keys
    assert count_keys(text, depth) == keys


@pytest.mark.parametrize(
    ("text", "prefix"),
    [
        (b"", b'  "'),
        (b"\n", b""),
        (b'{\n  "a": 1,\n  "b": {\n   "c": 2}\n}', b'  "'),
        (b'\r\n  "a"\r\n  "b', b'  "'),  # CRLF: the prefix follows the newline
        (b'x\n  "', b'  "'),  # a prefix that ends the text
        (b"x\n  ", b'  "'),  # cut short
        (b"\n\n\n", b""),
        ("\n é\n é".encode(), " é".encode()),
    ],
)
def test_line_starts_count_the_same_at_the_edges(text: bytes, prefix: bytes) -> None:
    assert count_line_starts(text, prefix) == count_line_starts_in_python(text, prefix)


@pytest.mark.parametrize("count", [count_line_starts, count_line_starts_in_python])
def test_a_prefix_holding_a_newline_is_refused(count: Any) -> None:
    with pytest.raises(ValueError, match="the prefix holds a newline"):
        count(b"a\n\nb", b"\n")
