"""The three-way rule (compare/noise_reference.py, docs/dtype-aware.md §7) on hand-made
parameters, every expected figure worked by hand: the target judged against the noise a
reference run measured instead of the modelled band."""

from __future__ import annotations

import pytest

from graphboard.compare.dtype_aware import MARGIN, OWN_ROUNDINGS, Verdict, judge_node
from graphboard.compare.noise_reference import (
    SPREAD_ROUNDINGS,
    NodeNoise,
    reference_band,
    weight_band,
)
from graphboard.compare.result import DataMode, ParamRow
from graphboard.dump.records import Param, Role

BF16, FP32 = "torch.bfloat16", "torch.float32"
U = 2.0**-8  # bf16's unit roundoff


def tensor(
    key: str,
    dtype: str = FP32,
    stats: tuple[float, float, float, float] = (1.0, -1.0, 0.0, 10.0),
    role: Role | None = None,
    shape: tuple[int, ...] = (100,),
) -> Param:
    found_role = role or (Role.OUTPUT if key.startswith("output") else Role.INPUT)
    high, low, mean, norm = stats
    return Param(
        key, found_role, "torch.Tensor", dtype, shape, high, low, mean, norm, is_tensor=True
    )


def scaled(key: str, factor: float, role: Role | None = None) -> Param:
    """A bf16 tensor whose statistics are the golden's (1, -1, 0, 10) times ``factor``."""
    return tensor(key, BF16, (factor, -factor, 0.0, 10.0 * factor), role)


def rows(*pairs: tuple[Param, Param]) -> list[ParamRow]:
    return [ParamRow(target, golden) for target, golden in pairs]


def noise(*params: Param, arguments: dict[str, object] | None = None) -> NodeNoise:
    """The reference's tensors ``params`` (bf16) against the golden's (1, -1, 0, 10): d_R of
    each is its Max's departure, as statistics_difference measures it."""
    differences = {param.key: abs(param.max - 1.0) / max(param.max, 1.0) for param in params}  # type: ignore[operator]
    return NodeNoise(differences, arguments or {}, {param.key: param for param in params})


def test_the_bands_worked_by_hand() -> None:
    # an output whose reference differs by d_R = 0.004 and whose inputs carry nothing extra:
    # 2 * (0.004 + 0) + 2 * 2^-8 = 0.0158125
    assert reference_band(0.004, 0.0, U) == pytest.approx(MARGIN * 0.004 + SPREAD_ROUNDINGS * U)
    assert reference_band(0.004, 0.0, U) == pytest.approx(0.0158125)
    # a weight rounded once, as the reference's: d_R + u
    assert weight_band(0.002, U) == pytest.approx(0.002 + U)
    # tighter than the modelled floor where the reference measures little noise ...
    assert reference_band(0.0, 0.0, U) < MARGIN * OWN_ROUNDINGS * U
    # ... and wider where it measures much (an op the model underrates)
    assert reference_band(0.05, 0.0, U) > MARGIN * OWN_ROUNDINGS * U


def test_an_output_as_far_off_as_the_references_passes_and_clearly_further_is_an_error() -> None:
    golden_in, golden_out = tensor("input.0"), tensor("output.0")
    target_in = scaled("input.0", 1.0)
    reference = noise(scaled("input.0", 1.0), scaled("output.0", 1.05))
    # d_R = 0.05 / 1.05 = 0.047619 (an op the modelled band, 2 * 4 * 2^-8 = 0.03125, would
    # flag): the band is 2 * 0.047619 + 2 * 2^-8 = 0.102426
    band = MARGIN * 0.05 / 1.05 + SPREAD_ROUNDINGS * U
    as_reference = judge_node(
        "Torch.sin.0.forward",
        rows((target_in, golden_in), (scaled("output.0", 1.05), golden_out)),
        DataMode.SUMMARY,
        reference=reference,
    )
    assert as_reference is not None and as_reference.verdict is Verdict.PASS
    output = next(param for param in as_reference.params if param.is_output)
    assert output.band == pytest.approx(band)
    modelled = judge_node(
        "Torch.sin.0.forward",
        rows((target_in, golden_in), (scaled("output.0", 1.05), golden_out)),
        DataMode.SUMMARY,
    )
    assert modelled is not None and modelled.verdict is Verdict.ERROR  # the model's false alarm
    # 1.12: d_T = 0.12 / 1.12 = 0.107 > 0.1024: the target departs clearly further
    further = judge_node(
        "Torch.sin.0.forward",
        rows((target_in, golden_in), (scaled("output.0", 1.12), golden_out)),
        DataMode.SUMMARY,
        reference=reference,
    )
    assert further is not None and further.verdict is Verdict.ERROR and further.introduced


