"""The dtype-aware rules on communication ops (issue 29), on real multi-rank dumps.

A collective's output holds other ranks' inputs, which the op's own record does not show: on
convnet-ddp2 (2 ranks x 2 steps, tanh GELU and a noisy conv weight in the target) the
all_reduce of every gradient, the all_gather of the losses and the received tensors carry the
faults of both ranks, and were judged 17 introduced errors (52 errors in all, msprobe's rules
4). Linked across ranks, each is judged against the band its group's inputs on every rank
explain, and passes; a rank built alone has no peers in the file: what its own inputs do not
explain comes from outside its dump, a warning that says so. A collective that corrupts its
data itself (a sum where a mean was expected: a gloo run dumped by graphboard's probe) stays
an introduced error.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch.distributed as dist
import torch.multiprocessing as mp
from collective_gloo_script import WORLD_SIZE, run_rank

from fixture_cases import fixture_path
from graphboard.compare.dtype_aware import MSG_PEERS, MSG_PEERS_BEYOND, MSG_PEERS_WITHIN
from graphboard.compare.result import Level
from graphboard.distributed.peer_verdicts import META_KEY
from graphboard.pipeline import BuildOptions, run_build
from graphboard.store.reader import GraphKey, graphs, open_vis_db, search, tree
from graphboard.verdict.rule_explain import explain_stored

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
# former errors), by (step, rank): each within the band of its group's inputs
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


def _output_reasons(path: Path, key: GraphKey, names: set[str]) -> dict[str, list[str]]:
    """Per node, the templates its outputs were judged by (the detail panel's working)."""
    with open_vis_db(path, path.parent / "cache") as db:
        explained = {name: explain_stored(db, key, name) for name in names}
    return {
        name: [param.why for param in found.params if param.is_output]
        for name, found in explained.items()
        if found is not None
    }


@pytest.mark.parametrize(("step", "rank"), GRAPHS)
def test_collectives_pass_within_the_band_of_their_groups_inputs(
    ddp2: Path, step: int, rank: int
) -> None:
    key = GraphKey("NPU", step, rank)
    for level in (Level.ERROR, Level.WARNING):
        assert [name for name in _names(ddp2, key, level) if name.startswith("Distrib")] == []
    with open_vis_db(ddp2, ddp2.parent / "cache") as db:
        judged = graphs.meta(db)[META_KEY].get(key.graph_id, {})
    assert set(judged) == BEYOND_OWN_INPUTS[step, rank]
    for name, templates in _output_reasons(ddp2, key, set(judged)).items():
        assert MSG_PEERS_WITHIN in templates, (name, templates)  # the panel says the same
        assert MSG_PEERS not in templates


@pytest.mark.parametrize(("step", "rank"), GRAPHS)
def test_the_first_introduced_error_is_unchanged(ddp2: Path, step: int, rank: int) -> None:
    key = GraphKey("NPU", step, rank)
    with open_vis_db(ddp2, ddp2.parent / "cache") as db:
        first = tree.first_error(db, key, RULES)
    assert first is not None and first.introduced == "error"
    assert first.name == FIRST_ERRORS[step, rank]


def test_one_rank_dumped_alone_takes_the_others_as_outside_input(tmp_path: Path) -> None:
    """No peer in the build, no link: what its own inputs do not explain is a warning."""
    root = fixture_path("convnet-ddp2")
    for side in ("target", "golden"):
        shutil.copytree(root / side / "step0" / "rank0", tmp_path / side / "step0" / "rank0")
    path = _build(tmp_path / "target", tmp_path / "golden", tmp_path / "out")
    key = GraphKey("NPU", 0, 0)
    assert not [name for name in _names(path, key, Level.ERROR) if name.startswith("Distrib")]
    warned = {name for name in _names(path, key, Level.WARNING) if name.startswith("Distrib")}
    assert warned == BEYOND_OWN_INPUTS[0, 0]
    for name, templates in _output_reasons(path, key, warned).items():
        assert MSG_PEERS in templates, (name, templates)
        assert "other ranks' inputs" in MSG_PEERS and "outside this rank's dump" in MSG_PEERS


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
    # its argument differs, and its output is beyond what every rank's inputs explain
    for name, templates in _output_reasons(sum_for_mean, key, set(reduces)).items():
        assert MSG_PEERS_BEYOND in templates, (name, templates)
    # nothing else is an error but the collection of calls between modules holding them
    assert [name for name in errors if name not in reduces] == ["Apis_Between_Modules.1"]
