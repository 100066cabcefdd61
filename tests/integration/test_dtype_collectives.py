"""The dtype-aware rules on communication ops (issue 29), on real multi-rank dumps.

A collective's output holds other ranks' inputs, which the op's own record does not show: on
convnet-ddp2 (2 ranks x 2 steps, tanh GELU and a noisy conv weight in the target) the
all_reduce of every gradient, the all_gather of the losses and the received tensors carry the
faults of both ranks, and were judged 17 introduced errors (52 errors in all, msprobe's rules
4). What this rank's inputs do not explain there comes from outside its dump: a warning that
says so, not an error of the op. A collective that corrupts its data itself (a sum where a
mean was expected: a gloo run dumped by graphboard's probe) stays an introduced error.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch.distributed as dist
import torch.multiprocessing as mp

from collective_gloo_script import WORLD_SIZE, run_rank
from fixture_cases import fixture_path
from graphboard.compare.result import Level
from graphboard.pipeline import BuildOptions, run_build
from graphboard.server.rule_explain import explain_stored
from graphboard.store.reader import GraphKey, open_vis_db, search, tree

RULES = "dtype-aware"
GRAPHS = [(step, rank) for step in (0, 1) for rank in (0, 1)]
# where each graph's first introduced error was before collectives were judged so, and is
# now: the noisy conv weight (step 0; rank 0 sees it in the conv's output, rank 1 in the
# weight itself) and, at step 1, weights the step-0 update left different
FIRST_ERRORS = {
    (0, 0): "Functional.conv2d.2.forward",
    (0, 1): "Module.blocks.0.conv2.Conv2d.forward.0",
    (1, 0): "Functional.conv2d.0.forward",
    (1, 1): "Module.stem.0.Conv2d.forward.0",
}
# every communication op that received a difference beyond its own rank's inputs (the 17
# former errors), by (step, rank)
BEYOND_OWN_INPUTS = {
    (0, 0): {
        "Distributed.all_reduce.0.forward",
        "Distributed.all_reduce.1.forward",
        "Distributed.all_reduce.3.forward",
        "Distributed.all_reduce.4.forward",
        "Distributed.all_reduce.5.forward",
        "Distributed.all_gather.0.forward",
        "Distributed.irecv.0.forward",
    },
    (0, 1): {
        "Distributed.all_reduce.3.forward",
        "Distributed.all_reduce.4.forward",
        "Distributed.recv.0.forward",
    },
    (1, 0): {"Distributed.all_reduce.6.forward", "Distributed.irecv.0.forward"},
    (1, 1): {
        "Distributed.all_reduce.3.forward",
        "Distributed.all_reduce.7.forward",
        "Distributed.all_reduce.14.forward",
        "Distributed.all_gather.0.forward",
        "Distributed.recv.0.forward",
    },
}


def _build(target: Path, golden: Path, out: Path) -> Path:
    return run_build(BuildOptions(target=target, golden=golden, output_dir=out)).path


@pytest.fixture(scope="module")
def ddp2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = fixture_path("convnet-ddp2")
    return _build(root / "target", root / "golden", tmp_path_factory.mktemp("ddp2"))


def _names(path: Path, key: GraphKey, level: Level) -> list[str]:
    with open_vis_db(path, path.parent / "cache") as db:
        found = search.filter_by(db, key, levels=[level], limit=100_000, rules=RULES).items
        return [node.name for node in found]


def _reasons(path: Path, key: GraphKey, names: set[str]) -> dict[str, str]:
    with open_vis_db(path, path.parent / "cache") as db:
        explained = {name: explain_stored(db, key, name) for name in names}
    return {name: found.reason for name, found in explained.items() if found is not None}


@pytest.mark.parametrize(("step", "rank"), GRAPHS)
def test_no_collective_is_an_error_its_peers_explain(ddp2: Path, step: int, rank: int) -> None:
    key = GraphKey("NPU", step, rank)
    errors = _names(ddp2, key, Level.ERROR)
    assert [name for name in errors if name.startswith("Distributed.")] == []
    warned = {name for name in _names(ddp2, key, Level.WARNING) if name.startswith("Distrib")}
    assert warned == BEYOND_OWN_INPUTS[step, rank]
    for name, reason in _reasons(ddp2, key, warned).items():
        assert reason.startswith("warning: d "), (name, reason)
        assert "other ranks' inputs" in reason and "outside this rank's dump" in reason


@pytest.mark.parametrize(("step", "rank"), GRAPHS)
def test_the_first_introduced_error_is_unchanged(ddp2: Path, step: int, rank: int) -> None:
    key = GraphKey("NPU", step, rank)
    with open_vis_db(ddp2, ddp2.parent / "cache") as db:
        first = tree.first_error(db, key, RULES)
    assert first is not None and first.introduced == "error"
    assert first.name == FIRST_ERRORS[step, rank]


def test_one_rank_dumped_alone_takes_the_others_as_outside_input(tmp_path: Path) -> None:
    """No peer in the build, no link: the same collectives are warnings, not errors."""
    root = fixture_path("convnet-ddp2")
    for side in ("target", "golden"):
        shutil.copytree(root / side / "step0" / "rank0", tmp_path / side / "step0" / "rank0")
    path = _build(tmp_path / "target", tmp_path / "golden", tmp_path / "out")
    key = GraphKey("NPU", 0, 0)
    assert not [name for name in _names(path, key, Level.ERROR) if name.startswith("Distrib")]
    warned = {name for name in _names(path, key, Level.WARNING) if name.startswith("Distrib")}
    assert warned == BEYOND_OWN_INPUTS[0, 0]


@pytest.fixture(scope="module")
def sum_for_mean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not dist.is_available():
        pytest.skip("torch built without torch.distributed")
    root = tmp_path_factory.mktemp("gloo")
    store = root.parent / f"{root.name}.store"  # a file store: no port to race for
    mp.spawn(run_rank, args=(f"file://{store}", str(root)), nprocs=WORLD_SIZE, join=True)
    return _build(root / "target", root / "golden", root / "out")


@pytest.mark.parametrize("rank", [0, 1])
def test_a_collective_that_corrupts_is_still_an_introduced_error(
    sum_for_mean: Path, rank: int
) -> None:
    key = GraphKey("NPU", 0, rank)
    errors = _names(sum_for_mean, key, Level.ERROR)
    reduces = [name for name in errors if name.startswith("Distributed.all_reduce.")]
    assert len(reduces) == 4  # every gradient's reduce: two weights, two biases
    with open_vis_db(sum_for_mean, sum_for_mean.parent / "cache") as db:
        first = tree.first_error(db, key, RULES)
    assert first is not None and first.name == "Distributed.all_reduce.0.forward"
    assert first.introduced == "error"
    # nothing else is an error but the collection of calls between modules holding them
    assert [name for name in errors if name not in reduces] == ["Apis_Between_Modules.1"]