def test_an_input_departing_from_the_references_explains_its_output() -> None:
    """Downstream of an error: the input departs from the reference's by d(T, R); the output
    may carry MARGIN times that."""
    golden_in, golden_out = tensor("input.0"), tensor("output.0")
    reference = noise(scaled("input.0", 1.0), scaled("output.0", 1.0))
    # the target's input 1.1 against the reference's 1.0: d(T, R) = 0.1 / 1.1 = 0.0909; the
    # band 2 * (0 + 0.0909) + 2 * 2^-8 = 0.1896; the output 1.2 (d 0.1667) is carried in
    found = judge_node(
        "Tensor.__mul__.0.forward",
        rows((scaled("input.0", 1.1), golden_in), (scaled("output.0", 1.2), golden_out)),
        DataMode.SUMMARY,
        reference=reference,
    )
    assert found is not None and found.verdict is Verdict.PASS
    output = next(param for param in found.params if param.is_output)
    assert output.band == pytest.approx(MARGIN * (0.1 / 1.1) + SPREAD_ROUNDINGS * U)


def test_the_absolute_departure_of_a_slice() -> None:
    """A slice holds the whole's absolute error at a smaller magnitude: the input departs by
    d 0.1 at magnitude 1, so an output of magnitude 0.25 may depart by 0.1 / 0.25 = 0.4
    relative to its own (band 2 * 0.4 + 2 * 2^-8)."""
    golden_in = tensor("input.0")
    golden_out = tensor("output.0", FP32, (0.25, -0.25, 0.0, 2.5))
    reference = noise(scaled("input.0", 1.0))
    reference.differences["output.0"] = 0.0
    reference.params["output.0"] = tensor("output.0", BF16, (0.25, -0.25, 0.0, 2.5))
    target_in = tensor("input.0", BF16, (1.0, -1.1, 0.0, 10.0))  # d(T, R) = 0.1 / 1.1
    target_out = tensor("output.0", BF16, (0.25, -0.32, 0.0, 2.5))  # d = 0.07 / 0.32 = 0.219
    found = judge_node(
        "Torch.split.0.backward",
        rows((target_in, golden_in), (target_out, golden_out)),
        DataMode.SUMMARY,
        reference=reference,
    )
    assert found is not None and found.verdict is Verdict.PASS
    output = next(param for param in found.params if param.is_output)
    carried = (0.1 / 1.1) * 1.1 / 0.32  # the input's absolute departure over the output's
    assert output.band == pytest.approx(MARGIN * carried + SPREAD_ROUNDINGS * U)


def test_a_weight_beyond_the_references_and_one_rounding_is_introduced_here() -> None:
    golden_weight = tensor("parameters.weight", role=Role.PARAMETERS)
    reference = noise(scaled("parameters.weight", 1.002, Role.PARAMETERS))
    # d_R = 0.002 / 1.002 = 0.001996; band 0.001996 + 2^-8 = 0.005902: a 1% change is found
    changed = scaled("parameters.weight", 1.01, Role.PARAMETERS)
    found = judge_node(
        "Module.fc.Linear.forward.0",
        rows((changed, golden_weight), (scaled("output.0", 1.01), tensor("output.0"))),
        DataMode.SUMMARY,
        reference=reference,
    )
    assert found is not None and found.verdict is Verdict.ERROR and found.introduced
    assert found.deciding is not None and found.deciding.key == "parameters.weight"
    assert found.deciding.band == pytest.approx(0.002 / 1.002 + U)


def test_an_argument_the_reference_passes_as_the_target_does_is_no_error() -> None:
    # not a dtype's limit (finfo.min fills are one value in every dtype: no error at all)
    fill_target, fill_golden = -1e4, -1e9
    argument = Param("input.1", Role.INPUT, "float", None, None, value=fill_target)
    golden_argument = Param("input.1", Role.INPUT, "float", None, None, value=fill_golden)
    node_rows = rows((argument, golden_argument), (scaled("output.0", 1.0), tensor("output.0")))
    alike = noise(scaled("output.0", 1.0), arguments={"input.1": fill_target})
    found = judge_node("Tensor.masked_fill.0.forward", node_rows, DataMode.SUMMARY, reference=alike)
    assert found is not None and found.verdict is Verdict.PASS
    unlike = noise(scaled("output.0", 1.0), arguments={"input.1": fill_golden})
    found = judge_node(
        "Tensor.masked_fill.0.forward", node_rows, DataMode.SUMMARY, reference=unlike
    )
    assert found is not None and found.verdict is Verdict.ERROR and found.introduced


