"""The dtype-aware rules on hand-made parameters, with every expected figure worked by hand
(docs/dtype-aware.md: d, the band, the margin)."""

from __future__ import annotations

import math

import pytest

from graphboard.compare.dtype_aware import (
    MARGIN,
    OWN_ROUNDINGS,
    Verdict,
    judge_node,
    output_band,
)
from graphboard.compare.dtype_graph import forward_twin
from graphboard.compare.dtype_noise import (
    DtypeRelation,
    dtype_limit,
    dtype_relation,
    narrower_roundoff,
    same_limit,
    statistics_difference,
    tensor_difference,
    unit_roundoff,
)
from graphboard.compare.noise_reference import NodeNoise
from graphboard.compare.result import DataMode, ParamRow
from graphboard.dump.records import Param, Role

BF16, FP16, FP32 = "torch.bfloat16", "torch.float16", "torch.float32"
U_BF16 = 2.0**-8


def tensor(
    key: str,
    dtype: str = FP32,
    stats: tuple[float, float, float, float] = (1.0, -1.0, 0.0, 10.0),
    shape: tuple[int, ...] = (100,),
    role: Role | None = None,
) -> Param:
    found_role = role or (Role.OUTPUT if key.startswith("output") else Role.INPUT)
    maximum, minimum, mean, norm = stats
    return Param(
        key, found_role, "torch.Tensor", dtype, shape, maximum, minimum, mean, norm, is_tensor=True
    )


def scalar(key: str, value: object) -> Param:
    return Param(key, Role.INPUT, type(value).__name__, None, None, value=value)


def scaled(key: str, factor: float, dtype: str = BF16, role: Role | None = None) -> Param:
    """A target whose every statistic is the golden's (1, -1, 0, 10) times ``factor``."""
    return tensor(key, dtype, (factor, -factor, 0.0, 10.0 * factor), role=role)


def test_unit_roundoffs_and_dtype_relations() -> None:
    assert unit_roundoff(BF16) == 2.0**-8
    assert unit_roundoff(FP16) == 2.0**-11
    assert unit_roundoff(FP32) == 2.0**-24
    assert unit_roundoff("float64") == 2.0**-53  # numpy's spelling
    assert unit_roundoff("torch.int64") is None
    assert dtype_relation(BF16, FP32) is DtypeRelation.NARROWER
    assert dtype_relation(FP16, "torch.float64") is DtypeRelation.NARROWER
    assert dtype_relation(FP32, BF16) is DtypeRelation.OTHER  # a wider target
    assert dtype_relation("torch.int64", FP32) is DtypeRelation.OTHER
    assert dtype_relation(BF16, FP16) is DtypeRelation.OTHER  # neither holds the other
    assert dtype_relation(FP32, "Float32") is DtypeRelation.SAME  # MindSpore's spelling
    assert narrower_roundoff(BF16, FP32) == 2.0**-8
    assert narrower_roundoff("torch.int64", "torch.int64") == 0.0


def test_statistics_difference_is_each_statistic_over_its_scale() -> None:
    golden = tensor("output.0")
    # Max 1.01 against 1: the largest magnitude is 1.01, so d = 0.01 / 1.01.
    target = tensor("output.0", BF16, (1.01, -1.0, 0.0, 10.0))
    assert statistics_difference(target, golden) == pytest.approx(0.01 / 1.01)
    # Mean 0.02 against 0 over 100 elements of norm 10: rms 1, so d = 0.02 (a relative error
    # of the mean would be infinite; the rms bounds |Δmean| by the tensors' L2 error).
    target = tensor("output.0", BF16, (1.0, -1.0, 0.02, 10.0))
    assert statistics_difference(target, golden) == pytest.approx(0.02)
    # Norm 10.5 against 10: d = 0.5 / 10.5.
    target = tensor("output.0", BF16, (1.0, -1.0, 0.0, 10.5))
    assert statistics_difference(target, golden) == pytest.approx(0.5 / 10.5)
    # -inf on both sides (a masked fill) measures nothing; the finite statistics still do.
    masked = tensor("output.0", FP32, (1.0, -math.inf, -math.inf, math.inf))
    masked_target = tensor("output.0", BF16, (1.02, -math.inf, -math.inf, math.inf))
    assert statistics_difference(masked_target, masked) == pytest.approx(0.02 / 1.02)


def test_tensor_difference_is_the_relative_l2_and_linf_error() -> None:
    golden = tensor("output.0")  # norm 10, largest magnitude 1
    metrics = {"EucDist": 0.3, "MaxAbsErr": 0.02}
    assert tensor_difference(metrics, golden) == pytest.approx(0.03)  # 0.3 / 10 > 0.02 / 1
    assert tensor_difference({"EucDist": "shape unmatched"}, golden) is None


