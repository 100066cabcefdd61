"""Each pass / warning / error rule, triggered and not triggered, through the engine."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from compare_factories import node, scalar, tensor

from graphboard.compare.engine import compare_pair, pair_params
from graphboard.compare.result import DataMode, Level, NodeComparison
from graphboard.dump.records import Param, Role
from graphboard.graph.model import Node

IN = (1.0, -1.0, 0.1, 10.0)


def score(
    target: list[Param],
    golden: list[Param],
    mode: DataMode = DataMode.SUMMARY,
    name: str = "Functional.relu.0.forward",
) -> NodeComparison:
    comparison = compare_pair(node(name, target), node(name, golden), mode)
    assert comparison is not None
    return comparison


def row_of(comparison: NodeComparison, key: str):  # type: ignore[no-untyped-def]
    return next(row for row in comparison.rows if (row.target or row.golden).key == key)  # type: ignore[union-attr]


def test_identical_pair_passes() -> None:
    params = [tensor("input.0", IN), tensor("output.0", IN)]
    assert score(params, [tensor("input.0", IN), tensor("output.0", IN)]).level is Level.PASS


def test_inf_nan_in_target_only_is_an_error() -> None:
    bad = score(
        [tensor("input.0", IN), tensor("output.0", (math.inf, -1.0, 0.1, 10.0))],
        [tensor("input.0", IN), tensor("output.0", IN)],
    )
    assert bad.level is Level.ERROR and row_of(bad, "output.0").level is Level.ERROR
    both = score(
        [tensor("input.0", IN), tensor("output.0", (math.nan, -1.0, 0.1, 10.0))],
        [tensor("input.0", IN), tensor("output.0", (math.nan, -1.0, 0.1, 10.0))],
    )
    assert (
        row_of(both, "output.0").level is Level.PASS
    )  # the golden has it too: not the target's fault


def test_norm_relative_error_jump_with_agreeing_inputs_is_an_error() -> None:
    jumped = score(
        [tensor("input.0", IN), tensor("output.0", (1.0, -1.0, 0.1, 16.0))],
        [tensor("input.0", IN), tensor("output.0", IN)],
    )
    assert jumped.level is Level.ERROR  # output norm off by 60% while inputs agree
    assert jumped.introduced_level is Level.ERROR
    # the same output jump after inputs already 20% off is only a consequence (no error rule)
    inherited = score(
        [tensor("input.0", (1.0, -1.0, 0.1, 12.0)), tensor("output.0", (1.0, -1.0, 0.1, 16.0))],
        [tensor("input.0", IN), tensor("output.0", IN)],
    )
    assert inherited.level is Level.PASS


def test_output_ten_times_worse_than_inputs_is_a_warning() -> None:
    warned = score(
        [tensor("input.0", (1.0, -1.0, 0.1, 10.001)), tensor("output.0", (1.0, -1.0, 0.1, 10.2))],
        [tensor("input.0", IN), tensor("output.0", IN)],
    )
    assert warned.level is Level.WARNING and row_of(warned, "output.0").level is Level.WARNING
    quiet = score(
        [tensor("input.0", (1.0, -1.0, 0.1, 10.01)), tensor("output.0", (1.0, -1.0, 0.1, 10.02))],
        [tensor("input.0", IN), tensor("output.0", IN)],
    )
    assert quiet.level is Level.PASS
    from_zero = score(
        [tensor("input.0", IN), tensor("output.0", (1.0, -1.0, 0.1, 11.5))],
        [tensor("input.0", IN), tensor("output.0", IN)],
    )
    assert from_zero.level is Level.WARNING  # inputs identical, output 15% off (> 10%, < 50%)


def test_requires_grad_dtype_and_shape_must_agree() -> None:
    base = [tensor("input.0", IN), tensor("output.0", IN)]
    grad = score([tensor("input.0", IN, requires_grad=False), tensor("output.0", IN)], base)
    assert grad.level is Level.ERROR and not row_of(grad, "input.0").requires_grad_consistent
    dtype = score([tensor("input.0", IN, dtype="torch.bfloat16"), tensor("output.0", IN)], base)
    assert dtype.level is Level.ERROR
    shape = score([tensor("input.0", IN, shape=(3, 2)), tensor("output.0", IN)], base)
    assert shape.level is Level.ERROR
    unknown_grad = score([tensor("input.0", IN, requires_grad=None), tensor("output.0", IN)], base)
    assert unknown_grad.level is Level.PASS


def test_differing_scalar_arguments_are_an_error() -> None:
    base = [tensor("input.0", IN), tensor("output.0", IN)]
    differs = score(
        [*base, scalar("input.approximate", "tanh")], [*base, scalar("input.approximate", "none")]
    )
    assert row_of(differs, "input.approximate").level is Level.ERROR
    assert (
        differs.introduced_level is Level.ERROR
    )  # input tensors agree: the divergence starts here
    same = score([*base, scalar("input.dim", 1)], [*base, scalar("input.dim", 1)])
    assert same.level is Level.PASS


def test_uninitialised_and_conversion_apis_are_ignored() -> None:
    garbage = score(
        [tensor("output.0", (math.nan, 0.0, 0.0, 1.0))],
        [tensor("output.0", IN)],
        name="Torch.empty.0.forward",
    )
    assert garbage.level is Level.PASS


def test_input_rules_skipped_for_collectives_that_overwrite_inputs() -> None:
    gathered = score(
        [tensor("input.0", (9.0, 9.0, 9.0, 99.0)), tensor("output.0", IN)],
        [tensor("input.0", IN), tensor("output.0", IN)],
        name="Distributed._all_gather_base.0.forward",
    )
    assert gathered.level is Level.PASS


def test_md5_mode_checksums() -> None:
    same = score(
        [tensor("output.0", md5="aaaa0000")], [tensor("output.0", md5="aaaa0000")], DataMode.MD5
    )
    assert same.level is Level.PASS
    differs = score(
        [tensor("output.0", md5="aaaa0000")], [tensor("output.0", md5="bbbb1111")], DataMode.MD5
    )
    assert differs.level is Level.ERROR
    missing = score([tensor("output.0", md5="aaaa0000")], [tensor("output.0")], DataMode.MD5)
    assert missing.level is Level.WARNING
    scalars = score([scalar("input.1", 2)], [scalar("input.1", 2)], DataMode.MD5)
    assert scalars.level is Level.PASS


def _save(folder: Path, name: str, values: list[float]) -> str:
    np.save(folder / f"{name}.npy", np.array(values))
    return f"{name}.npy"


def test_tensor_mode_rules(tmp_path: Path) -> None:
    target_dir, golden_dir = tmp_path / "t", tmp_path / "g"
    target_dir.mkdir()
    golden_dir.mkdir()
    values = [float(v) for v in range(1, 101)]
    shifted = [v * 1.01 for v in values]  # every output element 1% off
    for folder in (target_dir, golden_dir):
        _save(folder, "in", values)
    _save(target_dir, "out", shifted)
    _save(golden_dir, "out", values)
    target = node(
        "Functional.gelu.0.forward",
        [tensor("input.0", data_name="in.npy"), tensor("output.0", data_name="out.npy")],
    )
    golden = node(
        "Functional.gelu.0.forward",
        [tensor("input.0", data_name="in.npy"), tensor("output.0", data_name="out.npy")],
    )
    comparison = compare_pair(target, golden, DataMode.TENSOR, str(target_dir), str(golden_dir))
    assert comparison is not None
    assert row_of(comparison, "input.0").metrics["One Thousandth Err Ratio"] == 1.0
    assert row_of(comparison, "output.0").metrics["One Thousandth Err Ratio"] == 0.0
    assert comparison.level is Level.ERROR  # inputs all within 1/1000, outputs none
    missing = compare_pair(
        node("Functional.gelu.0.forward", [tensor("output.0", data_name="gone.npy")]),
        node("Functional.gelu.0.forward", [tensor("output.0", data_name="out.npy")]),
        DataMode.TENSOR,
        str(target_dir),
        str(golden_dir),
    )
    assert missing is not None
    assert row_of(missing, "output.0").metrics["Cosine"] == "unsupported"
    assert any("missing" in message for message in row_of(missing, "output.0").messages)


def test_tensor_mode_cosine_drop_is_a_warning(tmp_path: Path) -> None:
    target_dir, golden_dir = tmp_path / "t", tmp_path / "g"
    target_dir.mkdir()
    golden_dir.mkdir()
    for folder in (target_dir, golden_dir):
        _save(folder, "in", [1.0, 2.0, 3.0, 4.0])
    _save(target_dir, "out", [1.0, -2.0, 3.0, 4.0])  # cosine 0.73 vs 1.0
    _save(golden_dir, "out", [1.0, 2.0, 3.0, 4.0])

    def make() -> Node:
        return node(
            "Torch.mul.0.forward",
            [tensor("input.0", data_name="in.npy"), tensor("output.0", data_name="out.npy")],
        )

    comparison = compare_pair(make(), make(), DataMode.TENSOR, str(target_dir), str(golden_dir))
    assert comparison is not None and comparison.level is Level.WARNING


def test_structure_mode_never_scores() -> None:
    assert (
        compare_pair(
            node("Torch.mul.0.forward", [tensor("output.0")]),
            node("Torch.mul.0.forward", [tensor("output.0")]),
            DataMode.STRUCTURE,
        )
        is None
    )


def test_parameters_pair_by_name_not_position() -> None:
    target = [
        tensor("input.0"),
        scalar("input.alpha", 2),
        scalar("input.beta", 1),
        tensor("output.0"),
    ]
    golden = [
        tensor("input.0"),
        scalar("input.beta", 1),
        scalar("input.alpha", 2),
        tensor("output.0"),
    ]
    rows = pair_params(target, golden)
    assert [(row.target.key, row.golden.key) for row in rows] == [  # type: ignore[union-attr]
        ("input.0", "input.0"),
        ("input.alpha", "input.alpha"),
        ("input.beta", "input.beta"),
        ("output.0", "output.0"),
    ]
    # msprobe's rules judge msprobe's pairs, by position: alpha 2 against beta 1 is its error
    # (test_msprobe_pairing.py); the rows above keep the pairing by name
    assert score(target, golden, name="Torch.add.0.forward").level is Level.ERROR


def test_unpairable_names_fall_back_to_position_and_extras_are_listed() -> None:
    target = [tensor("input.0"), scalar("input.scale", 2), tensor("output.0"), tensor("output.1")]
    golden = [tensor("input.0"), scalar("input.factor", 2), tensor("output.0")]
    rows = pair_params(target, golden)
    by_target = {row.target.key: row for row in rows if row.target is not None}
    assert (
        by_target["input.scale"].golden is not None
        and by_target["input.scale"].paired_by == "position"
    )
    assert by_target["output.1"].golden is None
    comparison = score(target, golden, name="Torch.add.0.forward")
    assert comparison.extra_target == ["output.1"] and comparison.extra_golden == []
    assert comparison.level is Level.WARNING


@pytest.mark.parametrize("mode", [DataMode.SUMMARY, DataMode.MD5])
def test_node_without_record_gets_no_precision(mode: DataMode) -> None:
    assert (
        compare_pair(
            node("Module.a.A.forward.0", None),
            node("Module.a.A.forward.0", [tensor("output.0")]),
            mode,
        )
        is None
    )


@pytest.mark.parametrize("mode", [DataMode.SUMMARY, DataMode.TENSOR])
@pytest.mark.parametrize(
    ("golden_name", "skipped"),
    [
        ("Module.blocks.0.attention.qkv.Linear.forward.0", True),
        ("Module.layers.1.mlp.gate_up.Linear.forward.0", True),
        ("Module.blocks.0.attention.proj.Linear.forward.0", False),
    ],
)
def test_dtype_rule_skips_fused_projections_by_the_golden_name(
    mode: DataMode, golden_name: str, skipped: bool
) -> None:
    """msprobe skips the dtype rule on a row whose golden (bench) name holds ``qkv`` or
    ``gate_up``: the node's full name plus the parameter's key, not the key alone."""
    target = [tensor("input.0", IN, dtype="torch.bfloat16"), tensor("output.0", IN)]
    golden = [tensor("input.0", IN), tensor("output.0", IN)]
    comparison = compare_pair(node(golden_name, target), node(golden_name, golden), mode)
    assert comparison is not None
    assert row_of(comparison, "input.0").level is (Level.PASS if skipped else Level.ERROR)
    # the shape rule still applies to a fused projection
    reshaped = [tensor("input.0", IN, shape=(3, 2)), tensor("output.0", IN)]
    comparison = compare_pair(node(golden_name, reshaped), node(golden_name, golden), mode)
    assert comparison is not None and comparison.level is Level.ERROR


def test_dtype_rule_reads_the_golden_name_not_the_target_name() -> None:
    """A renamed module (layer mapping): the golden's name decides, as msprobe's bench name."""
    target = [tensor("input.0", IN, dtype="torch.bfloat16"), tensor("output.0", IN)]
    golden = [tensor("input.0", IN), tensor("output.0", IN)]
    renamed = compare_pair(
        node("Module.attn.in_proj.Linear.forward.0", target),
        node("Module.attn.qkv.Linear.forward.0", golden),
        DataMode.SUMMARY,
    )
    assert renamed is not None and renamed.level is Level.PASS
    reverse = compare_pair(
        node("Module.attn.qkv.Linear.forward.0", target),
        node("Module.attn.in_proj.Linear.forward.0", golden),
        DataMode.SUMMARY,
    )
    assert reverse is not None and reverse.level is Level.ERROR


def test_an_argument_none_on_one_side_is_no_error_as_msprobe_judges_it() -> None:
    """sdpa's ``attn_mask=None`` against eager's mask tensor: msprobe's DType, Shape and
    RequiresGrad checkers skip a row where either side has no dtype, shape or requires_grad
    (a null leaf has none), so msprobe's own .vis.db passes the node; so do these rules."""
    base = [tensor("input.0", IN), tensor("output.0", IN)]
    absent = Param("input.mask", Role.INPUT)  # a null leaf: every field None
    assert absent.is_null
    mask = tensor("input.mask", (0.0, -3.4028234663852886e38, -1.0e38, math.inf))
    found = score([*base, absent], [*base, mask])
    assert found.level is Level.PASS
    assert score([*base, mask], [*base, absent]).level is Level.PASS
    # a dtype present on both sides still must agree
    bf16_mask = tensor(
        "input.mask", (0.0, -3.3895313892515355e38, -1.0e38, math.inf), dtype="torch.bfloat16"
    )
    assert score([*base, bf16_mask], [*base, mask]).level is Level.ERROR


def test_a_null_leaf_on_one_side_only_is_nothing_to_pair() -> None:
    """An attention backward with sdpa has no gradient for the attention weights, eager's
    has a None there: msprobe drops the extra golden item (precision 0 in its own file on
    transformers' GPT-2 and Llama); a one-sided null leaf raises no warning here either."""
    base = [tensor("input.0", IN), tensor("output.0", IN)]
    found = score(base, [*base, Param("input.1", Role.INPUT)])
    assert found.level is Level.PASS
    assert score([*base, Param("input.1", Role.INPUT)], base).level is Level.PASS
    assert score(base, [*base, tensor("input.1", IN)]).level is Level.WARNING  # data: kept
