"""The Python renderer and the compiled one give the same text, byte for byte.

Every node of every shared msprobe fixture (builds and compares, in each data mode the dumps
have) is rendered by both, and again in every other mode with the same rows, so each rule
meets real parameters in each mode; then hand-made parameters for the edges the fixtures do
not reach. Nothing here is skipped when the extension is built.
"""

from __future__ import annotations

import math
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from display_support import PYTHON, compiled_or_skip

from fixture_cases import fixture_path
from graphboard.cli import graph_build_main
from graphboard.compare.metrics import SUMMARY_METRIC_NAMES, TENSOR_METRIC_NAMES
from graphboard.compare.result import Level, ParamRow
from graphboard.dump.records import Param, Role
from graphboard.store import display, display_render
from graphboard.store.display import Renderer

MODES = NONE, S, M, T = (
    display_render.MODE_NONE,
    display_render.MODE_SUMMARY,
    display_render.MODE_MD5,
    display_render.MODE_TENSOR,
)
# (case, graph_build's arguments in the case folder, the mode the build renders in)
FIXTURE_CASES: list[tuple[str, list[str], int]] = [
    ("convnet-stats", ["-tp", "target", "-gp", "golden"], S),
    ("convnet-stats", ["-tp", "target", "-gp", "golden", "-oc"], S),
    ("convnet-stats", ["-tp", "golden"], NONE),
    ("convnet-md5", ["-tp", "target", "-gp", "golden"], M),
    ("convnet-tensor", ["-tp", "target", "-gp", "golden"], T),
    ("convnet-overflow", ["-tp", "target", "-oc"], NONE),
    ("convnet-ddp2", ["-tp", "target", "-gp", "golden"], S),
    ("layer-mapping", ["-tp", "target", "-gp", "golden"], S),
    ("layer-mapping", ["-tp", "target", "-gp", "golden", "-lm", "mapping.yaml"], S),
    ("msprobe-resnet50-gpu", ["-tp", "step1"], NONE),
    ("msprobe-resnet50-gpu", ["-tp", "step1", "-gp", "step0"], S),
]
IN_CASE_FOLDER = {"-tp", "-gp", "-lm"}  # the options whose value is a path in the case


def _case_id(case: tuple[str, list[str], int]) -> str:
    return " ".join([case[0], *case[1]])


class Both:
    """Stands in for the renderer during a build: renders each node with both, in every mode,
    and keeps what differs; the build gets the Python's text."""

    def __init__(self, compiled: Renderer) -> None:
        self.compiled = compiled
        self.modes: list[int] = []
        self.differing: list[tuple[str, int, tuple[str, str], tuple[str, str]]] = []

    def __call__(self, params: Any, node_name: str, mode: int, rows: Any) -> tuple[str, str]:
        self.modes.append(mode)
        for other in MODES:
            python = PYTHON(params, node_name, other, rows)
            compiled = self.compiled(params, node_name, other, rows)
            if python != compiled:
                self.differing.append((node_name, other, python, compiled))
        return PYTHON(params, node_name, mode, rows)


