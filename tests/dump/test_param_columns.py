"""A side's records handed to another process (DumpRecords pickled, its Params as columns)
come back exactly: same fields, same types (1, 1.0 and True are equal but not the same
statistic), same order, each key interned and each shape shared as parsing leaves them."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

from fixture_cases import FIXTURES, fixture_path
from graphboard.dump.param_columns import params_from_columns, params_to_columns
from graphboard.dump.records import Param, Role, _shapes, parse_record
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


def _handed_over(params: dict[str, list[Param]]) -> dict[str, list[Param]]:
    columns = pickle.loads(pickle.dumps(params_to_columns(params), pickle.HIGHEST_PROTOCOL))
    back = params_from_columns(columns)
    assert list(back) == list(params)
    for name, values in params.items():
        assert _strict(back[name]) == _strict(values), name
        for after in back[name]:
            assert isinstance(after.role, Role)
            if after.shape is not None:  # one tuple per distinct shape, as parsing keeps them
                assert _shapes[after.shape] is after.shape
            assert sys.intern(after.key) is after.key
    return back


def test_every_real_dump_is_handed_over_exactly() -> None:
    fixture_path()  # skips without ../shared
    dumps = sorted(FIXTURES.rglob("dump.json"))
    assert len(dumps) >= 8
    for path in dumps:
        records = DumpRecords(path)
        _handed_over(records.params)
        back = pickle.loads(pickle.dumps(records, protocol=pickle.HIGHEST_PROTOCOL))
        assert (back.task, back.level, back.framework, back.dump_data_dir, back.has_md5) == (
            records.task,
            records.level,
            records.framework,
            records.dump_data_dir,
            records.has_md5,
        )
        assert (back.batch_p2p, back.warnings) == (records.batch_p2p, records.warnings)
        assert list(back.params) == list(records.params)
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
        {
            "input_args": [
                {
                    "type": "torch.Tensor",
                    "dtype": "torch.float32",
                    "shape": [2, 3],
                    **{"Max": 1.5, "Min": -1, "Mean": 0.0, "Norm": True, "md5": "ab"},
                    "group_ranks": [0],
                }
            ]
        },
        {"input_args": [None, 3, "text", {"type": "slice", "value": [1, 2, None]}]},
    ):
        params[f"Module.r{len(params)}.forward.0"] = parse_record("r", record, tmp_path)
    back = _handed_over(params)
    assert back["Module.m.M.forward.0"][0].value == 2**70
    assert back["Module.m.M.forward.0"][0] is not odd[0]  # new Params, not the same objects


def test_no_records_and_records_without_params_are_handed_over() -> None:
    assert _handed_over({}) == {}
    assert _handed_over({"a": [], "b": []}) == {"a": [], "b": []}


def test_a_shape_new_to_the_receiver_is_shared_from_then_on() -> None:
    shape = (7, 11, 13, 17, 19)  # no shared fixture has it
    _shapes.pop(shape, None)
    sent = [Param(f"input.{i}", Role.INPUT, shape=(7, 11, 13, 17, 19)) for i in range(3)]
    back = _handed_over({"a": sent})["a"]
    assert back[0].shape is back[1].shape is back[2].shape is _shapes[shape]
