"""How far an op's output may differ, from how far its inputs differ and how sensitive the op
is (docs/dtype-aware.md §3): the band of the dtype-aware rules.

Every figure here is a relative difference ``d`` (dtype_noise): a tensor's difference over
its scale. The default band treats an op as well conditioned (``κ <= MARGIN`` in relative
terms: linear maps, products, activations where they carry the signal). Some ops amplify an
*absolute* input difference beyond that: ``sin`` of a large angle, ``exp`` and softmax of
large logits, a sum whose terms cancel, a layer norm of inputs with a common mean, a division
by numbers near zero. For them the band is worked in absolute terms: each input's
difference at its magnitude, times a bound of the op's derivative, over the output's
magnitude, and the larger of the two bands applies. The families are classified by API name
in ``FAMILIES``, in this one place: op families, never models.

:func:`allowed_difference` is the one function from (the inputs' differences, the op's
sensitivity) to the allowed output difference: a measured reference noise can replace the
modelled one there.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from graphboard.compare.dtype_noise import dtype_limit, numel_of
from graphboard.dump.records import Param, Stat

# The margin on first-order propagation (docs/dtype-aware.md §3): an output may differ by up
# to MARGIN times its inputs' differences plus its own rounding before it introduces an error.
MARGIN = 2.0
# A node's own rounding, in unit roundoffs of its output: the result's, one intermediate's a
# fused kernel keeps in the narrow dtype, and two operands' that their statistics need not
# show (docs/dtype-aware.md §3).
OWN_ROUNDINGS = 4.0


class Family(Enum):
    """How an op turns its inputs' absolute differences into its output's (§3)."""

    DEFAULT = "default"  # well conditioned in relative terms: the default band only
    LIPSCHITZ = "lipschitz"  # |f'| <= L: |Δy| <= L Σ|Δx|
    EXP = "exp"  # exp(x + Δ) = exp(x) e^Δ: relative output difference expm1(|Δx|)
    SOFTMAX = "softmax"  # relative output difference <= expm1(2 |Δx|∞)
    LOG_SOFTMAX = "log_softmax"  # |Δy| <= 2 |Δx|∞
    SUM = "sum"  # a sum of n_in / n_out terms: |Δy| <= (n_in / n_out) |Δx|∞, however y cancels
    MEAN = "mean"  # |Δy| <= |Δx|∞, however the mean cancels
    CENTRED_NORM = "centred_norm"  # (x - mean) / std: relative difference x rms / std
    DIVIDE = "divide"  # a / b: b's relative difference at its smallest magnitude
    PRODUCT = "product"  # a * b: |Δ(ab)|∞ <= |Δa|∞ |b|∞ + |a|∞ |Δb|∞
    MATMUL = "matmul"  # A B: ‖Δ(AB)‖ <= (ρ_A + ρ_B) ‖A‖ ‖B‖, however the dot products cancel
    ADDED_MATMUL = "added_matmul"  # β C + α A B: MATMUL's band for A B (inputs 1, 2), C's d


# API name (segment 1 of a node name: ``Torch.sin.0.forward`` -> ``sin``) -> (family, L).
# L is the Lipschitz bound of a LIPSCHITZ op (max |f'| over the reals: tanh' <= 1,
# sigmoid' <= 1/4, GELU' <= 1.129 at x = 1.414 (the tanh form's maximum is the same to 3
# digits), SiLU' <= 1.0998 at x = 2.40); for SUM and MEAN it is set from the shapes.
_LIPSCHITZ = {
    "sin": 1.0,
    "cos": 1.0,
    "tanh": 1.0,
    "sigmoid": 0.25,
    "relu": 1.0,
    "gelu": 1.13,
    "silu": 1.1,
}
_FAMILY_NAMES = {
    Family.EXP: ("exp",),
    Family.SOFTMAX: ("softmax", "_softmax", "_safe_softmax"),
    Family.LOG_SOFTMAX: ("log_softmax", "_log_softmax"),
    Family.SUM: ("sum",),
    Family.MEAN: ("mean",),
    Family.CENTRED_NORM: ("layer_norm", "group_norm", "batch_norm", "instance_norm"),
    Family.DIVIDE: ("div", "div_", "__truediv__", "__itruediv__", "true_divide"),
    Family.PRODUCT: ("mul", "mul_", "__mul__", "__imul__", "__rmul__", "multiply"),
    Family.MATMUL: ("matmul", "__matmul__", "mm", "bmm", "linear"),
    # a product added to the first input (GPT-2's Conv1D is addmm(bias, x, W))
    Family.ADDED_MATMUL: ("addmm", "addmm_", "baddbmm", "addbmm", "addmv"),
    # a sum of two terms cancels as any sum does: |Δ(a ± b)| <= |Δa| + |Δb|
    Family.LIPSCHITZ: ("add", "add_", "__add__", "__iadd__", "__radd__", "sub", "sub_"),
}
FAMILIES: dict[str, tuple[Family, float]] = {
    name: (Family.LIPSCHITZ, bound) for name, bound in _LIPSCHITZ.items()
}
for _family, _names in _FAMILY_NAMES.items():
    for _name in _names:
        FAMILIES.setdefault(_name, (_family, 1.0))
for _name in ("__sub__", "__isub__", "__rsub__", "rsub"):
    FAMILIES[_name] = (Family.LIPSCHITZ, 1.0)


# Elementwise powers y = x^p (by API name). Their backward hands back h = g ⊙ p x^(p-1): the
# incoming gradient g reweighted by the derivative, which moves with the input it reads.
POWERS = {"rsqrt": -0.5, "sqrt": 0.5, "reciprocal": -1.0}

# The relative condition number of a derivative with respect to the input it reads: for
# y = x^p, y' = p x^(p-1) moves by |p - 1| times the input's relative difference (rsqrt:
# p = -1/2, 1.5; reciprocal: p = -1, 2; a quotient's divisor: a / b^2, 2). A backward node
# reads its forward's inputs unseen (dtype_graph.py): their difference counts that many times
# (at least once: the default band's own assumption).
DERIVATIVE_CONDITION = {name: max(abs(p - 1.0), 1.0) for name, p in POWERS.items()} | {
    name: 2.0 for name in _FAMILY_NAMES[Family.DIVIDE]
}


def derivative_condition(api: str) -> float:
    """How many times its forward input's relative difference an API's derivative takes
    (>= 1: the default band's own assumption)."""
    return DERIVATIVE_CONDITION.get(api, 1.0)


def input_range(api: str, target: Param, golden: Param) -> float:
    """For an elementwise power, how far apart its input's magnitudes lie: ``high / low`` of
    the range both sides' Max and Min span, when that range excludes zero; 1 for any other
    API, and where the range holds zero or is unknown (no bound: the default band, as for a
    divisor whose range holds zero)."""
    if api not in POWERS:
        return 1.0
    ends = [_finite(value) for value in (target.max, target.min, golden.max, golden.min)]
    if any(value is None for value in ends):
        return 1.0
    high = max(value for value in ends if value is not None)
    low = min(value for value in ends if value is not None)
    if low > 0.0:
        return high / low
    if high < 0.0:
        return low / high
    return 1.0


def derivative_spread(api: str, ratio: float) -> float:
    """max |f'| / min |f'| over an elementwise power's input range (``ratio`` = its largest
    over its smallest magnitude): ``ratio ** |p - 1|``; 1 for any other API. The backward's
    output h = g ⊙ f'(x) has ‖Δh‖ <= max|f'| ‖Δg‖ and ‖h‖ >= min|f'| ‖g‖ (in L∞ and in L2
    alike), so its relative difference is at most this many times the incoming gradient's:
    the elements the derivative magnifies need not be those at the gradient's extremes."""
    power = POWERS.get(api)
    if power is None or ratio <= 1.0:
        return 1.0
    return float(ratio ** abs(power - 1.0))


def family_of(api: str) -> tuple[Family, float]:
    """The sensitivity family of an API by its name; DEFAULT for any other."""
    return FAMILIES.get(api, (Family.DEFAULT, 1.0))


# The backward of an elementwise sum or product of broadcast operands reduces: the gradient
# of an operand with fewer elements than the incoming gradient (a bias, a per-row factor) is
# a sum of n_in / n_out terms, which can cancel (docs/dtype-aware.md §3).
_REDUCING_BACKWARD = {Family.PRODUCT, Family.DIVIDE, Family.LIPSCHITZ}
_SUMS = frozenset(_FAMILY_NAMES[Family.LIPSCHITZ]) | {"__sub__", "__isub__", "__rsub__", "rsub"}


# A power by its exponent argument, x ** p: its backward hands back g ⊙ p x^(p-1), a product
# of the gradient and the derivative at the saved input (docs/dtype-aware.md §3.2).
POWER_BY_ARGUMENT = frozenset({"pow", "pow_", "__pow__"})


def backward_family(api: str) -> Family:
    """PRODUCT or LIPSCHITZ (a sum) for the backward of an elementwise product, quotient or
    sum, whose operand gradients reduce over broadcast dimensions, and PRODUCT for a power
    by its exponent argument; DEFAULT for any other."""
    if api in POWER_BY_ARGUMENT:
        return Family.PRODUCT
    family = FAMILIES.get(api, (Family.DEFAULT, 1.0))[0]
    if family not in _REDUCING_BACKWARD:
        return Family.DEFAULT
    return Family.LIPSCHITZ if api in _SUMS else Family.PRODUCT


def multiplies_elementwise(api: str) -> bool:
    """Whether an API's backward multiplies each gradient element by one saved element: a
    product's (g b) and a power's (g p x^(p-1)); not a quotient's, whose factor 1/b is not
    bounded by the magnitudes its forward saw."""
    return api in POWER_BY_ARGUMENT or FAMILIES.get(api, (Family.DEFAULT, 1.0))[0] is (
        Family.PRODUCT
    )


def derivative_bound(exponent: object, scale: float) -> float:
    """The largest |d/dx x^p| = |p| M^(p-1) over |x| <= M (``scale``), for p = 1 or p >= 2,
    where the derivative and its own difference, |p (p-1)| M^(p-2) |Δx|, stay bounded on a
    range through zero; 0 (nothing bounded) for any other exponent or a non-number."""
    if isinstance(exponent, bool) or not isinstance(exponent, int | float) or scale <= 0.0:
        return 0.0
    p = float(exponent)
    if p != 1.0 and p < 2.0:
        return 0.0
    return abs(p) * scale ** (p - 1.0)


@dataclass(frozen=True, slots=True)
class Operand:
    """One input tensor as the band sees it."""

    d: float  # its measured relative difference (dtype_noise)
    scale: float  # its largest magnitude, dtype limits left out (0: unknown)
    roundoff: float  # the unit roundoff of the narrower of its two dtypes
    numel: int = 1  # its number of elements
    rms: float = 0.0  # Norm / sqrt(n) (0: unknown)
    mean: float = 0.0
    smallest: float = 0.0  # min |x| when its range excludes zero, else 0


@dataclass(frozen=True, slots=True)
class Inside:
    """What the graph knows of a node beyond its own rows (dtype_graph.py): for a module, the
    largest unit roundoff and gain among the nodes inside it (its computation passed through
    that dtype and may amplify as its ops do); for a backward, its forward twin's gain, the
    largest magnitude of the tensors the twin saved for it, and how far its derivative
    varies over the twin's input (``derivative_spread``)."""

    roundoff: float = 0.0
    gain: float = 1.0
    saved_scale: float = 0.0
    spread: float = 1.0  # a backward of an elementwise power: derivative_spread of its twin


def carried(operand: Operand, out_roundoff: float) -> float:
    """The relative difference an input carries: the measured ``d``, and at least its own
    rounding when it is narrower than the output (a bf16 operand in an fp32 product under
    autocast): statistics can show less than the rounding every element holds."""
    if operand.roundoff > out_roundoff and operand.d < operand.roundoff:
        return operand.roundoff
    return operand.d


def default_band(input_difference: float, roundoff: float) -> float:
    """The band of a well-conditioned op: MARGIN (Σ d_inputs + OWN_ROUNDINGS u)."""
    return MARGIN * (input_difference + OWN_ROUNDINGS * roundoff)


def gradient_sum_band(
    pieces: Sequence[tuple[float, float, float]], out_norm: float, out_scale: float, roundoff: float
) -> float:
    """The band of a module's input gradient from the gradients its uses inside it hand
    back (``pieces``: each one's relative difference, norm and largest magnitude): autograd
    sums them, a step no dump records. A sum's difference is at most its terms' absolute
    differences, in either norm: ``‖Δ Σ g_i‖ <= Σ d_i ‖g_i‖`` over the sum's norm, and the
    same in magnitudes (``d`` is the larger of both kinds of statistic, dtype_noise), plus
    its own roundings: ``k - 1`` additions of ``k`` terms, each at most ``u`` of a partial
    sum, so ``(k - 1) u Σ ‖g_i‖`` (one at least: a cast to the input's dtype), with the
    margin. The terms' ``d`` already hold the rounding their statistics need not show (the
    caller's floor), so §3.1's ``OWN_ROUNDINGS`` is not added again (docs/dtype-aware.md
    §3.2, "A module's input gradient")."""
    additions = max(len(pieces) - 1, 1) * roundoff
    by_norm = sum((d + additions) * norm for d, norm, _scale in pieces) / out_norm
    by_scale = sum((d + additions) * scale for d, _norm, scale in pieces) / out_scale
    return MARGIN * max(by_norm, by_scale)


def allowed_difference(
    inputs: Sequence[Operand],
    hidden: float,
    out_scale: float,
    out_roundoff: float,
    out_numel: int,
    family: Family,
    bound: float = 1.0,
    out_norm: float = 0.0,
) -> tuple[float, float]:
    """(the band of one output, the gain: how many times the default band the op's
    sensitivity makes it, >= 1). ``hidden``: the relative difference of what the node reads
    unseen (a backward's saved forward tensors), added as in the default band."""
    relative = sum(carried(operand, out_roundoff) for operand in inputs) + hidden
    band = default_band(relative, out_roundoff)
    if family is Family.DEFAULT or not inputs:
        return band, 1.0
    sensitive = _sensitive_band(
        inputs, hidden, out_scale, out_roundoff, out_numel, family, bound, out_norm
    )
    if sensitive <= band or not math.isfinite(sensitive):
        return band, 1.0
    return sensitive, sensitive / band


def _absolute(operand: Operand) -> float:
    """An input's absolute difference: its relative one at its magnitude, and at least its
    own rounding there (a bf16 input of magnitude M carries up to M u)."""
    return max(operand.d, operand.roundoff) * operand.scale


def _sensitive_band(
    inputs: Sequence[Operand],
    hidden: float,
    out_scale: float,
    out_roundoff: float,
    out_numel: int,
    family: Family,
    bound: float,
    out_norm: float,
) -> float:
    own = MARGIN * (hidden + OWN_ROUNDINGS * out_roundoff)
    if family is Family.CENTRED_NORM:  # the data is the first input; weights as default
        data, rest = inputs[0], inputs[1:]
        spread = data.rms * data.rms - data.mean * data.mean
        if data.rms <= 0.0 or spread <= 0.0:
            return math.inf  # a constant row: the norm divides by ~0, nothing bounds it
        factor = data.rms / math.sqrt(spread)
        return MARGIN * (max(data.d, data.roundoff) * factor + sum(o.d for o in rest)) + own
    if family is Family.DIVIDE:  # a / b: b's elements near zero amplify its difference
        if len(inputs) < 2:
            return 0.0  # a tensor over a number: relative differences carry over as they are
        numerator, divisor = inputs[0], inputs[1]
        if divisor.smallest <= 0.0:
            return math.inf  # a divisor whose range holds zero: nothing bounds it
        amplified = max(divisor.d, divisor.roundoff) * divisor.scale / divisor.smallest
        return MARGIN * (max(numerator.d, numerator.roundoff) + amplified) + own
    if family is Family.MATMUL or family is Family.ADDED_MATMUL:
        # linear(x, W, b): the first two inputs multiply, a bias adds its own; addmm(C, A, B):
        # the second and third multiply, the first adds
        start = 1 if family is Family.ADDED_MATMUL else 0
        if len(inputs) < start + 2 or out_norm <= 0.0:
            return 0.0
        first, second = inputs[start], inputs[start + 1]
        norms = first.rms * math.sqrt(first.numel) * second.rms * math.sqrt(second.numel)
        if norms <= 0.0:
            return 0.0
        carried_in = max(first.d, first.roundoff) + max(second.d, second.roundoff)
        bias = sum(operand.d for operand in (*inputs[:start], *inputs[start + 2 :]))
        return MARGIN * (carried_in * norms / out_norm + bias) + own
    if family is Family.PRODUCT:
        if len(inputs) != 2 or out_scale <= 0.0:
            return 0.0  # a tensor times a number: relative differences carry over
        first, second = inputs
        spread = first.scale * second.scale / out_scale
        return (
            MARGIN * (max(first.d, first.roundoff) + max(second.d, second.roundoff)) * spread + own
        )
    absolute = sum(_absolute(operand) for operand in inputs)
    if family is Family.EXP:
        return MARGIN * math.expm1(min(absolute, 700.0)) + own
    if family is Family.SOFTMAX:
        return MARGIN * math.expm1(min(2.0 * absolute, 700.0)) + own
    if out_scale <= 0.0:
        return math.inf
    if family is Family.LOG_SOFTMAX:
        return MARGIN * 2.0 * absolute / out_scale + own
    if family is Family.SUM:
        bound = max(inputs[0].numel, 1) / max(out_numel, 1)
    return MARGIN * bound * absolute / out_scale + own


def _finite(value: Stat) -> float | None:
    """A statistic as a float when it is a finite number and no dtype limit (a mask fill is
    no magnitude of the data)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    if not math.isfinite(number) or dtype_limit(number):
        return None
    return number


def operand_of(target: Param, golden: Param, d: float, roundoff: float) -> Operand:
    """One input pair as the band sees it: the golden's figures (the reference), the larger
    magnitude of the two sides."""
    extremes = [
        value
        for value in (
            _finite(target.max),
            _finite(target.min),
            _finite(golden.max),
            _finite(golden.min),
        )
        if value is not None
    ]
    scale = max((abs(value) for value in extremes), default=0.0)
    numel = numel_of(golden.shape)
    norm, mean = _finite(golden.norm), _finite(golden.mean)
    masked = dtype_limit(golden.max) or dtype_limit(golden.min)  # Norm and Mean are the fill's
    rms = norm / math.sqrt(numel) if norm is not None and not masked else 0.0
    high, low = _finite(golden.max), _finite(golden.min)
    smallest = 0.0
    if high is not None and low is not None:
        smallest = low if low > 0.0 else (-high if high < 0.0 else 0.0)
    return Operand(
        d,
        scale,
        roundoff,
        numel,
        rms,
        mean if mean is not None and not masked else 0.0,
        smallest,
    )


def reduced_gradient_band(
    gradients: Sequence[Operand],
    hidden: float,
    saved_scale: float,
    out_scale: float,
    out_roundoff: float,
    out_numel: int,
    family: Family,
    elementwise: bool = False,
) -> tuple[float, float]:
    """(band, gain) of one output gradient of an elementwise sum's or product's backward:
    the sum of k = n_in / n_out terms g (a sum) or g b (a product, b a saved forward operand of
    magnitude ``saved_scale`` whose relative difference is ``hidden``):
    |Δ| <= k (|Δg| |b| + |g| |Δb|). ``elementwise``: a product's backward is bounded so with
    k = 1 too (each gradient element times one saved element, a power's derivative included):
    the elements b magnifies need not be those at g's extremes."""
    relative = sum(carried(operand, out_roundoff) for operand in gradients) + hidden
    band = default_band(relative, out_roundoff)
    largest = max((operand.numel for operand in gradients), default=1)
    reduces = largest > out_numel or (elementwise and family is Family.PRODUCT)
    if family is Family.DEFAULT or not reduces or out_scale <= 0.0:
        return band, 1.0
    terms = max(largest / max(out_numel, 1), 1.0)
    absolute = sum(_absolute(operand) for operand in gradients)
    if family is Family.PRODUCT:
        if saved_scale <= 0.0:
            return band, 1.0
        absolute = saved_scale * (absolute + hidden * sum(o.scale for o in gradients))
    sensitive = MARGIN * terms * absolute / out_scale + MARGIN * OWN_ROUNDINGS * out_roundoff
    if sensitive <= band or not math.isfinite(sensitive):
        return band, 1.0
    return sensitive, sensitive / band


StatKey = tuple[object, ...]


def stat_key(param: Param) -> StatKey:
    """A tensor's identity as the dump shows it: dtype, shape and the four statistics. The
    same tensor read by a later node has the same key (the dumper computes them alike), so a
    consumer finds what a sensitive producer allowed its output (dtype_graph.py)."""
    return (param.dtype, param.shape, param.max, param.min, param.mean, param.norm)


def magnitude(target: Param, golden: Param) -> float:
    """The largest magnitude of a tensor pair's extremes, dtype limits left out (0: none)."""
    found = 0.0
    for value in (target.max, target.min, golden.max, golden.min):
        if isinstance(value, float):
            size = abs(value)
            if size > found and (size < 65000.0 or not dtype_limit(value)):
                found = size  # an inf is a limit: never here
    return found
