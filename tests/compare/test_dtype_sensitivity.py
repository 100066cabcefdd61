"""The sensitivity-aware bands (compare/dtype_sensitivity.py, docs/dtype-aware.md §3), each
with its figure worked by hand: B = MARGIN (first-order output difference) + MARGIN 4 u."""

from __future__ import annotations

import math

import pytest
from compare_factories import graph, node

from graphboard.compare.dtype_aware import NodeVerdict, ParamVerdict, Verdict, judge_node
from graphboard.compare.dtype_graph import score_graph
from graphboard.compare.dtype_sensitivity import (
    MARGIN,
    Family,
    Inside,
    Operand,
    allowed_difference,
    carried,
    default_band,
    derivative_bound,
    derivative_spread,
    family_of,
    gradient_sum_band,
    input_range,
    reduced_gradient_band,
    stat_key,
)
from graphboard.compare.engine import compare_graphs
from graphboard.compare.result import DataMode, ParamRow
from graphboard.dump.records import Param, Role
from graphboard.graph.model import Graph

U32, U16, UB16 = 2.0**-24, 2.0**-11, 2.0**-8
OWN32 = MARGIN * 4 * U32  # an fp32 output's own rounding in the band: 4.77e-7


def test_families_are_classified_by_api_name_in_one_table() -> None:
    assert family_of("sin") == (Family.LIPSCHITZ, 1.0)
    assert family_of("sigmoid") == (Family.LIPSCHITZ, 0.25)
    assert family_of("softmax")[0] is Family.SOFTMAX
    assert family_of("layer_norm")[0] is Family.CENTRED_NORM
    assert family_of("__truediv__")[0] is Family.DIVIDE
    assert family_of("__mul__")[0] is Family.PRODUCT
    assert family_of("linear")[0] is Family.MATMUL
    assert family_of("addmm")[0] is Family.ADDED_MATMUL
    assert family_of("__sub__")[0] is Family.LIPSCHITZ  # a difference can cancel
    assert family_of("embedding")[0] is Family.DEFAULT


def test_sin_of_large_angles_is_judged_by_the_angles_absolute_difference() -> None:
    """Angles up to 2000 rad differing by d = 1e-4 (0.2 rad): |sin'| <= 1, so the output,
    of magnitude 1, may differ by 0.2: B = 2 (1 x 1e-4 x 2000 / 1) + 4.77e-7 = 0.4000005,
    where the relative band would be 2 (1e-4 + 4 u) = 2.0e-4."""
    angles = Operand(1e-4, 2000.0, U32)
    band, gain = allowed_difference([angles], 0.0, 1.0, U32, 12, Family.LIPSCHITZ, 1.0)
    assert band == pytest.approx(0.4 + OWN32)
    assert gain == pytest.approx(band / default_band(1e-4, U32))
    assert default_band(1e-4, U32) == pytest.approx(2.0e-4 + OWN32)


def test_a_well_conditioned_op_keeps_the_relative_band() -> None:
    """relu of an input of magnitude 1 into an output of magnitude 1: the absolute form,
    2 (1e-3 x 1 / 1) + 4.77e-7, is below 2 (1e-3 + 4 u): the band stays, the gain is 1."""
    band, gain = allowed_difference([Operand(1e-3, 1.0, U32)], 0.0, 1.0, U32, 4, Family.LIPSCHITZ)
    assert (band, gain) == (default_band(1e-3, U32), 1.0)


def test_exp_and_softmax_turn_an_absolute_input_difference_into_a_relative_one() -> None:
    """Logits of magnitude 10 differing by d = 1e-3 (0.01 absolute): exp's relative output
    difference is expm1(0.01) = 0.0100502, softmax's expm1(2 x 0.01) = 0.0202013."""
    logits = Operand(1e-3, 10.0, U32)
    exp_band, _ = allowed_difference([logits], 0.0, 1.0, U32, 4, Family.EXP)
    assert exp_band == pytest.approx(2 * 0.0100502 + OWN32, rel=1e-5)
    soft_band, _ = allowed_difference([logits], 0.0, 1.0, UB16, 4, Family.SOFTMAX)
    assert soft_band == pytest.approx(2 * 0.0202013 + MARGIN * 4 * UB16, rel=1e-5)