def test_the_band_is_the_margin_times_inputs_and_own_rounding() -> None:
    # inputs: d 0.002 each (two of them); output bf16 against fp32
    assert output_band(0.004, U_BF16) == pytest.approx(MARGIN * (0.004 + OWN_ROUNDINGS * U_BF16))
    assert MARGIN == 2.0 and OWN_ROUNDINGS == 4.0  # the figures docs/dtype-aware.md derives


def _rows(*pairs: tuple[Param, Param]) -> list[ParamRow]:
    return [ParamRow(target, golden) for target, golden in pairs]


def test_an_output_within_the_band_passes_and_one_beyond_introduces_an_error() -> None:
    inputs = (scaled("input.0", 1.002), tensor("input.0"))  # d = 0.002 / 1.002
    d_in = 0.002 / 1.002
    band = 2.0 * (d_in + 4.0 * U_BF16)  # 2 (0.001996 + 0.015625)
    assert band == pytest.approx(0.035242, abs=1e-6)
    within = judge_node(
        "Functional.linear.0.forward",
        _rows(inputs, (scaled("output.0", 1.035), tensor("output.0"))),  # d = 0.0338
        DataMode.SUMMARY,
    )
    assert within is not None
    assert within.verdict is Verdict.PASS and not within.introduced
    output = within.params[-1]
    assert output.difference == pytest.approx(0.035 / 1.035)
    assert output.band == pytest.approx(band)
    assert "within the band" in output.reason
    beyond = judge_node(
        "Functional.linear.0.forward",
        _rows(inputs, (scaled("output.0", 1.05), tensor("output.0"))),  # d = 0.0476
        DataMode.SUMMARY,
    )
    assert beyond is not None
    assert beyond.verdict is Verdict.ERROR and beyond.introduced
    assert beyond.reason.startswith("error: d 0.0476 beyond the band 0.0352")


def test_msprobes_dtype_errors_are_expected_here() -> None:
    """bf16 against fp32 everywhere, each within its rounding: msprobe flags every row."""
    found = judge_node(
        "Functional.gelu.0.forward",
        _rows(
            (scaled("input.0", 1 + U_BF16), tensor("input.0")),
            (scaled("output.0", 1 + U_BF16), tensor("output.0")),
        ),
        DataMode.SUMMARY,
    )
    assert found is not None and found.verdict is Verdict.PASS


def test_dtypes_mixed_precision_does_not_explain_stay_errors() -> None:
    for target_dtype in ("torch.int64", "torch.float64"):
        found = judge_node(
            "Functional.add.0.forward",
            _rows((tensor("output.0", target_dtype), tensor("output.0"))),
            DataMode.SUMMARY,
        )
        assert found is not None
        assert found.verdict is Verdict.ERROR and found.introduced, target_dtype
        assert "mixed precision does not explain" in found.reason


def test_differing_arguments_introduce_an_error() -> None:
    found = judge_node(
        "Functional.gelu.0.forward",
        _rows(
            (scaled("input.0", 1.0), tensor("input.0")),
            (scalar("input.approximate", "tanh"), scalar("input.approximate", "none")),
            (scaled("output.0", 1.0), tensor("output.0")),
        ),
        DataMode.SUMMARY,
    )
    assert found is not None and found.verdict is Verdict.ERROR and found.introduced
    assert found.reason == "error: arguments differ ('tanh' against 'none')"


def test_a_parameter_beyond_its_rounding_is_an_error_where_it_is_read() -> None:
    """A weight is made by nothing the dump shows: 5% off is this node's error."""
    weight = (scaled("parameters.weight", 1.05, role=Role.PARAMETERS), tensor("parameters.weight"))
    found = judge_node(
        "Module.mlp.out.Linear.forward.0",
        _rows(
            (scaled("input.0", 1.0), tensor("input.0")),
            weight,
            (scaled("output.0", 1.05), tensor("output.0")),
        ),
        DataMode.SUMMARY,
    )
    assert found is not None and found.verdict is Verdict.ERROR and found.introduced
    assert found.deciding is not None and found.deciding.key == "parameters.weight"
    assert found.deciding.band == pytest.approx(2.0 * U_BF16)


