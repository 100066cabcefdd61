"""The localisation benchmark's own code (bench/bench_localisation.py, bench/localisation/),
so it cannot rot unseen: its classification on hand-made trees, and its dump-build-classify
path on two real dumps of the project's own model by graphboard's probe (a backward-only
fault, and the golden against itself).
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from graphboard.pipeline import BuildOptions, run_build

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from bench_localisation import make_dump  # noqa: E402
from localisation import cases  # noqa: E402
from localisation.classify import (  # noqa: E402
    MISSED,
    NEAR,
    RIGHT,
    WRONG,
    answer,
    classify,
    parents,
    precision_mismatches,
)

MLP = "model.layers.2.mlp"
# A hand-made tree in msprobe's naming: node -> up_node.
UP = {
    "Module.model.layers.2.mlp.LlamaMLP.forward.0": "Module.model.layers.2.LlamaDecoderLayer.forward.0",
    "Module.model.layers.2.mlp.down_proj.Linear.forward.0": "Module.model.layers.2.mlp.LlamaMLP.forward.0",
    "Functional.linear.9.forward": "Module.model.layers.2.mlp.down_proj.Linear.forward.0",
    "Tensor.__add__.4.forward": "Module.model.layers.2.LlamaDecoderLayer.forward.0",
    "Module.model.layers.2.LlamaDecoderLayer.forward.0": "Module.model.LlamaModel.forward.0",
    "Module.model.layers.3.mlp.LlamaMLP.forward.0": "Module.model.layers.3.LlamaDecoderLayer.forward.0",
    "Module.model.layers.3.LlamaDecoderLayer.forward.0": "Module.model.LlamaModel.forward.0",
    "Module.model.layers.12.mlp.LlamaMLP.forward.0": "Module.model.layers.12.LlamaDecoderLayer.forward.0",
    "Module.model.layers.2.mlp.LlamaMLP.backward.0": "Module.model.layers.2.LlamaDecoderLayer.backward.0",
    "Module.model.layers.2.mlp.up_proj.Linear.parameters_grad.0": "Module.model.layers.2.mlp.LlamaMLP.backward.0",
    "Module.model.LlamaModel.forward.0": "",
}


@pytest.mark.parametrize(
    ("first_error", "backward", "expected"),
    [
        ("Functional.linear.9.forward", False, RIGHT),  # an API inside a submodule
        ("Module.model.layers.2.mlp.LlamaMLP.forward.0", False, RIGHT),  # the module itself
        ("Tensor.__add__.4.forward", False, NEAR),  # in its parent
        ("Module.model.layers.3.mlp.LlamaMLP.forward.0", False, NEAR),  # one layer on
        ("Module.model.layers.12.mlp.LlamaMLP.forward.0", False, WRONG),  # not 1 or 3
        ("Module.model.LlamaModel.forward.0", False, WRONG),
        (None, False, MISSED),
        # backward only: the module's backward node, or inside it; its forward is wrong
        ("Module.model.layers.2.mlp.LlamaMLP.backward.0", True, RIGHT),
        ("Module.model.layers.2.mlp.up_proj.Linear.parameters_grad.0", True, RIGHT),
        ("Module.model.layers.2.mlp.LlamaMLP.forward.0", True, WRONG),
    ],
)
def test_classify(first_error: str | None, backward: bool, expected: str) -> None:
    assert classify(first_error, UP, MLP, backward) == expected


def test_a_parent_spanning_every_layer_is_not_near() -> None:
    """A fault in the model-level rotary embedding: a node directly in the model is wrong."""
    rotary = "model.rotary_emb"
    assert classify("Module.model.LlamaModel.forward.0", UP, rotary, False) == WRONG
    assert classify("Module.model.layers.2.LlamaDecoderLayer.forward.0", UP, rotary, False) == WRONG


def test_case_list_meets_the_issue() -> None:
    """At least 30 faults over every precision group, 10 noise-only migrations; a reference
    for every case that is the target without its fault."""
    every = cases.all_cases()
    faults = [case for case in every if case.is_fault]
    assert len(faults) >= 30
    assert {case.group for case in faults} == set(cases.GROUPS)
    assert sum(not case.is_fault for case in every) >= 10
    for case in faults:
        assert case.reference.fault is None
        assert case.reference.precision == case.target.precision
    for case in every:  # the noisy reference: another kernel, where the family has one
        noisy = case.noisy_reference
        assert noisy.fault is None and noisy.precision == case.target.precision
        assert (noisy.attn != case.target.attn) == (not case.target.family.startswith("own-"))
    assert len({case.name for case in every}) == len(every)


@pytest.fixture(scope="module")
def own_dumps(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, cases.Case]:
    data = tmp_path_factory.mktemp("localisation")
    case = cases.fault_case("own-gpt", "fp32", "grad", 1)
    with ThreadPoolExecutor(2) as pool:  # two processes, mostly torch's import: at once
        target, golden = pool.map(
            lambda dump: make_dump(data, "graphboard", dump), (case.target, case.golden)
        )
    return target, golden, case


def test_backward_only_fault_is_classified_on_a_real_build(
    own_dumps: tuple[Path, Path, cases.Case], tmp_path: Path
) -> None:
    """The grad hook on blocks.1.mlp: dtype-aware names that MLP's backward node (or a node
    in it) first; the answer is read back from the real file's own tree."""
    target, golden, case = own_dumps
    assert case.backward_only and case.target.module == "blocks.1.mlp"
    path = run_build(BuildOptions(target=target, golden=golden, output_dir=tmp_path)).path
    up = parents(path)
    found = answer(path, "dtype-aware", tmp_path / "cache")
    assert found.errors > 0
    assert classify(found.first_error, up, case.target.module, backward=True) == RIGHT, found
    assert precision_mismatches(path, path) == []


def test_golden_against_itself_is_missed_with_no_errors(
    own_dumps: tuple[Path, Path, cases.Case], tmp_path: Path
) -> None:
    _target, golden, case = own_dumps
    path = run_build(BuildOptions(target=golden, golden=golden, output_dir=tmp_path)).path
    for rules in ("dtype-aware", "msprobe"):
        found = answer(path, rules, tmp_path / "cache")
        assert found.errors == 0
        assert found.first_error is None
        assert classify(found.first_error, parents(path), str(case.target.module), True) == MISSED
