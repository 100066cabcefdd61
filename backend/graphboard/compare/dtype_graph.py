"""The dtype-aware verdicts of a whole target graph, at build time, beside msprobe's.

Per node :func:`dtype_aware.judge_node`, with two facts only the graph knows: what a backward
node reads besides its dumped inputs (its forward twin's tensors, saved for the gradient),
and that an error a node inside a module introduces is the module's too (the module's own
verdict becomes a warning that points inside, so the first introduced error is the deepest
node where it arises). API collections take their worst child's verdict, as in msprobe's set.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from graphboard.compare.dtype_aware import NodeVerdict, Verdict, judge_node
from graphboard.compare.dtype_context import (
    RuleContext,
    beyond_gradient_sum,
    by_param_key,
)
from graphboard.compare.dtype_noise import dtype_facts, numel_of, statistics_difference
from graphboard.compare.dtype_sensitivity import (
    Inside,
    StatKey,
    derivative_condition,
    gradient_sum_band,
    magnitude,
    stat_key,
)
from graphboard.compare.engine import api_collections
from graphboard.compare.result import DataMode, ParamRow
from graphboard.compare.rules import IGNORE_ALL, api_name
from graphboard.dump.records import Param, Role
from graphboard.graph.model import Graph, Node, NodeType

if TYPE_CHECKING:
    from graphboard.compare.noise_reference import NoiseReference

RULE_SET = "dtype-aware"


@dataclass(slots=True)
class GraphVerdicts:
    """Per target node name: its dtype-aware verdict, and whether it introduces an error."""

    mode: DataMode
    verdict: dict[str, Verdict] = field(default_factory=dict)
    introduced: set[str] = field(default_factory=set)
    reference: NoiseReference | None = None  # the noise reference (-nr) judged against
    excess: dict[str, float] = field(default_factory=dict)  # NodeVerdict.excess, per node
    # per introducing node, the graph facts it was judged with (compare/dtype_context.py)
    context: dict[str, RuleContext] = field(default_factory=dict)


def forward_twin(name: str) -> str | None:
    """The forward node of a backward one: ``X.7.backward`` -> ``X.7.forward`` (APIs),
    ``M.backward.0`` -> ``M.forward.0`` (modules); None for any other name."""
    return _other_direction(name, ".backward", ".forward")


def backward_twin(name: str) -> str | None:
    """The backward node of a forward one (:func:`forward_twin` the other way)."""
    return _other_direction(name, ".forward", ".backward")


def _other_direction(name: str, direction: str, other: str) -> str | None:
    head, dot, tail = name.rpartition(direction)
    if not dot or (tail and not tail[1:].isdigit()):
        return None
    return f"{head}{other}{tail}"


def _judged(
    node: Node,
    mode: DataMode,
    hidden: float,
    inside: Inside | None,
    allowed: dict[StatKey, float],
    upstream: float,
    eager: bool = False,
    reference: NoiseReference | None = None,
    entering: dict[StatKey, float] | None = None,
    kept: dict[str, RuleContext] | None = None,
) -> NodeVerdict | None:
    """judge_node with the graph's facts; ``kept``: where an introducing node's facts go
    (the last judgement of a node is the one kept)."""
    if allowed and api_name(node.name) in IGNORE_ALL:  # a cast passes its input's on
        tensors = [param for param in node.params or () if param.is_tensor]
        inputs = [param for param in tensors if param.role is not Role.OUTPUT]
        passed = allowed.get(stat_key(inputs[0])) if inputs else None
        if passed is not None:
            for param in tensors:
                if param.role is Role.OUTPUT:
                    allowed[stat_key(param)] = passed
    comparison = node.comparison
    if comparison is None:
        return None
    noise = reference.noise_of(node.name) if reference is not None else None
    found = judge_node(
        node.name,
        comparison.rows,
        mode,
        hidden,
        False,
        inside,
        allowed,
        upstream,
        eager,
        reference=noise,
        entering=entering,
    )
    if found is None:
        return None
    if kept is not None:
        if found.introduced:
            kept[node.name] = RuleContext(
                hidden,
                upstream,
                inside,
                by_param_key(node.params, allowed),
                by_param_key(node.params, entering or {}),
            )
        else:
            kept.pop(node.name, None)
    for key, value in found.allowed_out:
        allowed[key] = value
    return found


def read_unseen(verdict: NodeVerdict) -> float:
    """What a forward node leaves for its backward: its inputs' and outputs' differences."""
    return verdict.input_difference + verdict.output_difference


def twin_hidden(api: str, twin: NodeVerdict) -> float:
    """What a backward node reads unseen of its forward ``twin``: the twin's inputs and
    outputs, the inputs counted as often as the derivative's condition makes them
    (dtype_sensitivity.derivative_condition), and for an elementwise power at the element
    where the input is smallest: its relative difference there is up to the input's
    range (``input_range``, largest over smallest magnitude) times its ``d`` at its scale."""
    condition = derivative_condition(api) * twin.input_range
    return read_unseen(twin) + (condition - 1.0) * twin.input_difference


def score_graph(
    target: Graph, mode: DataMode, reference: NoiseReference | None = None
) -> GraphVerdicts:
    """Judge every scored node of ``target`` (compare_graphs has scored it); with a noise
    reference's measurements (compare/noise_reference.py), against the noise it measured."""
    result = GraphVerdicts(mode)
    if mode is DataMode.STRUCTURE:
        return result
    judged: dict[str, NodeVerdict] = {}
    inner: dict[str, Inside] = {}  # per node: the largest roundoff and gain inside it
    forward: list[tuple[Node, str | None]] = []
    backward: list[tuple[Node, str | None]] = []
    for node in target.ordered():  # children before parents
        if node.type is not NodeType.API_COLLECTION:
            twin_name = forward_twin(node.name)
            (forward if twin_name is None else backward).append((node, twin_name))
    backward_starts = min((node.order for node, _twin in backward), default=len(target.nodes))
    upstream = 0.0  # the largest unit roundoff of the nodes judged so far
    allowed: dict[StatKey, float] = {}  # tensors a sensitive op's band widened, by stat_key
    # how each node was judged, to judge it again eagerly: (hidden, inside, upstream, entering)
    contexts: dict[str, tuple[float, Inside | None, float, dict[StatKey, float] | None]] = {}
    made = MadeSoFar(target)  # the tensors recorded nodes made, and the run's largest difference
    kept = result.context
    eager_done: set[str] = set()

    def judge_again_eagerly(node: Node) -> NodeVerdict | None:
        """A node's verdict with its gain worked even where its default band sufficed."""
        if node.name in eager_done or node.name not in contexts:
            return judged.get(node.name)
        eager_done.add(node.name)
        hidden, inside, before, entering = contexts[node.name]
        twin_name = forward_twin(node.name)
        twin_node = target.nodes.get(twin_name) if twin_name is not None else None
        if twin_node is not None:  # a backward takes its forward's gain, worked eagerly too
            twin = judge_again_eagerly(twin_node)  # noqa: F821 (emptied only once done)
            if twin is not None:
                inside = _with_twin(inside, twin)
        found = _judged(
            node, mode, hidden, inside, allowed, before, True, reference, entering, kept
        )
        if found is not None:
            judged[node.name] = found
        return found

    for node, twin_name in forward + backward:  # a backward reads its forward
        inside = inner.get(node.name)
        hidden = 0.0
        twin = judged.get(twin_name) if twin_name is not None else None
        if twin is not None:
            # the saved inputs count as often as the derivative's condition makes them
            hidden = twin_hidden(api_name(node.name), twin)
            inside = _with_twin(inside, twin)
        # a forward node's inputs no recorded node made (-nr: the reference measures them);
        # a forward call after the backward began (a gradient's all_reduce in a DDP hook)
        # reads gradients the forward order has not met
        entering = (
            made.entering(node)
            if twin_name is None and reference is None and node.order < backward_starts
            else None
        )
        contexts[node.name] = (hidden, inside, upstream, entering)
        found = _judged(
            node, mode, hidden, inside, allowed, upstream, False, reference, entering, kept
        )
        if found is not None and found.introduced and found.verdict is Verdict.ERROR:
            # before calling it introduced: the gains its default bands left unworked
            widened = inside
            if twin is not None and twin_name is not None:
                twin = judge_again_eagerly(target.nodes[twin_name]) or twin
                widened = _with_twin(inner.get(node.name), twin)
            if node.children:
                gain = max(
                    (
                        again.gain
                        for child in _descendants(node)
                        if (again := judge_again_eagerly(child)) is not None
                    ),
                    default=1.0,
                )
                base = widened or _NOTHING
                if gain > base.gain:
                    widened = replace(base, gain=gain)
            if widened != inside:
                contexts[node.name] = (hidden, widened, upstream, entering)
                inside = widened
                found = _judged(
                    node, mode, hidden, inside, allowed, upstream, False, reference, entering, kept
                )
        if (
            found is not None
            and twin_name is not None
            and reference is None
            and not found.introduced
            and node.type is NodeType.MODULE
        ):
            bands = _gradient_sum_bands(target, node, twin_name, upstream)
            if bands:
                found = beyond_gradient_sum(found, node.comparison.rows, bands)
                if found.introduced:
                    kept[node.name] = RuleContext(hidden, upstream, inside, gradient_sum=bands)
        if twin_name is None:
            made.add(node, found)
        if found is not None:
            judged[node.name] = found
            if found.roundoff > upstream:
                upstream = found.roundoff
        parent = node.parent
        if parent is None:
            continue
        roundoff, gain = (inside.roundoff, inside.gain) if inside is not None else (0.0, 1.0)
        if found is not None:
            if found.roundoff > roundoff:
                roundoff = found.roundoff
            if found.gain > gain:
                gain = found.gain
        if roundoff > 0.0 or gain > 1.0:
            above = inner.get(parent.name, _NOTHING)
            if roundoff > above.roundoff or gain > above.gain:
                inner[parent.name] = Inside(max(above.roundoff, roundoff), max(above.gain, gain))
    # the recursive closure and its cell refer to each other, and through the cell to the
    # target graph: emptied, the graph is freed by reference counting, not left to the
    # collector as a cycle (tests/pipeline/test_stages.py)
    del judge_again_eagerly
    verdicts, introduced = result.verdict, result.introduced
    for name, found in judged.items():
        verdicts[name] = found.verdict
        result.excess[name] = found.excess
        if found.introduced:
            introduced.add(name)
    for name in [name for name in kept if name not in introduced]:
        del kept[name]
    _attribute_inside(target, result)
    for node in api_collections(target):  # children first: a collection may hold collections
        worst = [verdicts[child.name] for child in node.children if child.name in verdicts]
        verdicts[node.name] = max(worst, default=Verdict.PASS)
    return result


