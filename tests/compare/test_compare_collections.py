"""An Apis_Between_Modules collection takes its worst child's precision_index in every data
mode. msprobe does so in statistics mode only: in tensor mode it scores the collection before
the tensor compare has scored the children, so the collection is 0 whatever they are
(docs/differences.md, "API collections in tensor mode"; msprobe's side of it on a PyTorch dump:
tests/integration/test_probe_compare_msprobe.py).

The dumps are MindSpore-format (``"framework": "mindspore"``, Cell / Mint names, .npy tensor
files) made with dumpmaker: no real MindSpore dump is at hand.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from compare_factories import graph, node
from compare_factories import tensor as param_tensor

from dumpmaker import RankDump, record, tensor
from graphboard.compare.dtype_aware import Verdict
from graphboard.compare.dtype_graph import score_graph
from graphboard.compare.engine import compare_graphs
from graphboard.compare.result import DataMode
from graphboard.graph.model import Graph
from graphboard.pipeline import BuildOptions, run_build

INPUT = np.linspace(0.5, 2.0, 6, dtype=np.float32).reshape(2, 3)
CELL = "Cell.net.Net.forward.0"
COLLECTED = ("Mint.add.0.forward", "Mint.mul.0.forward")  # two root-level APIs in a row


def _leaf(folder: Path, data_name: str, array: np.ndarray, task: str) -> dict[str, object]:
    """A MindSpore tensor leaf; in tensor mode its array goes to dump_tensor_data."""
    stats = (
        float(array.max()),
        float(array.min()),
        float(array.mean()),
        float(np.linalg.norm(array)),
    )
    leaf = tensor(stats=stats, shape=array.shape, dtype="Float32", type="mindspore.Tensor")
    if task == "tensor":
        leaf["data_name"] = data_name
        (folder / "dump_tensor_data").mkdir(parents=True, exist_ok=True)
        np.save(folder / "dump_tensor_data" / data_name, array)
    return leaf


def _dump(folder: Path, task: str, mul_factor: float) -> Path:
    """A Cell, then add and mul at the root; ``mul_factor`` scales mul's output."""
    dump = RankDump(task=task, framework="mindspore")
    calls = [
        (CELL, INPUT, INPUT * 2),
        ("Mint.add.0.forward", INPUT, INPUT + 1),
        ("Mint.mul.0.forward", INPUT, INPUT * 3 * mul_factor),
    ]
    for name, given, returned in calls:
        args = [_leaf(folder, f"{name}.input.0.npy", given, task)]
        output = [_leaf(folder, f"{name}.output.0.npy", returned, task)]
        dump.add(name, None, data=record(args=args, output=output))
    return dump.write(folder)


@pytest.mark.parametrize("task", ["statistics", "tensor"])
def test_collection_takes_its_worst_child_in_every_mode(tmp_path: Path, task: str) -> None:
    target = _dump(tmp_path / "target", task, mul_factor=5.0)  # mul's output 5x the golden's
    golden = _dump(tmp_path / "golden", task, mul_factor=1.0)
    out = run_build(BuildOptions(target=target, golden=golden, output_dir=tmp_path / "out")).path
    with sqlite3.connect(f"file:{out}?mode=ro", uri=True) as conn:
        precision = dict(
            conn.execute(
                "SELECT node_name, precision_index FROM tb_nodes WHERE data_source = 'NPU'"
            ).fetchall()
        )
        collected = conn.execute(
            "SELECT sub_nodes FROM tb_nodes WHERE data_source = 'NPU' AND node_name = ?",
            ("Apis_Between_Modules.0",),
        ).fetchone()[0]
    assert all(name in collected for name in COLLECTED)
    assert precision[CELL] == 0 and precision["Mint.add.0.forward"] == 0
    assert precision["Mint.mul.0.forward"] == 1  # inputs agree, the output does not
    assert precision["Apis_Between_Modules.0"] == 1  # msprobe: 1 in statistics, 0 in tensor


def test_a_collection_inside_a_collection_is_settled_first() -> None:
    """A merged graph gathers each rank's collection under one of all ranks (merge/apis.py):
    the inner takes its worst child's index before the outer takes the inner's, whatever order
    the graph's nodes are held in (here the outer first)."""

    def side(factor: float) -> Graph:
        call = node(
            "Torch.mul.0.forward",
            [
                param_tensor("input.0"),
                param_tensor("output.0", (factor, -factor, factor / 4, 2 * factor)),
            ],
        )
        inner = node("Apis_Between_Modules_Rank1.0", children=[call])
        return graph("NPU", node("Apis_Between_Modules_All_Ranks.0", children=[inner]))

    target, golden = side(5.0), side(1.0)
    for name, target_node in target.nodes.items():
        target_node.counterpart = golden.nodes[name]
    assert list(target.nodes).index("Apis_Between_Modules_All_Ranks.0") < list(target.nodes).index(
        "Apis_Between_Modules_Rank1.0"
    )
    compare_graphs(target, golden, DataMode.SUMMARY)
    assert target.nodes["Torch.mul.0.forward"].precision == 1
    assert target.nodes["Apis_Between_Modules_Rank1.0"].precision == 1
    assert target.nodes["Apis_Between_Modules_All_Ranks.0"].precision == 1
    verdicts = score_graph(target, DataMode.SUMMARY).verdict  # the dtype-aware rules alike
    assert verdicts["Apis_Between_Modules_All_Ranks.0"] is verdicts["Torch.mul.0.forward"]
    assert verdicts["Torch.mul.0.forward"] is not Verdict.PASS
