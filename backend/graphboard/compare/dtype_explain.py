"""Why a stored node passes or introduces an error under the dtype-aware rules, for the
detail panel: the node's verdict worked again from its stored parameters, per parameter the
noise band beside the measured difference.

The build stores only each node's verdict (compare/dtype_graph.py); this repeats the same
judgement (:func:`dtype_aware.judge_node`) on the same typed parameters, so it explains the
stored verdict rather than a second opinion. Tensor mode explains from the statistics (the
tensors are not read again here), which the detail says.
"""

from __future__ import annotations

from graphboard.compare import metrics
from graphboard.compare.dtype_aware import NodeVerdict, judge_node
from graphboard.compare.dtype_context import RuleContext, beyond_gradient_sum, by_stat_key
from graphboard.compare.dtype_graph import twin_hidden
from graphboard.compare.dtype_peers import PeerInputs
from graphboard.compare.dtype_sensitivity import Inside
from graphboard.compare.engine import pair_params
from graphboard.compare.noise_reference import NodeNoise
from graphboard.compare.result import DataMode, ParamRow
from graphboard.compare.rules import api_name
from graphboard.dump.records import Param


def scored_rows(target: list[Param], golden: list[Param]) -> list[ParamRow]:
    """Parameters paired by name with msprobe's statistics metrics, as the builder scores."""
    rows = pair_params(target, golden)
    for row in rows:
        row.metrics = metrics.summary_metrics(row.target, row.golden)
    return rows


def explain_node(
    name: str,
    target: list[Param],
    golden: list[Param],
    mode: DataMode,
    twin: tuple[str, list[Param], list[Param]] | None = None,
    reference: NodeNoise | None = None,
    twin_reference: NodeNoise | None = None,
    peers: PeerInputs | None = None,
    context: RuleContext | None = None,
) -> NodeVerdict | None:
    """The dtype-aware verdict of one pair, with its parameters; ``twin``: a backward node's
    forward twin (name, target and golden parameters), whose tensors it reads unseen;
    ``reference``, ``twin_reference``: a noise reference's measured d per parameter key of
    the node and of its twin (compare/noise_reference.py), as the build judged them;
    ``peers``: a collective's group inputs on every rank (compare/dtype_peers.py), where the
    build linked them; ``context``: the graph facts the build judged the node with, kept for
    a node introducing an error (compare/dtype_context.py): with it, the build's very
    judgement, without it the node's own."""
    judged_mode = DataMode.SUMMARY if mode is DataMode.TENSOR else mode
    hidden = 0.0
    inside: Inside | None = None
    if twin is not None:
        twin_rows = scored_rows(twin[1], twin[2])
        found = judge_node(twin[0], twin_rows, judged_mode, explain=False, reference=twin_reference)
        if found is not None:
            hidden = twin_hidden(api_name(name), found)
            if found.spread > 1.0:  # a power's derivative reweights the gradient
                inside = Inside(spread=found.spread)
    rows = scored_rows(target, golden)
    if context is None:
        context = RuleContext(hidden, inside=inside)  # the node's own records only
    found = judge_node(
        name,
        rows,
        judged_mode,
        context.hidden,
        inside=context.inside,
        allowed_in=by_stat_key(target, context.allowed),
        upstream=context.upstream,
        reference=reference,
        peers=peers,
        entering=by_stat_key(target, context.entering),
    )
    if found is not None and context.gradient_sum:
        found = beyond_gradient_sum(found, rows, context.gradient_sum)
    return found