_NOTHING = Inside()


class MadeSoFar:
    """What the forward pass has shown so far, in execution order: the tensors recorded
    nodes read or made (by stat_key), each with the golden tensor it was paired with there,
    and the largest output difference among them. An input outside that set was made by no
    recorded node: a buffer (a rotary embedding's ``inv_freq``), the run's data, or a view or
    other op the dump leaves out. A view carries at most the difference of what it views,
    which the run has shown, so a difference beyond ``MARGIN`` times the largest one so far
    (or its rounding) enters the run at the node that reads it first (docs/dtype-aware.md
    §3.3, "An input no recorded node made"). Only where the node's pairing is the same call:
    a tensor already made, paired here with another golden tensor than where it was made,
    says the two calls were paired by their count only (a kernel swap renumbers them), and
    their inputs' numbers say nothing."""

    __slots__ = ("largest", "seen")

    def __init__(self, target: Graph) -> None:
        self.seen: dict[StatKey, StatKey | None] = {}  # target tensor -> its golden partner
        self.largest = 0.0
        # a module's weights are judged where they are its parameters (§3.3), as weights:
        # a call reading one inside it does not take it for something else entering
        for node in target.nodes.values():
            for param in node.params or ():
                if param.is_tensor and param.role is Role.PARAMETERS:
                    self.seen.setdefault(stat_key(param), None)

    def entering(self, node: Node) -> dict[StatKey, float] | None:
        """The node's input tensors not made before it, each with the largest difference
        so far; None when there are none, or when the node's pairing is not the same call."""
        rows: list[ParamRow] = node.comparison.rows if node.comparison is not None else []
        found: dict[StatKey, float] | None = None
        for row in rows:
            target, golden = row.target, row.golden
            if target is None or not target.is_tensor or target.role is not Role.INPUT:
                continue
            key = stat_key(target)
            if key not in self.seen:
                if found is None:
                    found = {}
                found[key] = self.largest
                continue
            partner = self.seen[key]
            if partner is not None and golden is not None and stat_key(golden) != partner:
                return None  # another golden tensor than where it was made: another call
        return found

    def add(self, node: Node, found: NodeVerdict | None) -> None:
        """The node's tensors are made (read) now. A cast (neither rule set judges it)
        hands on an input made by nothing recorded: its output is no more made than that."""
        if node.comparison is not None:
            pairs = [(row.target, row.golden) for row in node.comparison.rows]
        else:
            pairs = [(param, None) for param in node.params or ()]
        tensors = [(t, g) for t, g in pairs if t is not None and t.is_tensor]
        passes_on = api_name(node.name) in IGNORE_ALL and any(
            stat_key(t) not in self.seen for t, _g in tensors if t.role is Role.INPUT
        )
        seen = self.seen
        for target, golden in tensors:
            if not (passes_on and target.role is Role.OUTPUT):
                partner = stat_key(golden) if golden is not None and golden.is_tensor else None
                seen.setdefault(stat_key(target), partner)
        if found is not None and found.output_difference > self.largest:
            self.largest = found.output_difference


