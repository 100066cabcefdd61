"""The dtype-aware rule set: does a node's difference exceed what its dtypes and inputs explain?

msprobe's rules (compare/rules.py) flag every bf16 node against fp32; these judge each
parameter against the noise band its dtypes imply and the difference already in the node's
inputs, and say whether the node *introduces* an error. docs/dtype-aware.md derives the band
and the margin. Pure functions of scored rows (compare/engine.py computes the metrics once,
for both rule sets).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum

from graphboard.compare import noise_reference as three_way
from graphboard.compare.dtype_noise import (
    DtypeRelation,
    dtype_facts,
    dtype_relation,
    row_difference,
    same_limit,
    statistics_difference,
    underflow_rounding,
    unit_roundoff,
    value_of,
)
from graphboard.compare.dtype_peers import PeerInputs, peer_band
from graphboard.compare.dtype_sensitivity import MARGIN as MARGIN
from graphboard.compare.dtype_sensitivity import OWN_ROUNDINGS as OWN_ROUNDINGS
from graphboard.compare.dtype_sensitivity import (
    POWER_BY_ARGUMENT,
    Family,
    Inside,
    Operand,
    StatKey,
    allowed_difference,
    backward_family,
    default_band,
    derivative_bound,
    derivative_spread,
    family_of,
    input_range,
    magnitude,
    multiplies_elementwise,
    operand_of,
    reduced_gradient_band,
    stat_key,
)
from graphboard.compare.result import DataMode, ParamRow
from graphboard.compare.rules import IGNORE_ALL, IGNORE_INPUTS, api_name
from graphboard.dump.records import Param, Role


class Verdict(IntEnum):
    """A node's (or parameter's) dtype-aware outcome; the codes gb_arrays stores."""

    PASS = 0
    WARNING = 1
    ERROR = 2
    NOT_JUDGED = 3  # md5 mode: checksums carry no numbers to judge against a noise band

    @property
    def label(self) -> str:
        return self.name.lower().replace("_", " ")


@dataclass(frozen=True, slots=True)
class ParamVerdict:
    """One parameter: its measured difference, the band it is judged against, and why."""

    key: str
    is_output: bool
    verdict: Verdict
    difference: float | None  # d (dtype_noise), None when there is no number
    band: float | None  # the largest d noise explains: own roundoff (inputs), or the
    # inputs' differences and own rounding with the margin (outputs)
    why: str  # the reason, with ``{d}`` and ``{band}`` for the numbers: formatted on demand
    introduces: bool = False  # an error that arises at this node, not one carried in

    @property
    def reason(self) -> str:
        return self.why.format(d=self.difference, band=self.band)


@dataclass(slots=True)
class NodeVerdict:
    verdict: Verdict
    introduced: bool  # the node's own error, not one its inputs carry in
    input_difference: float  # sum of the input tensors' d (and of what the node reads unseen)
    output_difference: float  # the largest output d
    params: tuple[ParamVerdict, ...]
    deciding: ParamVerdict | None = None  # the parameter the verdict comes from
    note: str = ""  # a reason of the node's own (md5, ignored APIs)
    gain: float = 1.0  # how many times the default band its ops' sensitivity made the band
    roundoff: float = 0.0  # the largest unit roundoff among its tensors
    scale: float = 0.0  # the largest magnitude of its inputs (sensitive families only)
    allowed_out: tuple[tuple[StatKey, float], ...] = ()  # outputs a sensitivity widened
    excess: float = 0.0  # band_excess: how many times its band the node's own difference is
    # an elementwise power (forward): its input's largest over smallest magnitude, and how far
    # its derivative varies over that range (dtype_sensitivity.derivative_spread), for its
    # backward; 1 for any other node
    input_range: float = 1.0
    spread: float = 1.0

    @property
    def reason(self) -> str:
        if self.deciding is None:
            return self.note or "nothing to judge"
        reason = self.deciding.reason
        if self.verdict is Verdict.ERROR and not self.introduced:
            return f"{MSG_CARRIED}: {reason}"
        return reason


MSG_DTYPE = "error: dtypes differ and mixed precision does not explain it ({} against {})"
MSG_SHAPE = (
    "warning: shapes differ: another call (a kernel swap renumbers the calls it leaves out) "
    "or the same call on other shapes, not judged by its numbers"
)
MSG_OVERFLOW = "error: the target holds inf or nan where the golden is finite"
MSG_SCALAR = "error: arguments differ ({!r} against {!r})"  # formatted at once: no {d} in it
MSG_ABSENT = (
    "note: an argument given on one side only ({} against {}): a difference of call, "
    "not of arithmetic"
)
MSG_REQUESTED = (
    "error: computed in {} where the golden's call asks for {} (its dtype argument): a "
    "narrower precision than the call states, which no rounding of its inputs explains"
)
MSG_LIMIT = "pass: the same dtype limit ({!r} against {!r}), a constant of each dtype"
MSG_ONLY = "warning: parameter only in the {}"
MSG_NO_NUMBERS = "warning: statistics that are not numbers cannot be judged"
MSG_MD5 = "not judged: md5 mode holds checksums, no numbers to set against a noise band"
MSG_WITHIN = "pass: d {d:.3g} within the band {band:.3g} its inputs and own rounding explain"
MSG_BEYOND = "error: d {d:.3g} beyond the band {band:.3g} its inputs and own rounding explain"
MSG_PEERS = (
    "warning: d {d:.3g} beyond the band {band:.3g} this rank's inputs explain: a collective's "
    "output also holds other ranks' inputs, which come from outside this rank's dump (the "
    "cross-rank links check them), not an error this op introduces"
)
MSG_PEERS_WITHIN = (
    "pass: d {d:.3g} within the band {band:.3g} its group's inputs on every rank and the "
    "reduction's rounding explain"
)
MSG_PEERS_BEYOND = (
    "error: d {d:.3g} beyond the band {band:.3g} its group's inputs on every rank and the "
    "reduction's rounding explain: the communication itself changed the data"
)
MSG_CARRIED = "carried in by an input"
MSG_INPUT = "input: d {d:.3g} against its own roundoff {band:.3g}"
MSG_WEIGHT = "error: a parameter differs by d {d:.3g}, beyond the {band:.3g} its rounding explains"
MSG_ENTERS = (
    "error: an input no recorded node made (a buffer, or a tensor from outside the dump) "
    "differs by d {d:.3g}, beyond the {band:.3g} that rounding and the run's differences "
    "before it explain"
)


# msprobe names torch.distributed's calls ``Distributed.<api>.<n>.<direction>``. Every one
# that returns data returns what the group sent it (a reduction of every member's input, a
# gathered or broadcast tensor, a received one); a point-to-point send returns nothing of
# another rank's.
_COLLECTIVE_PREFIX = "Distributed."
_SENDS_ONLY = frozenset({"send", "isend"})


def takes_other_ranks(node_name: str) -> bool:
    """Whether the node is a communication op whose outputs hold other ranks' inputs, which
    no input of its own record explains (docs/dtype-aware.md, "Collectives")."""
    return node_name.startswith(_COLLECTIVE_PREFIX) and api_name(node_name) not in _SENDS_ONLY


def _finite_pair(param: Param) -> bool:
    """Max and Min finite (or not numbers at all: the text-statistics warning says so)."""
    return not any(
        value.__class__ is float and not math.isfinite(value) for value in (param.max, param.min)
    )


def _presence_or_argument(row: ParamRow) -> tuple[Verdict, str, bool]:
    """(verdict, reason, arises here) of a row that is not two tensors: a parameter on one
    side only, or an argument (a scalar, a string) whose values must agree."""
    target, golden = row.target, row.golden
    if target is None or golden is None:
        present = golden if target is None else target
        if present is not None and present.is_null:  # None on one side, nothing on the other
            return Verdict.PASS, "None on one side only: nothing to pair", False
        side = "golden" if target is None else "target"
        return Verdict.WARNING, MSG_ONLY.format(side), False
    if target.is_null != golden.is_null:  # None on one side: how the op was called
        value = value_of(golden if target.is_null else target)
        shown = "a tensor" if (golden if target.is_null else target).is_tensor else repr(value)
        pair = ("None", shown) if target.is_null else (shown, "None")
        return Verdict.PASS, MSG_ABSENT.format(*pair), False
    target_value, golden_value = value_of(target), value_of(golden)
    if target_value != golden_value and not row.is_output:
        if same_limit(target_value, golden_value):  # type: ignore[arg-type]
            return Verdict.PASS, MSG_LIMIT.format(target_value, golden_value), False
        return Verdict.ERROR, MSG_SCALAR.format(target_value, golden_value), True
    return Verdict.PASS, "argument agrees", False


def requested_dtype(param: Param | None) -> str | None:
    """The dtype a call asks the op to compute in, when ``param`` is its argument of type
    ``torch.dtype`` (softmax's, a reduction's ``dtype=``); None for any other."""
    if param is None or param.type != "torch.dtype" or param.role is not Role.INPUT:
        return None
    value = value_of(param)
    return value if isinstance(value, str) else None


def below_request(
    target: Param, golden: Param, requested: str, reference: three_way.NodeNoise | None
) -> str | None:
    """Why an output is an error of the call's precision, or None: the target's output is
    narrower than the dtype the golden's call asks for, where that argument did set the
    golden's output (docs/dtype-aware.md §3.3). A migration changes the data's dtype, and an
    op's output follows its inputs' except where the call pins it: a pinned op returns the
    pinned dtype in any faithful target. A reference (-nr) whose own output is as narrow
    says the configuration computes it so."""
    asked, held = unit_roundoff(requested), unit_roundoff(target.dtype)
    if asked is None or held is None or held <= asked:
        return None
    if dtype_relation(golden.dtype, requested) is not DtypeRelation.SAME:
        return None  # the argument is not what set the golden's output dtype
    if reference is not None and reference.stand_in(target) is not None:
        return None
    return MSG_REQUESTED.format(target.dtype, requested)


def _tensor_problem(target: Param, golden: Param, explained: bool) -> str | None:
    """Why two tensors cannot be judged by their numbers: a dtype pair mixed precision does
    not explain, differing shapes, an overflow (inf / NaN where the golden is finite)."""
    if not explained:
        return MSG_DTYPE.format(target.dtype, golden.dtype)
    if target.shape != golden.shape:
        return MSG_SHAPE
    high, low = target.max, target.min
    if high.__class__ is float and low.__class__ is float and _isfinite(high) and _isfinite(low):
        return None  # nearly always: a finite target has no overflow to judge
    if (
        _finite_pair(golden)
        and not _finite_pair(target)
        and not (same_limit(target.max, golden.max) or same_limit(target.min, golden.min))
    ):
        return MSG_OVERFLOW
    return None


_isfinite = math.isfinite
_EXPONENT_KEYS = frozenset({"input.1", "input.exponent"})  # pow(x, 2), pow(x, exponent=2)


# One judged parameter while a node is judged: (row, is_output, verdict, d, band, why, own).
_Entry = tuple[ParamRow, bool, Verdict, float | None, float | None, str, bool]


def judge_node(
    node_name: str,
    rows: list[ParamRow],
    mode: DataMode,
    hidden_difference: float = 0.0,
    explain: bool = True,
    inside: Inside | None = None,
    allowed_in: Mapping[StatKey, float] | None = None,
    upstream: float = 0.0,
    eager: bool = False,
    reference: three_way.NodeNoise | None = None,
    peers: PeerInputs | None = None,
    entering: Mapping[StatKey, float] | None = None,
) -> NodeVerdict | None:
    """The dtype-aware verdict of one scored node (None without rows, as msprobe's).

    ``hidden_difference``: the ``d`` of what the node reads besides its dumped inputs (a
    backward node's saved forward tensors: dtype_graph.py), added to its inputs'. Without
    ``explain`` the verdict carries no per-parameter detail (the build stores only the
    node's verdict; the detail panel asks again with it). ``inside``: what the graph knows
    beyond the rows (dtype_sensitivity.Inside: a module's inner dtype and gain, a backward's
    twin's gain and saved magnitudes). ``allowed_in``: per tensor (stat_key), what a
    sensitive producer allowed it to differ by; an input found there carries that much.
    ``upstream``: the largest unit roundoff of the target's tensors made before this node
    (forward: in execution order; backward: the whole forward's): an input may hold that
    rounding at its magnitude though both its sides are wider (an fp32 residual stream after
    a bf16 matmul under autocast), which its statistics need not show. The sensitive band is
    worked only where the default band does not explain an output, unless ``eager`` (the
    graph asks for a node's gain when a module or backward relying on it fails). ``reference``: a noise
    reference run's measured ``d`` per parameter key and its arguments
    (compare/noise_reference.py): where given, a parameter is judged against that measured
    noise instead of the modelled band, the node's input and output differences are those
    beyond the reference's, and an argument the reference passed as the target did is no
    error. ``peers``: a collective's inputs on every rank of its call, where the file links
    them (compare/dtype_peers.py): an output its own inputs do not explain is judged against
    the band they give, not left a warning. ``entering``: per input tensor (stat_key) that
    no node recorded before this one made (dtype_graph.py: a buffer, the run's data, or a
    view an unrecorded op made), the largest difference the run showed before it: beyond
    ``MARGIN`` times that or its rounding, the difference enters the run here (§3.3)."""
    if not rows:
        return None
    if reference is not None:
        departing = three_way.InputDeparture()
    if mode is DataMode.MD5:
        params = tuple(
            ParamVerdict(_key(row), row.is_output, Verdict.NOT_JUDGED, None, None, MSG_MD5)
            for row in rows
        )
        return NodeVerdict(Verdict.NOT_JUDGED, False, 0.0, 0.0, params, note=MSG_MD5)
    name = api_name(node_name)
    if name in IGNORE_ALL:  # uninitialised buffers and conversions: nothing to judge
        return NodeVerdict(Verdict.PASS, False, 0.0, 0.0, (), note="an API neither rule set judges")
    skip_inputs = name in IGNORE_INPUTS
    if ".backward" in node_name:  # a derivative: its twin's gain, or a reducing gradient
        family, bound, reducing = Family.DEFAULT, 1.0, backward_family(name)
    else:
        (family, bound), reducing = family_of(name), Family.DEFAULT
    sensitive_op = family is not Family.DEFAULT or reducing is not Family.DEFAULT
    from_peers = takes_other_ranks(node_name)
    entries: list[_Entry] = []
    # (row, d, roundoff, the reference's d), after the inputs
    outputs: list[tuple[ParamRow, float, float, float | None]] = []
    tensors: list[tuple[Param, Param, float, float]] = []  # inputs: (t, g, d, rounding held)
    context = inside or _OUTSIDE
    reweight = context.spread  # a power's backward: how far its derivative varies
    input_difference = hidden_difference
    held = 0.0  # the largest rounding an input holds
    widest = 0.0  # the largest unit roundoff among the node's tensors
    carried = False  # an input already fails structurally (overflow, dtype, shape)
    requested: str | None = None  # the dtype the golden's call asks for, if it names one
    powers = name in POWER_BY_ARGUMENT and ".backward" not in node_name
    exponent: object = None  # a power's exponent argument (forward)
    for row in rows:
        target, golden = row.target, row.golden
        is_output = (target or golden).role is Role.OUTPUT  # type: ignore[union-attr]
        if skip_inputs and not is_output:
            continue
        if target is None or golden is None or not (target.is_tensor and golden.is_tensor):
            if requested is None:  # an op the golden's call pins to a dtype
                requested = requested_dtype(golden)
            if powers and golden is not None and golden.key in _EXPONENT_KEYS:
                exponent = value_of(golden)
            verdict, reason, own = _presence_or_argument(row)
            if own and reference is not None and three_way.explains_argument(reference, row):
                verdict, reason, own = Verdict.PASS, three_way.argument_note(row), False
            why = reason.replace("{", "{{").replace("}", "}}")  # its numbers are in the text
            entries.append((row, is_output, verdict, None, None, why, own))
            continue
        explained, roundoff = dtype_facts(target.dtype, golden.dtype)
        if roundoff > widest:
            widest = roundoff
        problem = _tensor_problem(target, golden, explained)
        if problem is not None and reference is not None:  # -nr: the configuration's?
            stand_in = reference.stand_in(target)
            if stand_in is not None and _tensor_problem(
                stand_in, golden, dtype_facts(stand_in.dtype, golden.dtype)[0]
            ):  # R differs from the golden too: judged against R's tensor (d_R then 0)
                row, golden, problem = ParamRow(target, stand_in), stand_in, None
                explained, roundoff = dtype_facts(target.dtype, golden.dtype)
        if problem is MSG_SHAPE:  # two different calls paired by their count: no numbers
            entries.append((row, is_output, Verdict.WARNING, None, None, problem, False))
            continue
        if problem is not None:
            entries.append((row, is_output, Verdict.ERROR, None, None, problem, is_output))
            carried = carried or not is_output
            continue
        difference = (
            row_difference(row, mode)
            if mode is not DataMode.SUMMARY
            else statistics_difference(target, golden)
        )
        if difference is None:
            difference = row_difference(row, mode)  # equal text or bool statistics: 0
        if difference is None:
            entries.append((row, is_output, Verdict.WARNING, None, None, MSG_NO_NUMBERS, False))
        elif is_output:
            noise = reference.noise(target, golden) if reference is not None else None
            outputs.append((row, difference, roundoff, noise))
        elif reference is not None and (noise := reference.noise(target, golden)) is not None:
            departure = reference.departure(target, difference)
            input_difference += departure
            departing.add(target, departure)
            band = three_way.weight_band(noise, roundoff)
            if target.role is Role.PARAMETERS and difference > band:
                why = three_way.MSG_REF_WEIGHT.format(noise=noise)
                entries.append((row, False, Verdict.ERROR, difference, band, why, True))
            elif explain:
                why = three_way.MSG_REF_INPUT.format(noise=noise)
                entries.append((row, False, Verdict.PASS, difference, noise, why, False))
        else:
            measured = difference
            identity = stat_key(target)  # the tensor, as the graph's maps name it
            if allowed_in:  # what a sensitive producer allowed this tensor, when larger
                allowed = allowed_in.get(identity)
                if allowed is not None and allowed > difference:
                    difference = allowed
            # a power's backward: the derivative reweights the incoming gradient, whose
            # relative difference grows by up to the derivative's spread (dtype_sensitivity)
            input_difference += difference * reweight
            holds = roundoff if roundoff >= upstream else upstream
            if holds > held:
                held = holds
            tensors.append((target, golden, difference, holds))
            before = entering.get(identity) if entering else None
            if target.role is Role.PARAMETERS and difference > MARGIN * roundoff:
                # a weight is made by nothing the dump shows: beyond one rounding, it is
                # this node's error
                band = MARGIN * roundoff
                entries.append((row, False, Verdict.ERROR, difference, band, MSG_WEIGHT, True))
            elif before is not None and measured > MARGIN * max(holds, before):
                # made by no recorded node: a view carries at most what the run shows so far
                band = MARGIN * max(holds, before)
                entries.append((row, False, Verdict.ERROR, measured, band, MSG_ENTERS, True))
            elif explain:  # a passing input: only the detail panel lists it
                entries.append((row, False, Verdict.PASS, difference, roundoff, MSG_INPUT, False))
    largest_output = 0.0
    within = 0.0  # the largest d / band of an output inside its band (band_excess)
    gain = 1.0
    sensitive: list[tuple[StatKey, float]] = []
    operands: list[Operand] | None = None
    inner_roundoff, inner_gain = context.roundoff, context.gain
    for row, difference, roundoff, noise in outputs:
        if requested is not None:
            assert row.target is not None and row.golden is not None
            narrower = below_request(row.target, row.golden, requested, reference)
            if narrower is not None:
                if difference > largest_output:
                    largest_output = difference
                entries.append((row, True, Verdict.ERROR, None, None, narrower, True))
                continue
        if noise is not None:  # measured noise (compare/noise_reference.py)
            assert reference is not None and row.target is not None
            propagated = departing.explained(row.target, input_difference)
            spread = reference.spread_roundoff(row.target, roundoff)
            band = three_way.reference_band(noise, propagated, spread)
            departure = reference.departure(row.target, difference)
            if departure > largest_output:
                largest_output = departure
            if difference <= band:
                if band > 0.0 and difference > within * band:
                    within = difference / band
                if explain:
                    why = three_way.MSG_REF_WITHIN.format(noise=noise)
                    entries.append((row, True, Verdict.PASS, difference, band, why, False))
            else:
                why = three_way.MSG_REF_BEYOND.format(noise=noise)
                entries.append((row, True, Verdict.ERROR, difference, band, why, True))
            continue
        out_roundoff = roundoff if roundoff >= inner_roundoff else inner_roundoff
        relative = input_difference
        if held > out_roundoff:  # an input narrower than the output holds its rounding
            relative += sum(
                holds - d for _t, _g, d, holds in tensors if holds > out_roundoff and holds > d
            )
        # its own roundings, and below the dtype's smallest normal their absolute part
        # (dtype_noise.underflow_rounding; 0 but for tensors near fp16's subnormals)
        assert row.target is not None and row.golden is not None
        own_roundoff = out_roundoff + underflow_rounding(row.target, row.golden)
        band = default_band(relative, own_roundoff) * inner_gain
        found_gain = 1.0
        if sensitive_op and (difference > band or eager):
            # where the default band does not explain the output (or its gain is asked for):
            # the op's sensitivity
            if operands is None:
                operands = [operand_of(t, g, d, holds) for t, g, d, holds in tensors]
            out = operand_of(row.target, row.golden, difference, roundoff)
            if reducing is not Family.DEFAULT:
                band, found_gain = reduced_gradient_band(
                    operands,
                    hidden_difference,
                    context.saved_scale,
                    out.scale,
                    own_roundoff,
                    out.numel,
                    reducing,
                    multiplies_elementwise(name),
                )
            else:
                band, found_gain = allowed_difference(
                    operands,
                    hidden_difference,
                    out.scale,
                    own_roundoff,
                    out.numel,
                    family,
                    bound,
                    out.rms * math.sqrt(out.numel),
                )
            band *= inner_gain
            if found_gain > 1.0:
                # the first-order estimate of how far the output may really differ, for the
                # nodes that read it: its statistics can show far less (dtype_graph.py)
                sensitive.append((stat_key(row.target), band / MARGIN))
        elif inner_gain > 1.0 and row.target is not None:
            # a module whose band its ops' sensitivity widened: its outputs may differ by
            # that much, which the nodes reading them (outside it) may carry
            sensitive.append((stat_key(row.target), band / MARGIN))
        if found_gain > gain:
            gain = found_gain
        if difference > largest_output:
            largest_output = difference
        if difference <= band:
            if band > 0.0 and difference > within * band:
                within = difference / band
            if explain:
                entries.append((row, True, Verdict.PASS, difference, band, MSG_WITHIN, False))
        elif from_peers:  # the rest may be other ranks' difference: not this op's own
            assert row.target is not None and row.golden is not None
            group = peer_band(peers, row.target, row.golden, roundoff) if peers else None
            if group is None:  # the other ranks' inputs are not in the file
                entries.append((row, True, Verdict.WARNING, difference, band, MSG_PEERS, False))
            elif difference <= group:
                if difference > within * group:
                    within = difference / group
                if explain:
                    why = MSG_PEERS_WITHIN
                    entries.append((row, True, Verdict.PASS, difference, group, why, False))
            else:
                why = MSG_PEERS_BEYOND
                entries.append((row, True, Verdict.ERROR, difference, group, why, True))
        else:
            entries.append((row, True, Verdict.ERROR, difference, band, MSG_BEYOND, True))
    found = _node_of(entries, input_difference, largest_output, carried, explain, within)
    # its own ops' gain, and what it took from inside it or from its twin
    found.gain, found.roundoff = max(gain, inner_gain), widest
    if family is Family.DIVIDE or (family is Family.PRODUCT and len(tensors) > 1):
        # what its backward reads (a tensor times a number: the number, not known here)
        found.scale = max((magnitude(t, g) for t, g, _d, _h in tensors), default=0.0)
    elif exponent is not None and tensors:  # a power's backward reads its derivative
        found.scale = derivative_bound(exponent, magnitude(tensors[0][0], tensors[0][1]))
    found.allowed_out = tuple(sensitive)
    if tensors and ".backward" not in node_name:  # what a power's backward reads of it
        found.input_range = input_range(name, tensors[0][0], tensors[0][1])
        found.spread = derivative_spread(name, found.input_range)
    return found


_OUTSIDE = Inside()


def output_band(input_difference: float, roundoff: float) -> float:
    """The largest output ``d`` a well-conditioned node's inputs and own rounding explain."""
    return default_band(input_difference, roundoff)


def _node_of(
    entries: list[_Entry],
    input_difference: float,
    largest_output: float,
    carried: bool,
    explain: bool,
    within: float = 0.0,
) -> NodeVerdict:
    verdict = Verdict.PASS
    introducing: int | None = None
    for position, (_row, is_output, found, _d, _band, _why, own) in enumerate(entries):
        if found > verdict:
            verdict = found
        # an output's error (an overflow, say) that an input already shows arose before
        if own and introducing is None and not (carried and is_output):
            introducing = position
    excess = band_excess(entries, introducing, within)
    if not explain:
        return NodeVerdict(
            verdict, introducing is not None, input_difference, largest_output, (), excess=excess
        )
    params = tuple(
        ParamVerdict(_key(row), is_output, found, d, band, why, own and not (carried and is_output))
        for row, is_output, found, d, band, why, own in entries
    )
    deciding = (
        params[introducing]
        if introducing is not None
        else next((param for param in params if param.verdict is verdict), None)
    )
    return NodeVerdict(
        verdict,
        introducing is not None,
        input_difference,
        largest_output,
        params,
        deciding,
        excess=excess,
    )


def band_excess(entries: list[_Entry], introducing: int | None, within: float = 0.0) -> float:
    """How many times its band the node's own difference is: the largest ``d / band`` over
    its outputs and the inputs it reads unexplained (a weight), infinite where it introduces
    an error no number measures (arguments, dtypes, an overflow). At most 1 unless the node
    introduces an error: a difference carried in is its inputs', not the node's. Trends'
    default statistic (docs/dtype-aware.md §4): it is > 1 exactly where the viewer's
    dtype-aware verdict says an error starts, and is graded where msprobe's relative errors
    of near-zero statistics are not. ``within``: the largest ratio of the outputs inside their
    band, which the fast path (no explanation) keeps no entry of."""
    worst = within
    for _row, is_output, _found, d, band, _why, own in entries:
        if (is_output or own) and d is not None and band is not None and band > 0.0:
            ratio = d / band if math.isfinite(d) else math.inf
            if ratio > worst:
                worst = ratio
    if introducing is None:
        return min(worst, 1.0)
    if entries[introducing][3] is None:  # an argument, a dtype: no number says how far
        return math.inf
    return worst


def _key(row: ParamRow) -> str:
    param = row.target or row.golden
    assert param is not None
    return param.key
