"""msprobe's own ``graph_visualize`` must accept what the probe writes.

msprobe runs as an external program (it is never imported): set ``GRAPHBOARD_MSPROBE_BIN`` to
its executable, e.g. ``/work/msprobe-venv/bin/msprobe``, or put ``msprobe`` on PATH. Each run
takes several seconds, mostly msprobe's own start-up.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import torch
from probe_models import make_run, train_step

from graphboard import probe
from msprobe_runner import graph_visualize

pytestmark = pytest.mark.slow


def node_names(database: Path, side: str) -> set[str]:
    with sqlite3.connect(database) as connection:
        rows = connection.execute(
            "SELECT node_name FROM tb_nodes WHERE data_source = ?", (side,)
        ).fetchall()
    return {name for (name,) in rows}


def dump_pair(root: Path, task: str) -> tuple[Path, Path]:
    """Golden and target dump roots: the same step, target with a nudged head weight."""
    sides = []
    for side in ("golden", "target"):
        model, optimizer, images, labels = make_run()
        if side == "target":
            with torch.no_grad():
                model.state_dict()["head.2.weight"].mul_(1.01)
        with probe.dump(model, root / side, step=0, task=task):
            train_step(model, optimizer, images, labels)
        sides.append(root / side)
    return sides[0], sides[1]


EXPECTED_MODULES = {
    "Module.stem.Sequential.forward.0",
    "Module.stem.2.ReLU.forward.0",
    "Module.stem.1.BatchNorm2d.backward.0",
    "Module.blocks.0.relu.ReLU.forward.1",
    "Module.blocks.0.relu.ReLU.backward.1",
    "Module.head.2.Linear.backward.0",
    "Module.head.2.Linear.parameters_grad.0",
    "Functional.relu.2.forward",
    "optimizer",
}


@pytest.mark.parametrize("task", ["statistics", "tensor"])
def test_msprobe_compares_our_dumps(tmp_path: Path, task: str) -> None:
    golden, target = dump_pair(tmp_path, task)
    database = graph_visualize(tmp_path / "vis", "-tp", str(target), "-gp", str(golden))
    for side in ("NPU", "Bench"):
        assert node_names(database, side) >= EXPECTED_MODULES
    with sqlite3.connect(database) as connection:
        unmatched = connection.execute(
            "SELECT count(*) FROM tb_nodes WHERE matched_node_link = '[]'"
        ).fetchone()[0]
        flagged = connection.execute(
            "SELECT count(*) FROM tb_nodes WHERE data_source = 'NPU' AND precision_index > 0"
        ).fetchone()[0]
    assert unmatched == 0  # same structure on both sides
    assert flagged > 0  # the nudged weight shows up


def test_msprobe_builds_a_two_rank_dump(tmp_path: Path, ddp_dump_root: Path) -> None:
    database = graph_visualize(tmp_path / "vis", "-tp", str(ddp_dump_root))
    with sqlite3.connect(database) as connection:
        ranks = connection.execute("SELECT DISTINCT rank FROM tb_nodes ORDER BY rank").fetchall()
        linked = connection.execute(
            "SELECT rank, node_name FROM tb_nodes WHERE matched_distributed NOT IN ('{}', '') ORDER BY rank, node_name"
        ).fetchall()
    assert ranks == [(0,), (1,)]
    assert node_names(database, "NPU") >= {
        "Module.0.Linear.forward.0",
        "Distributed.all_reduce.0.forward",
    }
    # msprobe pairs point-to-point calls across ranks from their src/dst kwargs
    assert (0, "Distributed.send.0.forward") in linked
    assert (1, "Distributed.recv.0.forward") in linked