def _with_twin(inside: Inside | None, twin: NodeVerdict) -> Inside | None:
    """A backward's facts: a derivative is as sensitive as its function (the twin's gain),
    reads what the twin saved (its largest input magnitude), and an elementwise power's
    reweights its gradient by a derivative that varies over the twin's input (its spread)."""
    if twin.gain <= 1.0 and twin.scale <= 0.0 and twin.spread <= 1.0:
        return inside
    base = inside or _NOTHING
    return Inside(base.roundoff, max(base.gain, twin.gain), twin.scale, twin.spread)


def _gradient_sum_bands(
    target: Graph, module: Node, twin_name: str, upstream: float
) -> dict[str, float]:
    """Per output key of a module's backward, the band of its uses' gradient sum (none where
    the dump does not show every use): the gradient of each input of
    its forward is the sum of the gradients handed back by the nodes inside it that read
    that input (autograd adds them; no dump records the sum). Where the dump shows every such
    use's gradient, an output beyond the band of their sum (dtype_sensitivity.
    gradient_sum_band) is an error this module introduces: something between its inner
    backward nodes and its output changed the gradient (a backward hook, a custom autograd
    function, a scaled gradient). The module's own band (its inputs through its ops' gain)
    cannot see that where its ops amplify (dtype_context.beyond_gradient_sum applies it). Each
    gradient may hold the rounding of the narrowest dtype upstream (``upstream``, the
    forward's) at its magnitude, which its statistics need not show: its ``d`` is at least
    that."""
    forward = target.nodes.get(twin_name)
    rows: list[ParamRow] = module.comparison.rows if module.comparison is not None else []
    if forward is None or not forward.params or not rows:
        return {}
    slots = {  # the forward's input tensors, by what the dump shows of them
        stat_key(param): param.key
        for param in forward.params
        if param.is_tensor and param.role is Role.INPUT
    }
    numel = {param.key: numel_of(param.shape) for param in forward.params}
    pieces: dict[str, list[tuple[float, float, float]]] = {}
    for user in _calls_inside(forward):
        slot_of = {  # what it read of them: its input key -> the forward's input key
            param.key: slots[stat_key(param)]
            for param in user.params or ()
            if param.is_tensor and param.role is Role.INPUT and stat_key(param) in slots
        }
        if not slot_of:
            continue
        back_name = backward_twin(user.name)
        back = target.nodes.get(back_name) if back_name is not None else None
        if back is None or back.comparison is None:
            return {}  # a use whose gradient the dump does not show
        handed = {t.key: (t, g) for t, g in _output_tensors(back.comparison.rows)}
        for key in slot_of:
            pair = handed.get("output" + key[len("input") :])
            if (
                pair is None
                or not isinstance(pair[0].norm, float)
                or numel_of(pair[0].shape) != numel[slot_of[key]]
            ):
                return {}  # not the gradient of what it read
            d = statistics_difference(*pair)
            scale = magnitude(*pair)
            if d is None or scale <= 0.0:
                return {}
            held = d if d > upstream else upstream
            pieces.setdefault(slot_of[key], []).append((held, pair[0].norm, scale))
    bands: dict[str, float] = {}
    for output, golden in _output_tensors(rows):
        terms = pieces.get("input" + output.key[len("output") :])
        if not terms or not isinstance(output.norm, float) or output.norm <= 0.0:
            continue
        scale = magnitude(output, golden)
        if scale <= 0.0:
            continue
        roundoff = dtype_facts(output.dtype, golden.dtype)[1]
        bands[output.key] = gradient_sum_band(terms, output.norm, scale, roundoff)
    return bands