def test_overflow_is_an_error_introduced_only_where_it_arises() -> None:
    inf_output = (
        tensor("output.0", BF16, (math.inf, -1.0, math.inf, math.inf)),
        tensor("output.0"),
    )
    arises = judge_node(
        "Functional.exp.0.forward",
        _rows((scaled("input.0", 1.0), tensor("input.0")), inf_output),
        DataMode.SUMMARY,
    )
    assert arises is not None and arises.verdict is Verdict.ERROR and arises.introduced
    inf_input = (tensor("input.0", BF16, (math.inf, -1.0, math.inf, math.inf)), tensor("input.0"))
    carried = judge_node(
        "Functional.exp.1.forward",
        _rows(
            inf_input,
            (tensor("output.0", BF16, (math.inf, -1.0, math.inf, math.inf)), tensor("output.0")),
        ),
        DataMode.SUMMARY,
    )
    assert carried is not None and carried.verdict is Verdict.ERROR and not carried.introduced
    assert carried.reason.startswith("carried in by an input")


def test_md5_mode_is_not_judged() -> None:
    found = judge_node(
        "Functional.add.0.forward",
        _rows((scaled("output.0", 1.5), tensor("output.0"))),
        DataMode.MD5,
    )
    assert found is not None and found.verdict is Verdict.NOT_JUDGED and not found.introduced
    assert found.reason.startswith("not judged: md5 mode")
    assert judge_node("Functional.add.0.forward", [], DataMode.SUMMARY) is None


def test_a_backward_reads_its_forward_twins_tensors() -> None:
    assert forward_twin("Functional.layer_norm.7.backward") == "Functional.layer_norm.7.forward"
    assert forward_twin("Module.blocks.0.Block.backward.0") == "Module.blocks.0.Block.forward.0"
    assert forward_twin("Module.blocks.0.Block.forward.0") is None
    rows = _rows(
        (scaled("input.0", 1.0), tensor("input.0")), (scaled("output.0", 1.06), tensor("output.0"))
    )
    alone = judge_node("Functional.mul.0.backward", rows, DataMode.SUMMARY)
    assert alone is not None and alone.verdict is Verdict.ERROR
    # the forward's tensors differ by 0.05: band 2 (0.05 + 4 u) = 0.131 > d 0.0566
    with_twin = judge_node("Functional.mul.0.backward", rows, DataMode.SUMMARY, 0.05)
    assert with_twin is not None and with_twin.verdict is Verdict.PASS


FP32_LOWEST, BF16_LOWEST, FP16_LOWEST = -3.4028234663852886e38, -3.3895313892515355e38, -65504.0


def test_a_dtype_limit_is_the_same_value_in_every_dtype() -> None:
    """``torch.finfo(dtype).min`` as a fill: -3.3895e38 (bf16) against -3.4028e38 (fp32) is
    one constant, not two arguments; a finite number near it is not a limit."""
    assert dtype_limit(BF16_LOWEST) == dtype_limit(FP32_LOWEST) == dtype_limit(-math.inf) == -1
    assert dtype_limit(FP16_LOWEST) == -1 and dtype_limit(3.4e38) == 1
    assert dtype_limit(-3.0e38) == 0 and dtype_limit(-60000.0) == 0 and dtype_limit(1.0) == 0
    assert same_limit(BF16_LOWEST, FP32_LOWEST) and same_limit(FP16_LOWEST, -math.inf)
    assert not same_limit(BF16_LOWEST, -FP32_LOWEST)
    found = judge_node(
        "Tensor.masked_fill.0.forward",
        _rows(
            (scaled("input.0", 1.0), tensor("input.0")),
            (scalar("input.2", BF16_LOWEST), scalar("input.2", FP32_LOWEST)),
            (scaled("output.0", 1.0), tensor("output.0")),
        ),
        DataMode.SUMMARY,
    )
    assert found is not None and found.verdict is Verdict.PASS
    assert "the same dtype limit" in found.params[1].reason


def test_a_mask_filled_at_the_limit_is_judged_by_its_other_extreme() -> None:
    """An fp16 mask (lowest -65504) against an fp32 one (-3.4e38): the Min is one limit, the
    Mean and Norm are the fill's; d is the Max's alone: 1.002 against 1, d = 0.002/1.002."""
    golden = tensor("output.0", FP32, (1.0, FP32_LOWEST, -1.0e37, math.inf))
    target = tensor("output.0", FP16, (1.002, FP16_LOWEST, -2000.0, 3.0e5))
    assert statistics_difference(target, golden) == pytest.approx(0.002 / 1.002)
    moved = tensor("output.0", FP16, (1.5, FP16_LOWEST, -2000.0, 3.0e5))
    assert statistics_difference(moved, golden) == pytest.approx(0.5 / 1.5)


