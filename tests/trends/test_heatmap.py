"""Heatmaps computed from real .vis.db files: graphboard's compares of convnet-ddp2 (2 ranks
x 2 steps) and of a synthetic GPT, msprobe's own files (ddp2, ResNet-50), every cell checked
against the node as the store's reader gives it."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from trends_support import GPT_LAYERS, OpenFn

from fixture_cases import BuildFn, reference_db
from graphboard.compare.metrics import RELATIVE_METRIC_NAMES
from graphboard.store.reader import GraphKey, node_data, summaries
from graphboard.trends.heatmap import Axis, HeatmapQuery, HeatmapRefused, heatmap
from graphboard.trends.modules import Pass
from graphboard.trends.values import Statistic

CONVNET_LAYERS = [
    "Module.stem.Sequential",
    "Module.blocks.0.ResidualBlock",
    "Module.pool.AdaptiveAvgPool2d",
    "Module.head.Sequential",
]
LEVELS = {"pass": 0, "warning": 1, "error": 2}


def _percent(text: str) -> float | None:
    try:
        return float(text.removesuffix("%")) / 100
    except ValueError:
        return None


def test_convnet_layers_are_its_top_modules_on_every_step(
    ddp2_compare: Path, open_db: OpenFn
) -> None:
    with open_db(ddp2_compare) as db:
        found = heatmap(db, HeatmapQuery(Axis.MODULE, Axis.STEP, Statistic.LEVEL, rank=1))
        assert found.rows == CONVNET_LAYERS
        assert found.cols == [0, 1]
        assert (found.depth, found.step, found.rank) == (1, None, 1)
        for row, module in enumerate(found.rows):
            for col, step in enumerate(found.cols):
                node = found.nodes[row][col]
                assert node == f"{module}.forward.0"
                summary = summaries.summary(db, GraphKey("NPU", int(step), 1), node)
                assert summary is not None
                assert found.values[row][col] == LEVELS[summary.worst_level or ""]


def test_resnet_layers_are_its_bottlenecks(open_db: OpenFn) -> None:
    with open_db(reference_db("msprobe-resnet50-gpu", "reference-build")) as db:
        found = heatmap(db, HeatmapQuery(Axis.MODULE, Axis.STEP, Statistic.NORM))
    stages = {"layer1": 3, "layer2": 4, "layer3": 6, "layer4": 3}
    assert found.rows == [
        f"Module.{stage}.{index}.Bottleneck"
        for stage, count in stages.items()
        for index in range(count)
    ]
    assert found.depth == 2
    assert all(value is not None for row in found.values for value in row)


def test_gpt_layers_are_its_transformer_layers(gpt_compare: Path, open_db: OpenFn) -> None:
    with open_db(gpt_compare) as db:
        by_rank = heatmap(db, HeatmapQuery(Axis.MODULE, Axis.RANK, Statistic.ERROR, step=1))
        by_step = heatmap(db, HeatmapQuery(Axis.MODULE, Axis.STEP, Statistic.NORM, side="diff"))
    layers = [f"Module.decoder.layers.{n}.TransformerLayer" for n in range(GPT_LAYERS)]
    assert by_rank.rows == layers and by_step.rows == layers
    assert (by_rank.cols, by_rank.step) == ([0, 1], 1)
    # the target differs from the golden by ~1e-6 everywhere and strongly in one MLP
    assert all(value is not None and value > 0 for row in by_rank.values for value in row)
    assert all(value is not None for row in by_step.values for value in row)


def test_error_cell_is_the_worst_relative_error_of_the_nodes_outputs(
    ddp2_compare: Path, open_db: OpenFn
) -> None:
    key = GraphKey("NPU", 0, 0)
    with open_db(ddp2_compare) as db:
        found = heatmap(db, HeatmapQuery(Axis.MODULE, Axis.PASS, Statistic.ERROR, depth=2))
        assert found.cols == ["forward", "backward", "parameters_grad"]
        checked = 0
        for row, cells in enumerate(found.nodes):
            for col, name in enumerate(cells):
                if name is None:
                    assert found.values[row][col] is None
                    continue
                record = node_data.node(db, key, name)
                assert record is not None
                shown = record.input_data if col == 2 else record.output_data
                expected = [
                    value
                    for entry in shown.values()
                    for metric in RELATIVE_METRIC_NAMES
                    if (value := _percent(str(entry.get(metric, "")))) is not None
                ]
                value = found.values[row][col]
                if expected:
                    assert value == pytest.approx(max(map(abs, expected)))
                else:
                    assert value is None
                checked += 1
    assert checked > 20


def test_a_module_called_twice_shows_its_worst_call(ddp2_compare: Path, open_db: OpenFn) -> None:
    with open_db(ddp2_compare) as db:
        found = heatmap(db, HeatmapQuery(Axis.MODULE, Axis.PASS, Statistic.ERROR, depth=2))
        row = found.rows.index("Module.blocks.0.relu.ReLU")
        errors = {}
        for call in (0, 1):
            record = node_data.node(
                db, GraphKey("NPU", 0, 0), f"Module.blocks.0.relu.ReLU.forward.{call}"
            )
            assert record is not None
            errors[call] = max(
                _percent(str(entry["MaxRelativeErr"])) or 0.0
                for entry in record.output_data.values()
            )
    worst = max(errors, key=lambda call: (errors[call], -call))
    assert found.nodes[row][0] == f"Module.blocks.0.relu.ReLU.forward.{worst}"


def test_raw_values_of_each_side_and_their_difference(ddp2_compare: Path, open_db: OpenFn) -> None:
    def query(side: str) -> HeatmapQuery:
        return HeatmapQuery(
            Axis.MODULE, Axis.RANK, Statistic.NORM, side=side, pass_=Pass.BACKWARD, depth=2
        )

    with open_db(ddp2_compare) as db:
        target, golden, difference = (heatmap(db, query(side)) for side in ("NPU", "Bench", "diff"))
        row = target.rows.index("Module.head.0.Linear")
        for col, rank in enumerate(target.cols):
            name = target.nodes[row][col]
            assert name == "Module.head.0.Linear.backward.0"
            record = node_data.node(db, GraphKey("NPU", 0, int(rank)), name)
            assert record is not None
            norms = [
                float(entry["Norm"]) for entry in record.output_data.values() if "dtype" in entry
            ]
            assert target.values[row][col] == pytest.approx(math.sqrt(sum(n * n for n in norms)))
    for row in range(len(target.rows)):
        for col in range(len(target.cols)):
            t, g, d = target.values[row][col], golden.values[row][col], difference.values[row][col]
            if t is None or g is None:
                assert d is None
            else:
                assert d == pytest.approx(t - g)


def test_rank_by_step_of_one_module(ddp2_compare: Path, open_db: OpenFn) -> None:
    module = "Module.head.3.Linear"
    with open_db(ddp2_compare) as db:
        found = heatmap(
            db,
            HeatmapQuery(
                Axis.RANK, Axis.STEP, Statistic.MAX, module=module, pass_=Pass.PARAMETERS_GRAD
            ),
        )
        assert (found.rows, found.cols) == ([0, 1], [0, 1])
        for rank in (0, 1):
            for step in (0, 1):
                name = found.nodes[rank][step]
                assert name == f"{module}.parameters_grad.0"
                record = node_data.node(db, GraphKey("NPU", step, rank), name)
                assert record is not None
                expected = max(float(entry["Max"]) for entry in record.input_data.values())
                assert found.values[rank][step] == pytest.approx(expected)


def test_msprobe_file_gives_the_rows_and_nodes_of_graphboards_build(
    ddp2_compare: Path, open_db: OpenFn
) -> None:
    query = HeatmapQuery(Axis.MODULE, Axis.STEP, Statistic.ERROR)
    with open_db(ddp2_compare) as ours, open_db(reference_db("convnet-ddp2")) as theirs:
        mine, msprobe = heatmap(ours, query), heatmap(theirs, query)
    assert msprobe.rows == mine.rows == CONVNET_LAYERS
    assert msprobe.nodes == mine.nodes


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            HeatmapQuery(Axis.STEP, Axis.MODULE, Statistic.LEVEL),
            "rows=step&cols=module: not a heatmap",
        ),
        (
            HeatmapQuery(Axis.MODULE, Axis.STEP, Statistic.LEVEL, step=0),
            "step=0: every step is an axis",
        ),
        (
            HeatmapQuery(Axis.MODULE, Axis.STEP, Statistic.LEVEL, rank=5),
            "rank=5: the file has ranks [0, 1]",
        ),
        (HeatmapQuery(Axis.RANK, Axis.STEP, Statistic.LEVEL), "module: required for rows=rank"),
        (
            HeatmapQuery(Axis.RANK, Axis.STEP, Statistic.LEVEL, module="Module.nope"),
            "module='Module.nope': no forward call",
        ),
        (
            HeatmapQuery(Axis.MODULE, Axis.STEP, Statistic.LEVEL, module="Module.head"),
            "module: only for",
        ),
        (
            HeatmapQuery(Axis.MODULE, Axis.PASS, Statistic.LEVEL, pass_=Pass.FORWARD),
            "pass: the passes are",
        ),
        (
            HeatmapQuery(Axis.MODULE, Axis.STEP, Statistic.ERROR, side="Bench"),
            "side=golden: statistic=error is the target's (side=target)",
        ),
        (
            HeatmapQuery(Axis.MODULE, Axis.STEP, Statistic.LEVEL, depth=40),
            "depth=40: no module at that depth (modules are at depths [1, 2])",
        ),
    ],
)
def test_refusals_name_the_parameter(
    ddp2_compare: Path, open_db: OpenFn, query: HeatmapQuery, message: str
) -> None:
    with open_db(ddp2_compare) as db, pytest.raises(HeatmapRefused) as refused:
        heatmap(db, query)
    assert message in str(refused.value)


def test_a_build_has_no_error_nor_golden(built: BuildFn, open_db: OpenFn) -> None:
    path = built("convnet-overflow", compare=False, overflow_check=True)
    with open_db(path) as db:
        with pytest.raises(HeatmapRefused, match="needs a compare"):
            heatmap(db, HeatmapQuery(Axis.MODULE, Axis.PASS, Statistic.ERROR))
        with pytest.raises(HeatmapRefused, match="only the target side"):
            heatmap(db, HeatmapQuery(Axis.MODULE, Axis.PASS, Statistic.MAX, side="diff"))
        found = heatmap(db, HeatmapQuery(Axis.MODULE, Axis.PASS, Statistic.MAX))
    # fp16 overflow: the head's input is scaled by 1e5 (inf, then nan)
    assert any(
        value is not None and not math.isfinite(value) for row in found.values for value in row
    )