def _calls_inside(node: Node) -> list[Node]:
    """The nodes directly inside ``node``, through API collections (which group calls, not
    compute)."""
    found: list[Node] = []
    stack = list(reversed(node.children))
    while stack:
        child = stack.pop()
        if child.type is NodeType.API_COLLECTION:
            stack.extend(reversed(child.children))
        else:
            found.append(child)
    return found


def _output_tensors(rows: list[ParamRow]) -> list[tuple[Param, Param]]:
    """(target, golden) of each output that is a tensor on both sides."""
    found: list[tuple[Param, Param]] = []
    for row in rows:
        target, golden = row.target, row.golden
        if (
            row.is_output
            and target is not None
            and golden is not None
            and target.is_tensor
            and golden.is_tensor
        ):
            found.append((target, golden))
    return found


def _descendants(node: Node) -> list[Node]:
    found: list[Node] = []
    stack = list(node.children)
    while stack:
        child = stack.pop()
        found.append(child)
        stack.extend(child.children)
    return found


def _attribute_inside(target: Graph, result: GraphVerdicts) -> None:
    """A module with an introduced error inside it introduces none itself: a warning."""
    if not result.introduced:
        return
    below: set[str] = set()  # nodes with an introduced error strictly inside
    for node in target.ordered():  # children before parents
        name = node.name
        inside = name in below
        if inside and name in result.introduced:
            result.introduced.discard(name)
            result.verdict[name] = Verdict.WARNING
        if (inside or name in result.introduced) and node.parent is not None:
            below.add(node.parent.name)