def test_a_centred_norm_amplifies_by_rms_over_std() -> None:
    """Inputs of rms 1 and mean 0.9: std = sqrt(1 - 0.81) = 0.43589, so a difference of
    1e-3 becomes 1e-3 x 2.29416 after the mean is taken away: B = 2 x 2.29416e-3 + 4.77e-7."""
    data = Operand(1e-3, 2.0, U32, numel=64, rms=1.0, mean=0.9)
    weight = Operand(0.0, 1.0, U32, numel=8, rms=1.0, mean=1.0)
    band, gain = allowed_difference([data, weight], 0.0, 3.0, U32, 64, Family.CENTRED_NORM)
    assert band == pytest.approx(2 * 1e-3 / math.sqrt(0.19) + OWN32)
    assert gain > 1.0
    centred = Operand(1e-3, 2.0, U32, numel=64, rms=1.0, mean=0.0)  # already centred: 1
    band, gain = allowed_difference([centred, weight], 0.0, 3.0, U32, 64, Family.CENTRED_NORM)
    assert gain == 1.0


def test_division_amplifies_the_divisor_by_scale_over_its_smallest_magnitude() -> None:
    """b in [0.1, 1] differing by d = 1e-3 (of 1): at 0.1 that is 1e-2 relative; with the
    numerator's 1e-3, B = 2 (1e-3 + 1e-2) + 4.77e-7 = 0.022; a divisor through zero is
    unbounded: the relative band stays."""
    numerator = Operand(1e-3, 5.0, U32)
    divisor = Operand(1e-3, 1.0, U32, smallest=0.1)
    band, _ = allowed_difference([numerator, divisor], 0.0, 50.0, U32, 4, Family.DIVIDE)
    assert band == pytest.approx(0.022 + OWN32)
    through_zero = Operand(1e-3, 1.0, U32, smallest=0.0)
    band, gain = allowed_difference([numerator, through_zero], 0.0, 50.0, U32, 4, Family.DIVIDE)
    assert gain == 1.0 and band == default_band(2e-3, U32)


def test_a_product_and_a_matmul_are_bounded_by_their_operands_magnitudes() -> None:
    """Product: |x| <= 2, |c| <= 1, |xc| <= 1.5, each 1% off: 2 x 0.02 x 2/1.5 = 0.053333.
    Matmul: ‖A‖ = 1 x sqrt(100) = 10, ‖B‖ = 0.5 x 10 = 5, ‖AB‖ = 10, each 0.1% off:
    2 x 0.002 x 10 x 5 / 10 = 0.02 (the dot products cancel 5-fold)."""
    x, c = Operand(0.01, 2.0, U32), Operand(0.01, 1.0, U32)
    band, _ = allowed_difference([x, c], 0.0, 1.5, U32, 4, Family.PRODUCT)
    assert band == pytest.approx(2 * 0.02 * 2 / 1.5 + OWN32)
    a = Operand(1e-3, 3.0, U32, numel=100, rms=1.0)
    b = Operand(1e-3, 1.0, U32, numel=100, rms=0.5)
    band, _ = allowed_difference([a, b], 0.0, 4.0, U32, 100, Family.MATMUL, 1.0, 10.0)
    assert band == pytest.approx(0.02 + OWN32)


def test_an_added_matmul_multiplies_its_second_and_third_inputs() -> None:
    """addmm(C, A, B) = C + A B (GPT-2's Conv1D): A B bounded as the matmul above (0.02), C's
    1e-4 added; read as linear's order (C A multiplying, B a bias) it would be another band."""
    a = Operand(1e-3, 3.0, U32, numel=100, rms=1.0)
    b = Operand(1e-3, 1.0, U32, numel=100, rms=0.5)
    c = Operand(1e-4, 1.0, U32, numel=10, rms=0.1)
    band, _ = allowed_difference([c, a, b], 0.0, 4.0, U32, 100, Family.ADDED_MATMUL, 1.0, 10.0)
    assert band == pytest.approx(2 * (0.02 / 2 + 1e-4) + OWN32)
    as_linear, _ = allowed_difference([c, a, b], 0.0, 4.0, U32, 100, Family.MATMUL, 1.0, 10.0)
    assert as_linear != pytest.approx(band)