def test_a_parameter_the_reference_lacks_falls_back_to_the_modelled_band() -> None:
    node_rows = rows(
        (scaled("input.0", 1.0), tensor("input.0")), (scaled("output.0", 1.05), tensor("output.0"))
    )
    empty = judge_node("Torch.sin.0.forward", node_rows, DataMode.SUMMARY, reference=NodeNoise({}))
    modelled = judge_node("Torch.sin.0.forward", node_rows, DataMode.SUMMARY)
    assert empty is not None and modelled is not None
    assert [param.band for param in empty.params] == [param.band for param in modelled.params]
    assert empty.verdict is modelled.verdict is Verdict.ERROR


def test_a_shape_the_reference_differs_in_alike_is_judged_against_the_references() -> None:
    """A kernel whose calls pair other tensors (sdpa against eager: the n-th multiply is
    another one): the golden's tensor has another shape, the reference's the target's. The
    target is judged against the reference's tensor; an overflow R does not share stays."""
    golden = tensor("output.0", shape=(4, 4))
    ours = tensor("output.0", BF16, (1.0, -1.0, 0.0, 10.0))
    node_rows = rows((scaled("input.0", 1.0), tensor("input.0")), (ours, golden))
    modelled = judge_node("Tensor.__mul__.3.forward", node_rows, DataMode.SUMMARY)
    # shapes differ: two calls paired by their count, a warning under dtype-aware
    assert modelled is not None and modelled.verdict is Verdict.WARNING
    alike = noise(scaled("input.0", 1.0), tensor("output.0", BF16, (1.0, -1.0, 0.0, 10.0)))
    found = judge_node("Tensor.__mul__.3.forward", node_rows, DataMode.SUMMARY, reference=alike)
    assert found is not None and found.verdict is Verdict.PASS
    # 2% off the reference's own tensor: beyond 2 * 0 + 2 * 2^-8 = 0.0078
    off = noise(scaled("input.0", 1.0), tensor("output.0", BF16, (1.02, -1.02, 0.0, 10.2)))
    found = judge_node("Tensor.__mul__.3.forward", node_rows, DataMode.SUMMARY, reference=off)
    assert found is not None and found.verdict is Verdict.ERROR and found.introduced
    inf = float("inf")
    overflowing = tensor("output.0", BF16, (inf, -1.0, inf, inf))
    overflow_rows = rows(
        (scaled("input.0", 1.0), tensor("input.0")), (overflowing, tensor("output.0"))
    )
    finite = noise(scaled("input.0", 1.0), scaled("output.0", 1.0))
    found = judge_node("Tensor.exp.0.forward", overflow_rows, DataMode.SUMMARY, reference=finite)
    assert found is not None and found.verdict is Verdict.ERROR and found.introduced


def test_a_target_narrower_than_the_reference_rounds_beyond_the_noise() -> None:
    """The configuration keeps an op in fp32 (a softmax upcast) and the target runs it in
    bf16: the reference (fp32 there) measures fp32 noise, and the target's bf16 rounding is
    a departure: the spread is the reference's roundoff, 2 * 2^-24, not bf16's."""
    golden_out = tensor("output.0")
    reference = noise(scaled("input.0", 1.0), tensor("output.0", FP32, (1.0, -1.0, 0.0, 10.0)))
    reference.differences["output.0"] = 0.0
    bf16_out = tensor("output.0", BF16, (1.0, -1.0, 0.0, 10.02))  # d = 0.002, under 2u of bf16
    found = judge_node(
        "Functional.softmax.2.forward",
        rows((scaled("input.0", 1.0), tensor("input.0")), (bf16_out, golden_out)),
        DataMode.SUMMARY,
        reference=reference,
    )
    assert found is not None and found.verdict is Verdict.ERROR and found.introduced
    assert found.deciding is not None
    assert found.deciding.band == pytest.approx(SPREAD_ROUNDINGS * 2.0**-24)
