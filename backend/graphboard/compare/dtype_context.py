"""What the graph knew when it judged a node, beyond the node's own records, kept for the
nodes that introduce an error so that the detail panel (compare/dtype_explain.py) works the
stored verdict again rather than a second opinion of the node alone.

A node's dtype-aware verdict at build time (compare/dtype_graph.py) reads facts of the whole
graph: the rounding upstream of it, the gain and roundoff inside a module or of a backward's
forward twin, what a sensitive producer allowed its inputs, the largest difference the run
showed before an input no recorded node made (docs/dtype-aware.md §3.3), and the band of a
module's input gradient from its uses' gradients (§3.2). Those are a handful of numbers per
node; store/rule_context_table.py keeps them per introducing node.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from graphboard.compare.dtype_aware import NodeVerdict, ParamVerdict, Verdict
from graphboard.compare.dtype_noise import statistics_difference
from graphboard.compare.dtype_sensitivity import Inside, StatKey, stat_key
from graphboard.compare.result import ParamRow
from graphboard.dump.records import Param, Role

MSG_GRADIENT_SUM = (
    "error: d {d:.3g} beyond the band {band:.3g} of the gradients its uses inside it hand "
    "back: changed between its inner backward nodes and its output (a hook, a custom autograd "
    "function, a scaled gradient)"
)


@dataclass(frozen=True, slots=True)
class RuleContext:
    """One node's graph facts, by parameter key (what the stored parameters are named)."""

    hidden: float = 0.0  # what it reads unseen (a backward's saved forward tensors)
    upstream: float = 0.0  # the largest unit roundoff before it
    inside: Inside | None = None
    allowed: dict[str, float] = field(default_factory=dict)  # input key -> allowance
    entering: dict[str, float] = field(default_factory=dict)  # input key -> largest before
    gradient_sum: dict[str, float] = field(default_factory=dict)  # output key -> band

    def to_json(self) -> dict[str, Any]:
        inside = self.inside
        return {
            "hidden": self.hidden,
            "upstream": self.upstream,
            "inside": None
            if inside is None
            else [inside.roundoff, inside.gain, inside.saved_scale, inside.spread],
            "allowed": self.allowed,
            "entering": self.entering,
            "gradient_sum": self.gradient_sum,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RuleContext:
        inside = data.get("inside")
        return cls(
            float(data.get("hidden", 0.0)),
            float(data.get("upstream", 0.0)),
            Inside(*(float(value) for value in inside)) if inside else None,
            {str(k): float(v) for k, v in (data.get("allowed") or {}).items()},
            {str(k): float(v) for k, v in (data.get("entering") or {}).items()},
            {str(k): float(v) for k, v in (data.get("gradient_sum") or {}).items()},
        )


def by_param_key(params: list[Param] | None, by_stat: Mapping[StatKey, float]) -> dict[str, float]:
    """A graph map keyed by tensor identity (stat_key), as the node's input keys."""
    if not by_stat:
        return {}
    found: dict[str, float] = {}
    for param in params or ():
        if param.is_tensor and param.role is not Role.OUTPUT:
            value = by_stat.get(stat_key(param))
            if value is not None:
                found[param.key] = value
    return found


def by_stat_key(params: list[Param], by_key: Mapping[str, float]) -> dict[StatKey, float]:
    """The other way: a stored map by input key, as judge_node reads it."""
    return {stat_key(param): by_key[param.key] for param in params if param.key in by_key}


def beyond_gradient_sum(
    found: NodeVerdict, rows: list[ParamRow], bands: Mapping[str, float]
) -> NodeVerdict:
    """A module backward's verdict with each output judged against the band of its uses'
    gradient sum (``bands``, dtype_sensitivity.gradient_sum_band per output key): an output
    beyond it is an error the module introduces; unchanged where none is."""
    beyond: dict[str, tuple[float, float]] = {}
    worst = 0.0
    for row in rows:
        target, golden = row.target, row.golden
        if not row.is_output or target is None or golden is None:
            continue
        band = bands.get(target.key)
        if band is None or not (target.is_tensor and golden.is_tensor):
            continue
        difference = statistics_difference(target, golden)
        if difference is None or difference <= band:
            continue
        beyond[target.key] = (difference, band)
        if difference / band > worst:
            worst = difference / band
    if not beyond:
        return found
    params = tuple(
        ParamVerdict(p.key, True, Verdict.ERROR, *beyond[p.key], MSG_GRADIENT_SUM, True)
        if p.key in beyond
        else p
        for p in found.params
    )
    deciding = next((p for p in params if p.key in beyond), found.deciding)
    return replace(
        found,
        verdict=Verdict.ERROR,
        introduced=True,
        excess=worst,
        params=params,
        deciding=deciding,
    )