def test_a_sum_cancels_as_many_terms_as_it_adds() -> None:
    """100 terms of magnitude 1 each 1e-3 off, summing to 0.5: |Δ| <= 100 x 1e-3 = 0.1,
    d <= 0.2: B = 2 x 0.2 + 4.77e-7."""
    terms = Operand(1e-3, 1.0, U32, numel=100)
    band, _ = allowed_difference([terms], 0.0, 0.5, U32, 1, Family.SUM)
    assert band == pytest.approx(0.4 + OWN32)


def test_a_narrower_operand_carries_its_rounding() -> None:
    """A bf16 operand in an fp32 product (autocast) whose statistics show 1e-4 carries at
    least u_bf16 = 0.0039; an fp32 one carries what it shows."""
    assert carried(Operand(1e-4, 1.0, UB16), U32) == UB16
    assert carried(Operand(1e-4, 1.0, U32), U32) == 1e-4
    assert carried(Operand(1e-2, 1.0, UB16), U32) == 1e-2


def test_a_reducing_gradient_sums_its_terms() -> None:
    """The gradient of a per-row factor b in y = a b: 10 terms g a per element, |g| <= 1
    (1e-3 off), |a| <= 2, the gradient's magnitude 5: |Δ| <= 10 x 2 x 1e-3 = 0.02, d <= 0.004:
    B = 2 x 0.004 + 4.77e-7."""
    gradient = Operand(1e-3, 1.0, U32, numel=100)
    band, gain = reduced_gradient_band([gradient], 0.0, 2.0, 5.0, U32, 10, Family.PRODUCT)
    assert band == pytest.approx(0.008 + OWN32)
    assert gain > 1.0


def _tensor(key: str, stats: tuple[float, float, float, float], shape: tuple[int, ...]) -> Param:
    role = Role.OUTPUT if key.startswith("output") else Role.INPUT
    return Param(key, role, "torch.Tensor", "torch.float32", shape, *stats, is_tensor=True)


def test_a_cos_node_of_large_angles_passes_where_the_relative_band_fails() -> None:
    """Rotary angles up to 2000, 1e-4 apart at their extreme (0.2 rad): cos differs by 5%
    (its Max 0.95 against 1.0): within 2 x 0.2 / 1; under the relative band, 2.0e-4, an
    error. The same 5% with angles up to 1 (a 1e-4 rad difference) is an error."""

    def node(top: float) -> list[ParamRow]:
        angles = (
            _tensor("input.0", (top, 0.0, top / 2, 10.0), (12, 8)),
            _tensor("input.0", (top * (1 + 1e-4), 0.0, top / 2, 10.0), (12, 8)),
        )
        cos = (
            _tensor("output.0", (0.95, -1.0, 0.1, 6.0), (12, 8)),
            _tensor("output.0", (1.0, -1.0, 0.1, 6.0), (12, 8)),
        )
        return [ParamRow(*angles), ParamRow(*cos)]

    large = judge_node("Tensor.cos.0.forward", node(2000.0), DataMode.SUMMARY)
    assert large is not None and large.verdict is Verdict.PASS and large.gain > 100
    small = judge_node("Tensor.cos.0.forward", node(1.0), DataMode.SUMMARY)
    assert small is not None and small.verdict is Verdict.ERROR and small.introduced


def test_a_powers_derivative_spreads_as_its_input_ranges() -> None:
    """x in [2.5e-4, 1e-3] (a range of 4): rsqrt' ∝ x^-1.5 varies 4^1.5 = 8 times over it,
    sqrt' ∝ x^-0.5 2 times, reciprocal' ∝ x^-2 16 times; a range holding zero bounds nothing
    (1, the default band), nor does an API that is no power."""
    x = _tensor("input.0", (1e-3, 2.5e-4, 5e-4, 0.01), (32, 1))
    assert input_range("rsqrt", x, x) == pytest.approx(4.0)
    assert derivative_spread("rsqrt", 4.0) == pytest.approx(8.0)
    assert derivative_spread("sqrt", 4.0) == pytest.approx(2.0)
    assert derivative_spread("reciprocal", 4.0) == pytest.approx(16.0)
    negative = _tensor("input.0", (-2.5e-4, -1e-3, -5e-4, 0.01), (32, 1))
    assert input_range("reciprocal", negative, negative) == pytest.approx(4.0)
    across = _tensor("input.0", (1e-3, -1e-3, 0.0, 0.01), (32, 1))
    assert input_range("reciprocal", across, across) == 1.0
    assert input_range("exp", x, x) == 1.0 and derivative_spread("exp", 4.0) == 1.0


