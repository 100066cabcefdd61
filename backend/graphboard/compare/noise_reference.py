"""The three-way compare: a noise reference run turns "how much noise is normal" from a model
into a measurement (docs/dtype-aware.md §7 derives the rule and its limits).

The reference R is the golden configuration run in the target's precision and kernels (the
GPU run again in bf16, say). Its nodes are matched to the golden's by the same matching as the
target's, and to the target's by name. Per tensor parameter, ``d_R`` = difference(R, golden),
measured exactly as the target's ``d_T`` = difference(target, golden) (the dtype-aware rules'
own measure), is the noise actually observed; a node introduces an error only where ``d_T``
exceeds what ``d_R``, the inputs' differences beyond their own noise, and the spread of one
rounding explain (:func:`reference_band`). Where R lacks a node or a parameter, the modelled
band judges it (compare/dtype_aware.py).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from graphboard.compare.dtype_noise import (
    row_difference,
    statistics_difference,
    unit_roundoff,
    value_of,
)
from graphboard.compare.dtype_sensitivity import MARGIN
from graphboard.compare.engine import compare_pair, pair_params
from graphboard.compare.layer_mapping import LayerMapping
from graphboard.compare.matching import MatchMode, match_graphs
from graphboard.compare.result import DataMode, ParamRow
from graphboard.dump.records import Param
from graphboard.graph.model import Graph, Node, NodeType

# Roundings a correct target may differ from the reference by beyond the noise R measures:
# each run rounds a result once more at the end, independently (|d_T - d_R| <= 2u for one
# rounding on each side). docs/dtype-aware.md §7.
SPREAD_ROUNDINGS = 2.0

MSG_REF_WITHIN = (
    "pass: d {{d:.3g}} within the band {{band:.3g}} the reference's own d {noise:.3g} and its "
    "inputs' excess explain"
)
MSG_REF_BEYOND = (
    "error: d {{d:.3g}} beyond the band {{band:.3g}} the reference's own d {noise:.3g} and its "
    "inputs' excess explain"
)
MSG_REF_WEIGHT = (
    "error: a parameter differs by d {{d:.3g}}, beyond the {{band:.3g}} the reference's "
    "d {noise:.3g} and one rounding explain"
)
MSG_REF_INPUT = "input: d {{d:.3g}}, the reference's {noise:.3g}"
MSG_REF_ARGUMENT = "argument differs from the golden's ({!r} against {!r}) as the reference's does"


def excess(difference: float, noise: float) -> float:
    """How far a target tensor departs from the golden beyond what the reference's does: what
    a node downstream must explain by propagation, the noise being explained by R itself."""
    return difference - noise if difference > noise else 0.0


def reference_band(noise: float, input_excess: float, roundoff: float) -> float:
    """The largest output ``d_T`` a node's measured noise explains: ``MARGIN`` (the
    condition-number allowance of the modelled band, docs/dtype-aware.md §3) times the
    reference's own difference plus the inputs' differences beyond theirs, and one final
    rounding on each side."""
    return MARGIN * (noise + input_excess) + SPREAD_ROUNDINGS * roundoff


def weight_band(noise: float, roundoff: float) -> float:
    """A weight is made by nothing the dump shows: a correct one is the golden's rounded once,
    as the reference's is, so it may differ by the reference's ``d`` and one rounding."""
    return noise + roundoff


def magnitude(param: Param) -> float | None:
    """A tensor's largest magnitude from its Max and Min; None when they are not finite."""
    high, low = param.max, param.min
    if high.__class__ is float and low.__class__ is float and math.isfinite(high + low):
        return max(high, -low)
    return None


@dataclass(slots=True)
class InputDeparture:
    """The inputs' departures from the reference's, summed as the band propagates them:
    relative (``d`` of each, the modelled band's measure) and absolute (each ``d`` times its
    tensor's magnitude). An output is at least as far off, relative to its own magnitude, as
    the absolute sum over that magnitude: a slice of a gradient, smaller than the whole, holds
    the whole's absolute error in a smaller scale."""

    absolute: float = 0.0

    def add(self, param: Param, departure: float) -> None:
        found = magnitude(param)
        if found is not None:
            self.absolute += departure * found

    def explained(self, output: Param, relative: float) -> float:
        """The departure the inputs carry into ``output``, relative to its magnitude: the
        larger of the relative sum (``relative``: every input's, and what a backward node
        reads unseen) and the absolute one over the output's magnitude."""
        scale = magnitude(output)
        if not scale or self.absolute == 0.0:
            return relative
        carried = self.absolute / scale
        return carried if carried > relative else relative


@dataclass(frozen=True, slots=True)
class ReferenceParam:
    """One tensor parameter of the reference node: its statistics and its measured noise."""

    param: Param
    noise: float | None  # d_R against the golden; None when there is no number


