"""gb_params: a graphboard file's params() are the Params the builder had, field for field
(floats exactly: nan, infinities, -0.0, ints kept ints), for every shared fixture; files
without the table (msprobe's, older graphboard files) still parse their display strings."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from fixture_cases import fixture_path, reference_db
from graphboard.dump.records import Param, Role
from graphboard.graph.model import Graph
from graphboard.pipeline import BuildOptions, plan_build, run_build
from graphboard.pipeline.stages import TaskSide, hierarchy, read
from graphboard.store import param_parse, param_table
from graphboard.store.reader import GraphKey, Source, VisDb, node_data, open_vis_db, summaries

# Every shared fixture folder: (case, target, golden or None).
CASES: list[tuple[str, str, str | None]] = [
    ("convnet-stats", "target", "golden"),
    ("convnet-md5", "target", "golden"),
    ("convnet-tensor", "target", "golden"),
    ("convnet-overflow", "target", None),
    ("convnet-ddp2", "target", "golden"),
    ("layer-mapping", "target", "golden"),
    ("msprobe-resnet50-gpu", "step1", "step0"),
]


def same(left: Any, right: Any) -> bool:
    """Equal and of the same type all the way down; nan equals nan, -0.0 is not 0.0."""
    if type(left) is not type(right):
        return False
    if isinstance(left, float):
        return (math.isnan(left) and math.isnan(right)) or (
            left == right and math.copysign(1, left) == math.copysign(1, right)
        )
    if isinstance(left, list | tuple):
        return len(left) == len(right) and all(map(same, left, right))
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(same(left[k], right[k]) for k in left)
    return bool(left == right)


def assert_same_params(found: list[Param], expected: list[Param], where: str) -> None:
    assert len(found) == len(expected), where
    for got, want in zip(found, expected, strict=True):
        for field in param_table.FIELDS:
            assert same(getattr(got, field), getattr(want, field)), (
                f"{where} {want.key}.{field}: {getattr(got, field)!r} != {getattr(want, field)!r}"
            )


def _builder_graphs(options: BuildOptions) -> list[Graph]:
    graphs = []
    for task in plan_build(options).tasks:
        for side in (TaskSide.target_of(task), TaskSide.golden_of(task)):
            if side is not None:
                graphs.append(hierarchy(side, read(side.dump)))
    return graphs


def _non_finite(graphs: list[Graph]) -> int:
    return sum(
        1
        for graph in graphs
        for node in graph.nodes.values()
        for param in node.params or []
        for value in (param.max, param.min, param.mean, param.norm)
        if isinstance(value, float) and not math.isfinite(value)
    )


@pytest.mark.parametrize(("case", "target", "golden"), CASES, ids=[c[0] for c in CASES])
def test_a_graphboard_files_params_are_the_builders(
    tmp_path: Path, case: str, target: str, golden: str | None
) -> None:
    root = fixture_path(case)
    options = BuildOptions(
        target=root / target,
        golden=None if golden is None else root / golden,
        output_dir=tmp_path,
        overflow_check=golden is None,
    )
    path = run_build(options).path
    graphs = _builder_graphs(options)
    with open_vis_db(path, tmp_path / "cache") as db:
        assert db.source is Source.GRAPHBOARD
        for graph in graphs:
            key = GraphKey(graph.side, graph.step, graph.rank)
            for name, node in graph.nodes.items():
                found = node_data.params(db, key, name)
                assert found is not None, name
                assert_same_params(found, node.params or [], f"{case} {graph.graph_id} {name}")
            by_order = node_data.params_by_order(
                db, key, [node.order for node in graph.nodes.values()]
            )
            assert len(by_order) == len(graph.nodes)
            for node in graph.nodes.values():
                assert_same_params(by_order[node.order], node.params or [], node.name)
            assert node_data.params(db, key, "no such node") is None
    if case == "convnet-overflow":  # the case holding infinities and NaN statistics
        assert _non_finite(graphs)


def test_values_json_cannot_hold_come_back_exactly() -> None:
    params = [
        Param(
            "output.0",
            Role.OUTPUT,
            "torch.Tensor",
            "torch.float32",
            (2, 3),
            math.inf,
            -math.inf,
            math.nan,
            -0.0,
            True,
            None,
            "a.pt",
            None,
            None,
            True,
        ),
        Param(
            "input.1",
            Role.INPUT,
            "int",
            None,
            None,
            2**70,
            1,
            1.0,
            0,
            value=2**70,
            extra={"group_ranks": [0, 1], "eps": math.nan},
        ),
        Param(
            "weight",
            Role.PARAMETERS_GRAD,
            "torch.Tensor",
            "torch.int64",
            (4,),
            3,
            0,
            "1.5",
            None,
            is_tensor=True,
        ),
        Param("input.2", Role.INPUT),
    ]
    for case in (params, params[2:], [params[1]]):
        nodes = [(7, case), (9, []), (12, case[:1])]
        decoded = param_table.decode(param_table.encode(nodes))
        assert list(decoded) == [7, 9, 12]
        for order, expected in nodes:
            assert_same_params(decoded[order], expected, f"encoded, node {order}")
    assert isinstance(param_table.encode([(0, params[2:])]), bytes)  # orjson's path
    assert isinstance(param_table.encode([(0, params[:1])]), str)  # NaN: the standard json's
    assert isinstance(param_table.encode([(0, [params[1]])]), str)  # 2**70 and a NaN in extra
    past_64_bits = [Param("input.0", Role.INPUT, "int", value=2**70)]
    assert isinstance(param_table.encode([(0, past_64_bits)]), str)
    assert param_table.decode(param_table.encode([(0, past_64_bits)]))[0][0].value == 2**70


def test_a_graph_of_many_nodes_spans_rows(tmp_path: Path) -> None:
    """More nodes than a row holds: every node's parameters found in its row."""
    root = fixture_path("msprobe-resnet50-gpu")
    path = run_build(BuildOptions(target=root / "step0", output_dir=tmp_path)).path
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT COUNT(*) FROM gb_params").fetchone()[0]
    assert rows > 2, "the case should need several rows"