def _output(found: NodeVerdict) -> ParamVerdict:
    return next(param for param in found.params if param.is_output)


def _rsqrt_graphs(out_min: float) -> tuple[Graph, Graph]:
    """An rsqrt and its backward, the forward equal on both sides (x in [2.5e-4, 1e-3]), the
    incoming gradient 0.4% off, the gradient handed back with its Min ``out_min`` against
    -2.0."""

    def side(grad: float, low: float) -> Graph:
        x = _tensor("input.0", (1e-3, 2.5e-4, 5e-4, 3e-3), (32, 1))
        y = _tensor("output.0", (63.2, 31.6, 45.0, 260.0), (32, 1))
        g = _tensor("input.0", (grad * 1e-4, -grad * 1e-4, 0.0, grad * 3e-4), (32, 1))
        h = _tensor("output.0", (2.0, low, 0.0, 6.0), (32, 1))
        return graph(
            "NPU",
            node("Torch.rsqrt.0.forward", [x, y]),
            node("Torch.rsqrt.0.backward", [g, h]),
        )

    target, golden = side(1.004, out_min), side(1.0, -2.0)
    for name, target_node in target.nodes.items():
        target_node.counterpart = golden.nodes[name]
    compare_graphs(target, golden, DataMode.SUMMARY)
    return target, golden


def test_a_powers_backward_reweights_its_gradient_by_the_derivatives_spread() -> None:
    """The gradient handed back, h = g (-x^-1.5 / 2), 2.9% off at its Min (d = 0.06 / 2.06)
    where the incoming g is 0.4% off at its extremes (d = 0.004 / 1.004 = 0.00398): the
    element where x is smallest weighs 8 times the one where x is largest, so h may be
    8 x 0.00398 = 0.0319 off: B = 2 (0.0319 + 4 u) = 0.0637, where the band without the
    spread, 2 (0.00398 + 4 u) = 0.0080, made it an introduced error. 20% off (d = 0.5 / 2.5)
    is still one."""
    target, _golden = _rsqrt_graphs(-2.06)
    verdicts = score_graph(target, DataMode.SUMMARY)
    assert verdicts.verdict["Torch.rsqrt.0.backward"] is Verdict.PASS
    node_rows = target.nodes["Torch.rsqrt.0.backward"].comparison
    assert node_rows is not None
    found = judge_node(
        "Torch.rsqrt.0.backward", node_rows.rows, DataMode.SUMMARY, inside=Inside(spread=8.0)
    )
    assert found is not None
    assert _output(found).band == pytest.approx(2 * (8 * 0.004 / 1.004 + 4 * U32))
    alone = judge_node("Torch.rsqrt.0.backward", node_rows.rows, DataMode.SUMMARY)
    assert alone is not None and alone.verdict is Verdict.ERROR and alone.introduced
    far, _golden = _rsqrt_graphs(-2.5)
    verdicts = score_graph(far, DataMode.SUMMARY)
    assert verdicts.verdict["Torch.rsqrt.0.backward"] is Verdict.ERROR
    assert "Torch.rsqrt.0.backward" in verdicts.introduced


def _half(stats: tuple[float, float, float, float], dtype: str, key: str) -> Param:
    role = Role.OUTPUT if key.startswith("output") else Role.INPUT
    return Param(key, role, "torch.Tensor", dtype, (2, 16, 256), *stats, is_tensor=True)


