"""The band of a collective's output from every rank's inputs (docs/dtype-aware.md §3.4).

A collective's output is made of its group's inputs: a SUM, AVG, MIN or MAX reduction is, per
element, 1-Lipschitz in each member's input and rounds ``N - 1`` additions at the partial
sums' magnitude; a copy (gather, broadcast, a received tensor) holds its source's input. So
``|Δout| <= Σ_r |Δx_r| + (N - 1) u Σ_r |x_r|``, and over the output's own scale

    d_out <= Σ_r d_r ρ_r + (N - 1) u Σ_r ρ_r,    ρ_r = the input's scale over the output's

(the scale a magnitude for the extremes and a norm for Norm and Mean, the larger ratio
taken). The linked ranks' records hold ``d_r`` and the scales; the build sums them once per
call (:class:`PeerInputs`, kept in the file) and the verdict works the band per output.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from graphboard.compare.dtype_noise import statistics_difference
from graphboard.compare.dtype_sensitivity import default_band, magnitude
from graphboard.dump.records import Param, Role


class PeerInputs(NamedTuple):
    """The group's inputs to one collective call, summed over its source ranks."""

    carried_magnitude: float  # Σ d_r · magnitude_r: the absolute difference on the extremes
    carried_norm: float  # Σ d_r · norm_r: on the norm
    magnitude: float  # Σ magnitude_r: what the reduction's additions round at
    norm: float  # Σ norm_r
    ranks: int  # how many ranks' inputs it combines


def _norm(target: Param, golden: Param) -> float:
    found = 0.0
    for value in (target.norm, golden.norm):
        if isinstance(value, float) and math.isfinite(value) and value > found:
            found = value
    return found


def peer_inputs(sources: Iterable[tuple[Sequence[Param], Sequence[Param]]]) -> PeerInputs | None:
    """The sums over ``sources`` (each rank's call: its target and golden parameters), None
    where an input tensor is on one side only or its statistics give no ``d``."""
    carried_magnitude = carried_norm = total_magnitude = total_norm = 0.0
    ranks = 0
    for target, golden in sources:
        ranks += 1
        golden_of = {param.key: param for param in golden if param.is_tensor}
        for param in target:
            if param.role is not Role.INPUT or not param.is_tensor:
                continue
            partner = golden_of.get(param.key)
            if partner is None:
                return None
            difference = statistics_difference(param, partner)
            if difference is None or not math.isfinite(difference):
                return None
            size, norm = magnitude(param, partner), _norm(param, partner)
            carried_magnitude += difference * size
            carried_norm += difference * norm
            total_magnitude += size
            total_norm += norm
    if ranks == 0:
        return None
    return PeerInputs(carried_magnitude, carried_norm, total_magnitude, total_norm, ranks)


def peer_band(inputs: PeerInputs, target: Param, golden: Param, roundoff: float) -> float | None:
    """The largest ``d`` of one output the group's inputs explain; None where the output has
    no scale to measure them on (all zeros)."""
    size, norm = magnitude(target, golden), _norm(target, golden)
    if size <= 0.0 or norm <= 0.0:
        return None
    carried = max(inputs.carried_magnitude / size, inputs.carried_norm / norm)
    scale = max(inputs.magnitude / size, inputs.norm / norm)
    return default_band(carried, max(1, inputs.ranks - 1) * scale * roundoff)