@dataclass(frozen=True, slots=True)
class NodeNoise:
    """What :func:`dtype_aware.judge_node` reads of a node's reference: per tensor parameter
    key its measured ``d_R``, per non-tensor argument the reference's value."""

    differences: dict[str, float]
    arguments: dict[str, object] = field(default_factory=dict)
    params: dict[str, Param] = field(default_factory=dict)  # the reference's tensors

    def noise(self, target: Param, golden: Param) -> float | None:
        """The measured noise a target tensor is judged against: ``d_R``, or 0 where the
        reference's own tensor stands in for the golden's (:meth:`stand_in`)."""
        if golden is self.params.get(target.key):
            return 0.0
        return self.differences.get(target.key)

    def stand_in(self, target: Param) -> Param | None:
        """The reference's tensor, when it differs from the golden's structurally (dtype,
        shape) just as the target's does: the configuration's difference (a kernel whose calls
        pair other tensors, a dtype the precision gives), not the target's. The target is then
        judged against the reference's tensor, the golden's being no measure of it."""
        counterpart = self.params.get(target.key)
        if (
            counterpart is None
            or counterpart.dtype != target.dtype
            or counterpart.shape != target.shape
        ):
            return None
        return counterpart

    def spread_roundoff(self, target: Param, roundoff: float) -> float:
        """The unit roundoff of the final rounding a correct target shares with the
        reference: the reference's tensor's dtype (the configuration's precision); where the
        target holds a narrower dtype than the reference's, its extra rounding is a departure,
        not noise (an op the configuration keeps in fp32 run in bf16). ``roundoff`` (the
        target's against the golden's) where the reference's dtype is unknown."""
        counterpart = self.params.get(target.key)
        found = unit_roundoff(counterpart.dtype) if counterpart is not None else None
        return found if found is not None else roundoff

    def departure(self, param: Param, difference: float) -> float:
        """How far the target's tensor ``param`` (``d_T`` = ``difference``) departs from the
        reference's: their own ``d`` from the two sides' statistics, a direct measure, and at
        least ``d_T - d_R`` (by the triangle inequality, up to the scales, the same bound; it
        stands alone where the reference's statistics are not numbers). This is what a node
        downstream must explain by propagation: the rest is the noise R shows too. Where
        ``d_T`` and ``d_R`` are set by different statistics (R's Max, the target's Mean, say)
        their difference alone would understate it."""
        found = excess(difference, self.differences.get(param.key, 0.0))
        counterpart = self.params.get(param.key)
        if counterpart is not None:
            direct = statistics_difference(param, counterpart)
            if direct is not None and direct > found:
                found = direct
        return found

    def same_argument(self, key: str, value: object) -> bool:
        """The reference passed this argument the target's value: a difference from the
        golden's that the configuration (precision, kernels) makes, not the target (a
        dtype's own limit as a mask fill, an attention mask a kernel takes as None)."""
        if key not in self.arguments:
            return False
        return _plain(self.arguments[key]) == _plain(value)


def explains_argument(noise: NodeNoise, row: ParamRow) -> bool:
    """An argument the target passes unlike the golden, and the reference like the target."""
    return row.target is not None and noise.same_argument(row.target.key, value_of(row.target))


def argument_note(row: ParamRow) -> str:
    """Why an argument that differs from the golden's passes: the reference differs alike."""
    assert row.target is not None and row.golden is not None
    return MSG_REF_ARGUMENT.format(value_of(row.target), value_of(row.golden))


def _plain(value: object) -> object:
    """A value as JSON gives it back (tuples as lists), so a stored reference compares as
    the build's did."""
    return json.loads(json.dumps(value, default=str))


@dataclass(frozen=True, slots=True)
class ReferenceNode:
    golden: str  # the golden node the reference's was matched to
    params: dict[str, ReferenceParam]  # tensor parameters, by key
    arguments: dict[str, object] = field(default_factory=dict)  # non-tensor ones' values

    def noise(self) -> NodeNoise:
        differences = {
            key: found.noise for key, found in self.params.items() if found.noise is not None
        }
        params = {key: found.param for key, found in self.params.items()}
        return NodeNoise(differences, self.arguments, params)


@dataclass(slots=True)
class NoiseReference:
    """The reference's measured noise per node, by the node's name (the target's)."""

    nodes: dict[str, ReferenceNode] = field(default_factory=dict)

    def noise_of(self, name: str) -> NodeNoise | None:
        found = self.nodes.get(name)
        return found.noise() if found is not None else None


def measure(
    reference: Graph,
    golden: Graph,
    mode: DataMode,
    match_mode: MatchMode = MatchMode.DEFAULT,
    mapping: LayerMapping | None = None,
) -> NoiseReference:
    """Match ``reference`` to ``golden`` as the target is matched and measure each matched
    tensor parameter's ``d_R``. The pairing is undone afterwards: the golden's ``counterpart``
    is the target's, set by the target's matching after this."""
    result = NoiseReference()
    if mode in (DataMode.STRUCTURE, DataMode.MD5):
        return result  # nothing to measure: md5 is not judged, structure not scored
    match_graphs(reference, golden, match_mode, mapping)
    try:
        for node in reference.nodes.values():
            other = node.counterpart
            if other is None or node.type is NodeType.API_COLLECTION:
                continue
            found = _measure_node(node, other, mode, reference, golden)
            if found is not None:
                result.nodes[node.name] = found
    finally:
        _unpair(reference.nodes.values())
        _unpair(golden.nodes.values())
    return result


def _measure_node(
    node: Node, golden: Node, mode: DataMode, reference: Graph, golden_graph: Graph
) -> ReferenceNode | None:
    if node.params is None:
        return None
    if mode is DataMode.TENSOR:  # d_R from the tensors, as the target's d_T: their metrics
        comparison = compare_pair(node, golden, mode, reference.tensor_dir, golden_graph.tensor_dir)
        rows = comparison.rows if comparison is not None else []
    else:  # statistics: d_R needs no metrics, msprobe's or other
        rows = pair_params(node.params, golden.params or [])
    params: dict[str, ReferenceParam] = {}
    arguments: dict[str, object] = {}
    for row in rows:
        param, counterpart = row.target, row.golden
        if param is None:
            continue
        if counterpart is None or not (param.is_tensor and counterpart.is_tensor):
            arguments[param.key] = value_of(param)
            continue
        params[param.key] = ReferenceParam(param, row_difference(row, mode))
    return ReferenceNode(golden.name, params, arguments)


def _unpair(nodes: Iterable[Node]) -> None:
    for node in nodes:
        node.counterpart = None