def test_rounding_below_fp16s_smallest_normal_is_absolute() -> None:
    """An fp16 gradient of rms 2.54e-6 (its elements subnormals, multiples of 2^-24 = 6e-8):
    its Mean 2.7e-8 is 0 in fp16 (under half a subnormal), d = 2.7e-8 / 2.54e-6 = 0.0106.
    Each rounding there errs by up to 2^-25 absolute, 2^-25 / 2.54e-6 = 0.0117 of the rms:
    B = 2 x 4 (u + 0.0117) = 0.0977, where u alone gave 0.0039. The same tensor 2^20 times
    larger (normal numbers) keeps the band of u: the same relative d is an error there."""
    n_root = math.sqrt(2 * 16 * 256)
    for scale, verdict in ((1.0, Verdict.PASS), (2.0**20, Verdict.ERROR)):
        golden_out = (1.5e-5 * scale, -1.8e-5 * scale, 2.7e-8 * scale, 2.3e-4 * scale)
        target_out = (*golden_out[:2], 0.0, golden_out[3])
        grad = (3e-4 * scale, -3e-4 * scale, 0.0, 5e-3 * scale)
        rows = [
            ParamRow(
                _half(grad, "torch.float16", "input.0"), _half(grad, "torch.float32", "input.0")
            ),
            ParamRow(
                _half(target_out, "torch.float16", "output.0"),
                _half(golden_out, "torch.float32", "output.0"),
            ),
        ]
        found = judge_node("Torch.neg.0.forward", rows, DataMode.SUMMARY)
        assert found is not None and found.verdict is verdict
        assert found.output_difference == pytest.approx(2.7e-8 * n_root / 2.3e-4)
        floor = 2.0**-25 * n_root / (2.3e-4 * scale)  # 1.1e-8 at 2^20: nothing
        assert _output(found).band == pytest.approx(2 * 4 * (U16 + floor), rel=1e-6)


Stats = tuple[float, float, float, float]


def _scaled(key: str, stats: Stats, factor: float) -> Param:
    maximum, minimum, mean, norm = stats
    return _tensor(key, (maximum * factor, minimum * factor, mean * factor, norm * factor), (2, 3))


def _mlp_graphs(hook: float) -> Graph:
    """A module reading x twice (up and gate, as an MLP), x 3% off in the target's forward;
    each use hands back a gradient 1% off, which autograd sums into the module's input
    gradient, then multiplied by ``hook`` (a backward hook scaling grad_input)."""
    x, y = (1.0, -1.0, 0.0, 2.0), (2.0, -2.0, 0.0, 4.0)
    piece, total = (1.0, -1.0, 0.0, 2.0), (2.0, -2.0, 0.0, 4.0)

    def side(forward: float, backward: float, scale: float) -> Graph:
        def calls(inputs: Stats, outputs: Stats) -> list[Param]:
            return [_scaled("input.0", inputs, forward), _scaled("output.0", outputs, forward)]

        def grads(inputs: Stats, outputs: Stats, extra: float) -> list[Param]:
            return [
                _scaled("input.0", inputs, backward),
                _scaled("output.0", outputs, backward * extra),
            ]

        return graph(
            "NPU",
            node(
                "Module.mlp.MLP.forward.0",
                calls(x, y),
                [
                    node("Module.mlp.up.Linear.forward.0", calls(x, y)),
                    node("Module.mlp.gate.Linear.forward.0", calls(x, y)),
                ],
            ),
            node(
                "Module.mlp.MLP.backward.0",
                grads(total, total, scale),
                [
                    node("Module.mlp.up.Linear.backward.0", grads(piece, piece, 1.0)),
                    node("Module.mlp.gate.Linear.backward.0", grads(piece, piece, 1.0)),
                ],
            ),
        )

    target, golden = side(1.03, 1.01, hook), side(1.0, 1.0, 1.0)
    for name, target_node in target.nodes.items():
        target_node.counterpart = golden.nodes[name]
    compare_graphs(target, golden, DataMode.SUMMARY)
    return target


def test_a_gradient_sums_own_rounding_is_its_additions() -> None:
    """k gradients summed round k - 1 times, each at most u of a partial sum (so of Σ‖g_i‖);
    the terms' d hold their own unseen rounding already (the caller's floor), so §3.1's four
    roundings are not added: three exact terms of norm 1 summing to norm 3 give 2 x 2u x 3 /
    3 = 4u where the default band's would be 8u. A lone term still has a cast's one."""
    u = 2.0**-8
    assert gradient_sum_band([(0.0, 1.0, 1.0)] * 3, 3.0, 3.0, u) == pytest.approx(4 * u)
    assert gradient_sum_band([(0.01, 2.0, 1.0)], 2.0, 1.0, u) == pytest.approx(2 * (0.01 + u))
    # cancelling terms (norm of the sum below the sum of norms) widen it: their roundings
    # are relative to the partial sums, not to the result
    assert gradient_sum_band([(0.0, 1.0, 1.0)] * 2, 0.5, 0.5, u) == pytest.approx(8 * u)