def test_an_argument_given_on_one_side_only_is_a_note() -> None:
    """sdpa's ``attn_mask=None`` against eager's mask: a difference of call, not an error."""
    mask = tensor("input.mask", FP32, (0.0, FP32_LOWEST, -1.0e37, math.inf), shape=(12, 12))
    found = judge_node(
        "Module.attn.Attention.forward.0",
        _rows(
            (scaled("input.0", 1.0), tensor("input.0")),
            (Param("input.mask", Role.INPUT), mask),
            (scaled("output.0", 1.0), tensor("output.0")),
        ),
        DataMode.SUMMARY,
    )
    assert found is not None and found.verdict is Verdict.PASS and not found.introduced
    assert found.params[1].reason.startswith("note: an argument given on one side only (None")


def _dtype_argument(value: str) -> Param:
    return Param("input.dtype", Role.INPUT, "torch.dtype", value=value)


def _softmax_rows(target_output: str, target_argument: str | None) -> list[ParamRow]:
    """A softmax over bf16 scores: the golden asks for fp32 (``dtype=torch.float32``); the
    target asks for ``target_argument`` (None: no dtype argument) and returns
    ``target_output``, its every statistic the golden's."""
    scores = (scaled("input.0", 1.0), tensor("input.0"))
    argument = (
        None if target_argument is None else _dtype_argument(target_argument),
        _dtype_argument(FP32),
    )
    output = (tensor("output.0", target_output), tensor("output.0"))
    return [ParamRow(*scores), ParamRow(*argument), ParamRow(*output)]


def test_an_op_computed_narrower_than_its_golden_call_asks_is_an_error() -> None:
    """softmax(scores, dtype=float32) in the golden, softmax(scores) in the target: its
    output is bf16 where the call pins fp32, however small the numbers' difference."""
    found = judge_node("Functional.softmax.0.forward", _softmax_rows(BF16, None), DataMode.SUMMARY)
    assert found is not None and found.verdict is Verdict.ERROR and found.introduced
    assert found.reason.startswith(
        "error: computed in torch.bfloat16 where the golden's call asks for torch.float32"
    )
    assert found.excess == math.inf  # no number says how far: trends' statistic is infinite
    narrower = judge_node(
        "Functional.softmax.0.forward", _softmax_rows(FP16, FP16), DataMode.SUMMARY
    )
    assert narrower is not None and narrower.introduced
    assert any("asks for torch.float32" in param.reason for param in narrower.params)


def test_an_op_returning_the_dtype_its_call_asks_for_is_judged_by_its_numbers() -> None:
    """The same call on bf16 scores in a bf16 run (the migration): fp32 out, as asked."""
    found = judge_node("Functional.softmax.0.forward", _softmax_rows(FP32, FP32), DataMode.SUMMARY)
    assert found is not None and found.verdict is Verdict.PASS and not found.introduced
    # an op whose argument did not set the golden's output dtype (golden out bf16): no claim
    rows = _softmax_rows(BF16, None)
    rows[2] = ParamRow(tensor("output.0", BF16), tensor("output.0", BF16))
    unpinned = judge_node("Functional.softmax.0.forward", rows, DataMode.SUMMARY)
    assert unpinned is not None and not unpinned.introduced


def test_shapes_that_differ_are_another_call_not_an_error() -> None:
    """sdpa against eager: the calls sdpa leaves out renumber the rest, so a call is paired
    with another of other shapes; its numbers say nothing: a warning, not an error."""
    found = judge_node(
        "Tensor.__mul__.10.forward",
        _rows(
            (tensor("input.0", BF16, shape=(2, 8)), tensor("input.0", shape=(2, 4, 8))),
            (scaled("output.0", 1.0), tensor("output.0")),
        ),
        DataMode.SUMMARY,
    )
    assert found is not None and found.verdict is Verdict.WARNING and not found.introduced
    assert found.reason.startswith("warning: shapes differ")


def test_a_reference_computing_the_op_as_narrow_explains_the_call() -> None:
    """With -nr, a reference (the golden's configuration in the target's precision) whose
    softmax returns bf16 too: the configuration computes it so, not the target."""
    narrow = tensor("output.0", BF16)
    as_narrow = NodeNoise({"input.0": 0.0, "output.0": 0.0}, {}, {"output.0": narrow})
    rows = _softmax_rows(BF16, None)
    found = judge_node("Functional.softmax.0.forward", rows, DataMode.SUMMARY, reference=as_narrow)
    assert found is not None and not found.introduced
    as_asked = NodeNoise({"input.0": 0.0, "output.0": 0.0}, {}, {"output.0": tensor("output.0")})
    pinned = judge_node("Functional.softmax.0.forward", rows, DataMode.SUMMARY, reference=as_asked)
    assert pinned is not None and pinned.introduced