def test_a_file_without_the_table_parses_its_display_strings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An msprobe file, and a graphboard file written before gb_params, read params() from
    their display strings, as before."""
    root = fixture_path("convnet-stats")
    path = run_build(
        BuildOptions(target=root / "target", golden=root / "golden", output_dir=tmp_path)
    ).path
    key = GraphKey("NPU", 0, 0)
    with open_vis_db(path, tmp_path / "cache") as db:
        name = _a_node_with_params(db, key)
        typed = node_data.params(db, key, name)
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE gb_params")
    parsed: list[str] = []
    real = param_parse.params_from_display

    def counting(node_name: str, *dicts: dict[str, Any]) -> list[Param]:
        parsed.append(node_name)
        return real(node_name, *dicts)

    monkeypatch.setattr("graphboard.store.reader.node_data.params_from_display", counting)
    with open_vis_db(path, tmp_path / "cache") as db:
        older = node_data.params(db, key, name)
    assert parsed == [name] and older is not None and typed is not None
    assert [p.key for p in older] and {p.key for p in older} == {p.key for p in typed}
    msprobe = reference_db("convnet-stats")
    with open_vis_db(msprobe, tmp_path / "cache") as db:
        assert db.source is Source.MSPROBE
        name = _a_node_with_params(db, key)
        found = node_data.params(db, key, name)
        assert found and parsed[-1] == name
        assert node_data.params_by_order(db, key, [summaries.summary(db, key, name).node_order])  # type: ignore[union-attr]


def _a_node_with_params(db: VisDb, key: GraphKey) -> str:
    row = db.conn.execute(
        "SELECT node_name FROM tb_nodes WHERE data_source = ? AND output_data NOT IN ('', '{}') "
        "ORDER BY node_order LIMIT 1",
        (key.side,),
    ).fetchone()
    return str(row[0])


def test_a_column_holding_both_infinities_takes_the_exact_path() -> None:
    """An overflowing fp16 tensor's Max is inf and its Min -inf: the column's exact sum is
    undefined (math.fsum raises ValueError), which crashed the compare before (issue 30)."""
    overflowing = [
        Param(
            "output.0",
            Role.OUTPUT,
            "torch.Tensor",
            "torch.float16",
            (4,),
            math.inf,
            -math.inf,
            math.nan,
            math.inf,
            is_tensor=True,
        ),
        Param(
            "output.1",
            Role.OUTPUT,
            "torch.Tensor",
            "torch.float16",
            (4,),
            1.0,
            -1.0,
            0.0,
            2.0,
            is_tensor=True,
        ),
    ]
    assert param_table.has_non_finite([math.inf, -math.inf, 1.0])
    assert param_table.has_non_finite([1e308, 1e308])  # partial sums overflow
    assert not param_table.has_non_finite([1.0, -2.5, "x", None])
    encoded = param_table.encode([(3, overflowing)])
    assert isinstance(encoded, str)  # the standard json's path: it writes infinities
    assert_same_params(param_table.decode(encoded)[3], overflowing, "both infinities")