def test_a_modules_input_gradient_is_judged_by_the_gradients_its_uses_hand_back() -> None:
    """Each use's gradient d = 0.01 / 1.01 = 0.0099 (norm 2.02, magnitude 1.01), summed into
    a gradient of norm 4.04 x 1.05 = 4.242, magnitude 2.121: B = 2 x 2 (0.0099 + u) x 2.02 /
    4.242 = 0.0189 (one addition, u of each term's norm). The 5% hook's d = 1 - 1 / 1.0605 = 0.057 is beyond it, where the
    module's own band (its input gradient and the forward's 3%, read unseen) holds it; without
    the hook the module passes."""
    d_piece = 0.01 / 1.01
    band = gradient_sum_band([(d_piece, 2.02, 1.01)] * 2, 4.04 * 1.05, 2.02 * 1.05, U32)
    assert band == pytest.approx(2 * 2 * (d_piece + U32) * 2.02 / 4.242)
    hooked = score_graph(_mlp_graphs(1.05), DataMode.SUMMARY)
    assert hooked.verdict["Module.mlp.MLP.backward.0"] is Verdict.ERROR
    assert "Module.mlp.MLP.backward.0" in hooked.introduced
    assert hooked.excess["Module.mlp.MLP.backward.0"] == pytest.approx((1 - 1 / 1.0605) / band)
    target = _mlp_graphs(1.05)
    comparison = target.nodes["Module.mlp.MLP.backward.0"].comparison
    assert comparison is not None
    alone = judge_node(
        "Module.mlp.MLP.backward.0",
        comparison.rows,
        DataMode.SUMMARY,
        hidden_difference=2 * 0.03 / 1.03,
    )
    assert alone is not None and alone.verdict is Verdict.PASS  # its own band holds it
    plain = score_graph(_mlp_graphs(1.0), DataMode.SUMMARY)
    assert plain.verdict["Module.mlp.MLP.backward.0"] is Verdict.PASS
    # x, 3% off and made by no recorded node, enters at its first reader (§3.3); no
    # backward node introduces anything
    assert plain.introduced == {"Module.mlp.up.Linear.forward.0"}


def test_a_products_backward_is_bounded_elementwise_too() -> None:
    """h = g b elementwise (k = 1): g 1% off at magnitude 0.0128, b = 2x of magnitude
    2 x 0.169 = 0.338 (x² by its exponent argument) 0.3% off, h of magnitude 0.0026:
    |Δh| <= 0.338 (0.01 x 0.0128 + 0.003 x 0.0128), B = 2 |Δh| / 0.0026 + 4 u; without
    ``elementwise`` (no terms reduce) the default band stays."""
    assert derivative_bound(2, 0.169) == pytest.approx(0.338)
    assert derivative_bound(3, 0.5) == pytest.approx(0.75)
    assert derivative_bound(1.5, 0.5) == 0.0  # x^0.5's own difference is unbounded at 0
    assert derivative_bound(-0.5, 0.5) == 0.0 and derivative_bound("2", 0.5) == 0.0
    g = Operand(0.01, 0.0128, U32, numel=2048)
    band, gain = reduced_gradient_band([g], 0.003, 0.338, 0.0026, U32, 2048, Family.PRODUCT, True)
    assert band == pytest.approx(2 * 0.338 * (0.01 * 0.0128 + 0.003 * 0.0128) / 0.0026 + OWN32)
    assert gain > 1.0
    alone, one = reduced_gradient_band([g], 0.003, 0.338, 0.0026, U32, 2048, Family.PRODUCT)
    assert one == 1.0 and alone == pytest.approx(default_band(0.013, U32))


def test_a_power_by_its_exponent_argument_saves_its_derivatives_magnitude() -> None:
    """pow(x, 2) with |x| <= 0.169: its backward reads 2x, of magnitude 0.338; a product of
    a tensor and a number saves no magnitude (the number is not a tensor the dump shows)."""
    x = _tensor("input.0", (0.169, -0.143, -0.0024, 1.676), (2, 16, 64))
    y = _tensor("output.0", (0.0285, 0.0, 0.00137, 0.118), (2, 16, 64))
    exponent = Param("input.1", Role.INPUT, "int", "<class 'int'>", (), 2, 2, 2, 2, value=2)
    found = judge_node(
        "Tensor.pow.0.forward",
        [ParamRow(x, x), ParamRow(exponent, exponent), ParamRow(y, y)],
        DataMode.SUMMARY,
    )
    assert found is not None and found.scale == pytest.approx(0.338)
    scalar = Param("input.1", Role.INPUT, "float", "<class 'float'>", (), 0.5, 0.5, 0.5, 0.5)
    halved = judge_node(
        "Tensor.__mul__.0.forward",
        [ParamRow(x, x), ParamRow(scalar, scalar), ParamRow(y, y)],
        DataMode.SUMMARY,
    )
    assert halved is not None and halved.scale == 0.0


