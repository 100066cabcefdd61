"""msprobe's display strings (input_data / output_data), by each renderer: Python and compiled.

Every cell against msprobe's own files is checked in tests/integration; these pin each rule
on hand-made parameters, and Python's float formatting on many values, for both renderers
(test_display_both.py holds their text equal on every fixture).
"""

from __future__ import annotations

import json
import math
import random
import struct
import sys
from typing import Any

import pytest
from display_support import RENDERERS, renderer_named

from graphboard.compare.result import DataMode, Level, NodeComparison, ParamRow
from graphboard.dump.records import Param, Role
from graphboard.store import display
from graphboard.store.display import node_display, node_display_json

NODE = "Torch.mm.0.forward"


@pytest.fixture(autouse=True, params=RENDERERS)
def renderer(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test here runs with each renderer behind node_display."""
    monkeypatch.setattr(display, "_render_node", renderer_named(request.param))


def tensor(key: str = "input.0", **fields: Any) -> Param:
    role = Role.OUTPUT if key.startswith("output") else Role.INPUT
    values: dict[str, Any] = {
        "type": "torch.Tensor",
        "dtype": "torch.float32",
        "shape": (2, 3),
        "max": 1.5,
        "min": -0.25,
        "mean": 0.1,
        "norm": 2.0,
        "requires_grad": False,
        "is_tensor": True,
    }
    values.update(fields)
    return Param(key, role, **values)


Shown = dict[str, dict[str, str]]


def shown(
    params: list[Param], mode: DataMode | None = None, rows: list[ParamRow] | None = None
) -> tuple[Shown, Shown]:
    comparison = NodeComparison(rows, Level.PASS) if rows is not None else None
    return node_display(params, NODE, mode, comparison)


def floats_shown(values: list[float]) -> list[str]:
    """Many floats in one call: as the extra fields of one leaf."""
    param = tensor(extra={f"v{index}": value for index, value in enumerate(values)})
    inputs, _ = shown([param])
    cells = inputs[f"{NODE}.input.0"]
    return [cells[f"v{index}"] for index in range(len(values))]


def test_a_tensor_shows_msprobes_fields_in_msprobes_order() -> None:
    inputs, outputs = shown(
        [tensor(), tensor("output.0", data_name="Torch.mm.0.forward.output.0.pt")]
    )
    assert inputs == {
        f"{NODE}.input.0": {
            "type": "torch.Tensor",
            "dtype": "torch.float32",
            "shape": "[2, 3]",
            "Max": "1.5",
            "Min": "-0.25",
            "Mean": "0.1",
            "Norm": "2.0",
            "requires_grad": "False",
            "data_name": "-1",
        }
    }
    assert list(inputs[f"{NODE}.input.0"]) == [
        "type", "dtype", "shape", "Max", "Min", "Mean", "Norm", "requires_grad", "data_name"
    ]  # fmt: skip
    assert outputs[f"{NODE}.output.0"]["data_name"] == "Torch.mm.0.forward.output.0.pt"


def test_the_json_is_compact_like_the_rest_of_the_file() -> None:
    inputs, outputs = node_display_json([tensor(shape=())], NODE, None)
    assert inputs == (
        '{"Torch.mm.0.forward.input.0":{"type":"torch.Tensor","dtype":"torch.float32",'
        '"shape":"[]","Max":"1.5","Min":"-0.25","Mean":"0.1","Norm":"2.0",'
        '"requires_grad":"False","data_name":"-1"}}'
    )
    assert outputs == "{}"
    assert node_display_json(None, NODE, None) == ("{}", "{}")
    assert node_display_json([], NODE, DataMode.SUMMARY) == ("{}", "{}")


def test_integer_statistics_and_odd_values() -> None:
    param = tensor(max=7, min=0, mean=None, norm="inf", requires_grad=None, shape=None)
    cells = shown([param])[0][f"{NODE}.input.0"]
    assert (cells["Max"], cells["Min"], cells["Mean"], cells["Norm"]) == ("7", "0", "null", "inf")
    assert cells["requires_grad"] == "null" and cells["shape"] == "null"


def test_a_masked_leaf_is_only_a_null_value_and_is_never_scored() -> None:
    masked = Param("input.1", Role.INPUT)
    row = ParamRow(masked, masked, metrics={"Max diff": 0.0})
    assert shown([masked], DataMode.SUMMARY, [row])[0] == {f"{NODE}.input.1": {"value": "null"}}


def test_a_scalar_shows_its_value_in_every_statistic_and_its_crc_in_md5_mode() -> None:
    scalar = Param(
        "input.1", Role.INPUT, type="int", dtype="<class 'int'>", shape=(), max=1, min=1,
        mean=1, norm=1, value=1,
    )  # fmt: skip
    cells = shown([scalar])[0][f"{NODE}.input.1"]
    assert cells == {
        "type": "int",
        "value": "1",
        "data_name": "-1",
        "requires_grad": "null",
        "Max": "1",
        "Min": "1",
        "Mean": "1",
        "Norm": "1",
        "dtype": "<class int>",  # quotes dropped, as msprobe does
        "shape": "[]",
    }
    md5 = shown([scalar], DataMode.MD5)[0][f"{NODE}.input.1"]
    assert list(md5)[-1] == "md5" and md5["md5"] == "83dcefb7"  # CRC-32 of "1"


def test_a_tensors_md5_is_shown_only_in_md5_mode() -> None:
    param = tensor(md5="0a1b2c3d")
    assert "md5" not in shown([param])[0][f"{NODE}.input.0"]
    cells = shown([param], DataMode.MD5)[0][f"{NODE}.input.0"]
    assert list(cells)[-2:] == ["md5", "data_name"] and cells["md5"] == "0a1b2c3d"


def test_a_process_group_shows_its_ranks_and_id_only() -> None:
    group = Param(
        "input.group", Role.INPUT, type="torch.ProcessGroup",
        extra={"group_ranks": [0, 1], "group_id": 7, "other": "x"},
    )  # fmt: skip
    assert shown([group])[0][f"{NODE}.input.group"] == {
        "type": "torch.ProcessGroup",
        "group_ranks": "[0, 1]",
        "group_id": "7",
        "data_name": "-1",
    }


def test_extra_fields_follow_and_never_replace_the_leafs_own() -> None:
    param = tensor(extra={"op": "isend", "dtype": "ignored", "peer": None})
    cells = shown([param])[0][f"{NODE}.input.0"]
    assert cells["dtype"] == "torch.float32"
    assert list(cells)[-2:] == ["op", "peer"] and cells["peer"] == "null"


def test_statistics_mode_rows_add_differences_percentages_and_the_verdict() -> None:
    param = tensor()
    row = ParamRow(
        param,
        tensor(),
        metrics={
            "Max diff": 1e-05,
            "Min diff": 0,
            "Mean diff": "N/A",
            "MaxRelativeErr": 0.001234567891,  # 0.1234567891% -> 6 decimals
            "MinRelativeErr": 0.5,  # 50.0%
            "MeanRelativeErr": 1e-09,  # an exponent is never rounded
            "NormRelativeErr": -0.25,  # nor a negative
        },
        level=Level.WARNING,
        messages=["warning: 'quoted' \u00e9"],
    )
    cells = shown([param], DataMode.SUMMARY, [row])[0][f"{NODE}.input.0"]
    assert list(cells)[9:] == [
        "Max diff", "Min diff", "Mean diff", "L2norm diff", "MaxRelativeErr", "MinRelativeErr",
        "MeanRelativeErr", "NormRelativeErr", "Requires_grad Consistent", "Result", "Err_message",
    ]  # fmt: skip
    assert cells["Max diff"] == "1e-05" and cells["Min diff"] == "0"
    assert cells["Mean diff"] == "N/A" and cells["L2norm diff"] == "N/A"  # missing: N/A
    assert cells["MaxRelativeErr"] == "0.123457%"
    assert cells["MinRelativeErr"] == "50.0%"
    assert cells["MeanRelativeErr"] == repr(1e-09 * 100) + "%" == "1.0000000000000001e-07%"
    assert cells["NormRelativeErr"] == "-25.0%"
    assert cells["Result"] == "warning" and cells["Requires_grad Consistent"] == "True"
    assert cells["Err_message"] == json.dumps(row.messages)  # ASCII-escaped, as msprobe


def test_md5_and_tensor_modes_order_their_fields_as_msprobe() -> None:
    param = tensor()
    row = ParamRow(param, tensor(), metrics={"Cosine": 0.99999, "EucDist": 1e-07})
    md5 = shown([param], DataMode.MD5, [row])[0][f"{NODE}.input.0"]
    assert list(md5)[-3:] == ["Result", "Requires_grad Consistent", "Err_message"]
    cells = shown([param], DataMode.TENSOR, [row])[0][f"{NODE}.input.0"]
    assert list(cells)[-9:] == [
        "Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr", "One Thousandth Err Ratio",
        "Five Thousandths Err Ratio", "Requires_grad Consistent", "Result", "Err_message",
    ]  # fmt: skip
    assert (cells["Cosine"], cells["EucDist"], cells["MaxAbsErr"]) == (
        "0.99999",
        "1e-07",
        "unsupported",
    )
    structure = shown([param], DataMode.STRUCTURE, [row])[0][f"{NODE}.input.0"]
    assert "Result" not in structure


def test_a_row_field_replaces_an_extra_field_of_the_same_name_in_place() -> None:
    param = tensor(extra={"Result": "stale", "op": "x"})
    cells = shown([param], DataMode.MD5, [ParamRow(param, tensor(), level=Level.ERROR)])[0]
    cells = cells[f"{NODE}.input.0"]
    assert cells["Result"] == "error"
    assert list(cells).index("Result") < list(cells).index("op")


def test_a_repeated_parameter_name_keeps_its_first_place_and_last_value() -> None:
    first, other, again = tensor(max=1.0), tensor("input.1"), tensor(max=2.0)
    inputs, _ = shown([first, other, again])
    assert list(inputs) == [f"{NODE}.input.0", f"{NODE}.input.1"]
    assert inputs[f"{NODE}.input.0"]["Max"] == "2.0"


def test_names_and_text_are_escaped() -> None:
    odd = 'a"b\\c\n\x01\u00e9\u4e2d'
    param = tensor(key=f"input.{odd}", dtype=odd, data_name=odd)
    inputs_json, _ = node_display_json([param], odd, None)
    inputs = json.loads(inputs_json)
    cells = inputs[f"{odd}.input.{odd}"]
    assert cells["data_name"] == odd
    assert cells["dtype"] == odd.replace("'", "")
    assert "\\u0001" in inputs_json and "\u00e9" in inputs_json  # escaped as orjson does


def _random_doubles(count: int) -> list[float]:
    generator = random.Random(1234)
    values: list[float] = []
    while len(values) < count:
        value = struct.unpack("<d", generator.getrandbits(64).to_bytes(8, "little"))[0]
        if math.isfinite(value):
            values.append(value)
    return values


EDGES = [
    0.0, -0.0, 1.0, -1.0, 0.1, 0.2 + 0.1, 1 / 3, 5e-324, -5e-324, 2.2250738585072014e-308,
    sys.float_info.max, -sys.float_info.max, 1e-4, 9.999999999999999e-05, 1e-5, 1e15, 1e16,
    9999999999999998.0, 1e17, 123456789012345678.0, 1e22, 1e23, 0.001, 100.0, 1234.5,
    math.inf, -math.inf, math.nan, 2.0**53, 2.0**-1074, 7.0e-10, 4.35,
]  # fmt: skip


@pytest.mark.parametrize("values", [EDGES, _random_doubles(20_000)], ids=["edges", "random"])
def test_floats_are_shown_exactly_as_pythons_repr(values: list[float]) -> None:
    assert floats_shown(values) == [repr(value) for value in values]


def _python_percent(fraction: float) -> str:
    """The rule, written plainly: repr, or 6 decimals when it has more (and no exponent)."""
    text = repr(fraction * 100)
    point = text.find(".")
    if point < 0 or "e" in text or len(text) - point - 1 <= 6 or text[0] == "-":
        return text + "%"
    return f"{fraction * 100:.6f}%"


def test_relative_errors_are_percentages_rounded_as_msprobe_rounds_them() -> None:
    fractions = [abs(value) % 10 for value in _random_doubles(3000)] + [
        0.001234567891, 0.5, 1e-9, 1e-3, 0.123456789, 123.456789012, 0.0, math.inf, math.nan,
        1e300, -0.5,
    ]  # fmt: skip
    param = tensor()
    for fraction in fractions:
        row = ParamRow(param, tensor(), metrics={"MaxRelativeErr": fraction})
        cells = shown([param], DataMode.SUMMARY, [row])[0][f"{NODE}.input.0"]
        assert cells["MaxRelativeErr"] == _python_percent(fraction), fraction