@pytest.mark.parametrize("case", FIXTURE_CASES, ids=[_case_id(case) for case in FIXTURE_CASES])
def test_every_fixture_node_renders_the_same_both_ways(
    case: tuple[str, list[str], int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, arguments, mode = case
    root = fixture_path(name)
    argv = [
        str(root / argument) if option in IN_CASE_FOLDER else argument
        for option, argument in zip(["", *arguments], arguments, strict=False)
    ]
    both = Both(compiled_or_skip())
    monkeypatch.setattr(display, "_render_node", both)
    # every task in this process, where the stand-in renders
    argv += ["-o", str(tmp_path), "--name", "both.vis.db", "--workers", "1", "-q"]
    assert graph_build_main(argv) == 0
    assert not both.differing, (
        f"{len(both.differing)} renders differ, the first: {both.differing[0]}"
    )
    with sqlite3.connect(tmp_path / "both.vis.db") as conn:
        (nodes,) = conn.execute("SELECT count(*) FROM tb_nodes").fetchone()
    assert len(both.modes) == nodes  # every row's text came through both
    assert set(both.modes) == {mode}


NODE = "Torch.mm.0.forward"


def _tensor(key: str = "input.0", **fields: Any) -> Param:
    values: dict[str, Any] = {
        "type": "torch.Tensor",
        "dtype": "torch.float16",
        "shape": (4, 1),
        "max": 1.0,
        "min": 0.0,
        "mean": 0.5,
        "norm": 2.0,
        "requires_grad": True,
        "is_tensor": True,
    }
    values.update(fields)
    return Param(key, Role.OUTPUT if key.startswith("output") else Role.INPUT, **values)


FLOATS = [
    1e16, 1e16 - 2, 9999999999999998.0, 1e-4, 9.999999999999999e-05, 0.1, 0.1 + 0.2, -0.0, 0.0,
    math.nan, math.inf, -math.inf, 5e-324, sys.float_info.max, 123456.7890123, 1 / 3, 2.0**63,
]  # fmt: skip
VALUES: list[Any] = [
    *FLOATS, 0, 1, -7, 2**70, True, False, None, "", " ", "None", "'quoted'", "0.12345678",
    "12.3456789%", "1.5", "a\"b\\c\n\t\x00\x7f\u00e9\u4e2d", [1, 2], (3,), {"k": 1},
]  # fmt: skip
FRACTIONS = [
    0.001234567891, -0.001234567891, 0.5, 1e-9, 0.0, -0.25, math.nan, math.inf, 1e300, 0.123456789, 1 / 7, 3,
    "N/A", None,
]  # fmt: skip


def _hand_made() -> list[tuple[list[Param], list[ParamRow] | None]]:
    cases: list[tuple[list[Param], list[ParamRow] | None]] = []
    # every value in every statistic, the value, dtype and extra fields of each kind of leaf
    for value in VALUES:
        stats = {"max": value, "min": value, "mean": value, "norm": value}
        scalar = Param(
            "input.1", Role.INPUT, type="int", dtype=value, shape=(), value=value, **stats
        )
        leaf_extra = Param("input.2", Role.INPUT, type="slice", value=value, extra={"x": value})
        cases.append(([_tensor(**stats, dtype=value, data_name=value), scalar, leaf_extra], None))
    shapes: list[Any] = [None, (), (1,), (2, 2048, -3), (2**70, "a", True), (1.5,)]
    cases.append(
        ([_tensor(f"input.{index}", shape=shape) for index, shape in enumerate(shapes)], None)
    )
    for flag in (True, False, None, 1, 0, 1.0, "yes"):
        cases.append(([_tensor(requires_grad=flag), Param("input.1", Role.INPUT, type="bool", value=flag, requires_grad=flag)], None))  # fmt: skip
    masked = Param("input.3", Role.INPUT)
    group = Param(
        "input.group", Role.INPUT, type="torch.ProcessGroup",
        extra={"group_ranks": [0, 1], "group_id": 7, "other": "x"},
    )  # fmt: skip
    group_without_id = Param("input.g2", Role.INPUT, type="torch.ProcessGroup", extra={"group_ranks": (2,)})  # fmt: skip
    md5_scalar = Param("input.4", Role.INPUT, type="float", value=0.1, md5=None)
    md5_tensor = _tensor("output.0", md5="0a1b2c3d", data_name="out.pt")
    extra = _tensor("input.5", extra={"op": "isend", "dtype": "x", "Result": "stale", "peer": None})
    repeated = [_tensor(max=1.0), _tensor("input.1"), _tensor(max=2.0)]
    params = [masked, group, group_without_id, md5_scalar, md5_tensor, extra, *repeated]
    cases.append((params, None))
    for fraction in FRACTIONS:
        metrics: dict[str, Any] = {
            name: fraction for name in (*SUMMARY_METRIC_NAMES, *TENSOR_METRIC_NAMES)
        }  # fmt: skip
        rows = [
            ParamRow(extra, _tensor(), metrics=metrics, level=Level.ERROR, messages=["é 'x'", "b"]),
            ParamRow(md5_tensor, None, metrics={}, level=Level.WARNING, requires_grad_consistent=False),
            ParamRow(masked, masked, metrics=metrics),
            ParamRow(md5_scalar, md5_scalar, metrics={"Max diff": fraction}),
            ParamRow(None, group, metrics=metrics),
            ParamRow(repeated[0], repeated[0], metrics=metrics),
        ]  # fmt: skip
        cases.append((params, rows))
    return cases


HAND_MADE = _hand_made()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("index", range(len(HAND_MADE)))
def test_hand_made_edges_render_the_same_both_ways(index: int, mode: int) -> None:
    compiled = compiled_or_skip()
    params, rows = HAND_MADE[index]
    for name in (NODE, 'odd "node"\n\u00e9'):
        assert PYTHON(params, name, mode, rows) == compiled(params, name, mode, rows)


def test_nothing_to_render_is_two_empty_objects_both_ways() -> None:
    compiled = compiled_or_skip()
    for renderer in (PYTHON, compiled):
        assert renderer(None, NODE, 1, None) == ("{}", "{}")
        assert renderer([], NODE, 2, []) == ("{}", "{}")


def test_bad_parameters_are_refused_by_both() -> None:
    compiled = compiled_or_skip()
    bad = [
        [_tensor(shape=[1, 2])],  # a list, not a tuple
        [_tensor(extra=["not", "a", "dict"])],  # type: ignore[arg-type]
        [Param(7, Role.INPUT, type="int", value=1)],  # type: ignore[arg-type]
    ]
    for params in bad:
        for renderer in (PYTHON, compiled):
            with pytest.raises(TypeError):
                renderer(params, NODE, 0, None)


@pytest.mark.parametrize(("pure", "python"), [("1", True), ("render", True), ("", False)])
def test_graphboard_pure_chooses_the_python_renderer(pure: str, python: bool) -> None:
    compiled_or_skip()
    check = (
        "from graphboard.store import display, display_render;"
        "print(display._render_node is display_render.render_node)"
    )
    shown = subprocess.run(
        [sys.executable, "-c", check],
        env={**os.environ, "GRAPHBOARD_PURE": pure},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert shown == str(python)