Pair = tuple[tuple[float, float, float, float], tuple[float, float, float, float]]


def _calls(*calls: tuple[str, dict[str, Pair]]) -> Graph:
    """A forward chain of calls, each its name and tensors: key -> (target, golden) stats."""

    def side(which: int) -> Graph:
        return graph(
            "NPU",
            *[
                node(name, [_tensor(key, pair[which], (4,)) for key, pair in tensors.items()])
                for name, tensors in calls
            ],
        )

    target, golden = side(0), side(1)
    for name, target_node in target.nodes.items():
        target_node.counterpart = golden.nodes[name]
    compare_graphs(target, golden, DataMode.SUMMARY)
    return target


def _off(stats: tuple[float, float, float, float], factor: float) -> Pair:
    return tuple(value * factor for value in stats), stats  # type: ignore[return-value]


X, Y, B = (1.0, -1.0, 0.0, 2.0), (2.0, -2.0, 0.0, 4.0), (1.0, 0.01, 0.3, 1.2)
Z, W = (3.0, -3.0, 0.0, 6.0), (4.0, -4.0, 0.0, 8.0)


def test_an_input_no_recorded_node_made_enters_the_run_where_it_is_first_read() -> None:
    """A buffer (a rotary inv_freq) 10% off, read by the second call: no recorded node made
    it and the run has shown no difference before it, so it is that call's error; its second
    reader carries it in. With the buffer as the golden's, nothing is introduced."""

    def calls(buffer: float) -> Graph:
        return _calls(
            ("Torch.mul.0.forward", {"input.0": _off(X, 1.0), "output.0": _off(Y, 1.0)}),
            (
                "Torch.mul.1.forward",
                {"input.0": _off(Y, 1.0), "input.1": _off(B, buffer), "output.0": _off(Z, buffer)},
            ),
            (
                "Torch.mul.2.forward",
                {
                    "input.0": _off(B, buffer),
                    "input.1": _off(Z, buffer),
                    "output.0": _off(W, buffer),
                },
            ),
        )

    assert score_graph(calls(1.1), DataMode.SUMMARY).introduced == {"Torch.mul.1.forward"}
    assert not score_graph(calls(1.0), DataMode.SUMMARY).introduced


def test_a_view_carries_at_most_the_difference_the_run_shows() -> None:
    """The run's data 5% off (d = 0.048: the first call's input, made by nothing recorded,
    enters there), then a tensor no recorded node made (a view of the stream): 6% off is
    within MARGIN x 0.048, 30% is beyond it and enters the run at its reader."""

    def calls(view: float) -> Graph:
        return _calls(
            ("Torch.mul.0.forward", {"input.0": _off(X, 1.05), "output.0": _off(Y, 1.05)}),
            ("Torch.mul.1.forward", {"input.0": _off(B, view), "output.0": _off(Z, view)}),
        )

    assert score_graph(calls(1.06), DataMode.SUMMARY).introduced == {"Torch.mul.0.forward"}
    assert score_graph(calls(1.3), DataMode.SUMMARY).introduced == {
        "Torch.mul.0.forward",
        "Torch.mul.1.forward",
    }


def test_an_entering_inputs_reason_names_it_and_its_band() -> None:
    """judge_node's own view of the rule: the band is MARGIN x max(rounding, the run's
    largest difference before it), here 2 x 0.02."""
    target, golden = _off(B, 1.1)
    rows = [
        ParamRow(_tensor("input.0", target, (4,)), _tensor("input.0", golden, (4,))),
        ParamRow(_tensor("output.0", target, (4,)), _tensor("output.0", golden, (4,))),
    ]
    key = stat_key(_tensor("input.0", target, (4,)))
    found = judge_node("Torch.mul.0.forward", rows, DataMode.SUMMARY, entering={key: 0.02})
    assert found is not None and found.introduced and found.deciding is not None
    assert found.deciding.key == "input.0"
    assert found.deciding.band == pytest.approx(MARGIN * 0.02)
    assert found.deciding.reason.startswith("error: an input no recorded node made")
    quiet = judge_node("Torch.mul.0.forward", rows, DataMode.SUMMARY, entering={key: 0.06})
    assert quiet is not None and not quiet.introduced


def test_calls_paired_by_their_count_only_say_nothing_of_what_enters() -> None:
    """A kernel swap renumbers the calls after it: the second call reads the first one's
    output, which the golden's call of that number does not (it reads another tensor), so the
    two are different calls and the buffer beside it, 10% off, is not judged as entering
    there. Paired with what it was made with, the same buffer is."""

    def calls(golden_reads: tuple[float, float, float, float]) -> Graph:
        return _calls(
            ("Torch.mul.0.forward", {"input.0": _off(X, 1.0), "output.0": _off(Y, 1.0)}),
            (
                "Torch.mul.1.forward",
                {
                    "input.0": (Y, golden_reads),
                    "input.1": _off(B, 1.1),
                    "output.0": _off(Z, 1.1),  # what the buffer's 10% explains
                },
            ),
        )

    assert "Torch.mul.1.forward" not in score_graph(calls(Z), DataMode.SUMMARY).introduced
    assert "Torch.mul.1.forward" in score_graph(calls(Y), DataMode.SUMMARY).introduced


def test_a_weight_read_inside_its_module_is_judged_as_the_modules_parameter() -> None:
    """A Linear's weight 5% off: its module holds it as a parameter (one rounding allowed)
    and the call inside reads the same tensor as an input. The module, where the dump names it
    a weight, introduces the error; the call does not take it for a tensor entering from
    outside the dump."""
    weight = _off(B, 1.05)

    def side(which: int) -> Graph:
        call = node(
            "Functional.linear.0.forward",
            [
                _tensor("input.0", X, (4,)),
                _tensor("input.1", weight[which], (4,)),
                _tensor("output.0", _off(Y, 1.05)[which], (4,)),
            ],
        )
        parameter = Param(
            "parameters.weight",
            Role.PARAMETERS,
            "torch.Tensor",
            "torch.float32",
            (4,),
            *weight[which],
            is_tensor=True,
        )
        module = node(
            "Module.fc.Linear.forward.0",
            [
                _tensor("input.0", X, (4,)),
                parameter,
                _tensor("output.0", _off(Y, 1.05)[which], (4,)),
            ],
            [call],
        )
        return graph("NPU", module)

    target, golden = side(0), side(1)
    for name, target_node in target.nodes.items():
        target_node.counterpart = golden.nodes[name]
    compare_graphs(target, golden, DataMode.SUMMARY)
    found = score_graph(target, DataMode.SUMMARY)
    assert found.introduced == {"Module.fc.Linear.forward.0"}


def test_the_panel_explains_a_graph_rules_error_with_the_facts_the_build_kept() -> None:
    """The module backward's gradient-sum error is the graph's (its own records pass): the
    build keeps the bands it was judged with, which survive the file's JSON, and the panel's
    working with them gives the stored verdict and its reason; without them, a pass."""
    from graphboard.compare.dtype_context import RuleContext
    from graphboard.compare.dtype_explain import explain_node

    target = _mlp_graphs(1.05)
    found = score_graph(target, DataMode.SUMMARY)
    name = "Module.mlp.MLP.backward.0"
    kept = found.context[name]
    assert kept.gradient_sum and set(found.context) == found.introduced
    again = RuleContext.from_json(kept.to_json())
    assert again == kept
    module = target.nodes[name]
    assert module.params is not None and module.counterpart is not None
    golden = module.counterpart.params or []
    explained = explain_node(name, module.params, golden, DataMode.SUMMARY, context=again)
    assert explained is not None and explained.introduced and explained.deciding is not None
    assert explained.deciding.reason.startswith("error: d ")
    assert "gradients its uses inside it hand back" in explained.deciding.reason
    assert explained.deciding.band == pytest.approx(kept.gradient_sum["output.0"])
    forward = target.nodes["Module.mlp.MLP.forward.0"]
    assert forward.params is not None and forward.counterpart is not None
    twin = (forward.name, forward.params, forward.counterpart.params or [])
    alone = explain_node(name, module.params, golden, DataMode.SUMMARY, twin=twin)
    assert alone is not None and not alone.introduced  # its own band, with its twin's
