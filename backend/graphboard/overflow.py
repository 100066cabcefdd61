"""Overflow levels (-oc): where inf/nan appears, and whether it came in or started here.

critical: inputs normal, outputs inf/nan (it starts here: look first);
high:     inputs and outputs inf/nan, or an output norm more than 100x the inputs';
medium:   inputs inf/nan, outputs normal (lowest priority).
Known false positives (uninitialised buffers, receive buffers) are ignored by position.
"""

from __future__ import annotations

import math

from graphboard.dump.records import Param, Role, Stat
from graphboard.graph.model import Graph

MEDIUM = "medium"
HIGH = "high"
CRITICAL = "critical"
NORM_JUMP = 100.0

# (api key, category) -> positions (int) or kwarg names (str) whose anomalies are expected
_IGNORED: dict[tuple[str, str], frozenset[int | str]] = {
    ("torch.empty", "output"): frozenset({0}),
    ("torch.empty_like", "output"): frozenset({0}),
    ("torch.empty_strided", "output"): frozenset({0}),
    ("distributed.recv", "input"): frozenset({0, "tensor"}),
    ("distributed.all_gather", "input"): frozenset({0}),
    ("distributed._reduce_scatter_base", "input"): frozenset({0}),
    ("distributed.all_gather_into_tensor", "input"): frozenset({0}),
    ("distributed.reduce_scatter_tensor", "input"): frozenset({0}),
    ("distributed.reduce_scatter", "input"): frozenset({0, "output"}),
    ("tensor.masked_fill_", "input"): frozenset({0}),
}


def _anomalous(value: Stat) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    return isinstance(value, str) and value.lower() in ("inf", "-inf", "nan")


def _position(param: Param) -> int | str:
    top = param.key.split(".")[1] if "." in param.key else param.key
    return int(top) if top.isdigit() else top


def expected_anomaly(node_name: str, param: Param) -> bool:
    """Whether inf/nan in this parameter is expected where it is (an uninitialised buffer, a
    receive buffer): the positions ``overflow_level`` passes over."""
    category = {Role.INPUT: "input", Role.OUTPUT: "output"}.get(param.role)
    if category is None:
        return False
    api_key = ".".join(node_name.split(".")[:2]).lower()
    return _position(param) in _IGNORED.get((api_key, category), frozenset())


def _is_top_level(param: Param) -> bool:
    return param.key.count(".") == 1


def overflow_level(node_name: str, params: list[Param]) -> str | None:
    api_key = ".".join(node_name.split(".")[:2]).lower()
    anomalies: dict[str, list[int | str]] = {"input": [], "output": []}
    for param in params:
        if param.role is Role.INPUT:
            category = "input"
        elif param.role is Role.OUTPUT:
            category = "output"
        else:
            continue
        if param.is_tensor and (
            _anomalous(param.max) or _anomalous(param.min) or _anomalous(param.mean)
        ):
            anomalies[category].append(_position(param))
    for category, found in anomalies.items():
        ignored = _IGNORED.get((api_key, category))
        if ignored and found and all(position in ignored for position in found):
            anomalies[category] = []
    bad_in, bad_out = bool(anomalies["input"]), bool(anomalies["output"])
    if bad_out and not bad_in:
        return CRITICAL
    if bad_out and bad_in:
        return HIGH
    if bad_in:
        return MEDIUM
    return HIGH if _norm_jump(params) else None


def _norm_jump(params: list[Param]) -> bool:
    norms_in = [
        float(param.norm)  # type: ignore[arg-type]
        for param in params
        if param.role is Role.INPUT
        and param.type == "torch.Tensor"
        and _is_top_level(param)
        and _finite_number(param.norm)
    ]
    norms_out = [
        float(param.norm)  # type: ignore[arg-type]
        for param in params
        if param.role is Role.OUTPUT
        and param.is_tensor
        and _is_top_level(param)
        and _finite_number(param.norm)
    ]
    if not norms_in or not norms_out:
        return False
    largest_in, largest_out = max(norms_in), max(norms_out)
    if largest_in == 0:
        return largest_out > NORM_JUMP
    return largest_out / largest_in > NORM_JUMP


def _finite_number(value: Stat) -> bool:
    if isinstance(value, float):
        return not math.isnan(value)
    return isinstance(value, int) and not isinstance(value, bool)  # an integer tensor's norm


def check_overflow(graph: Graph) -> int:
    """Set ``node.overflow`` on every node with a record; return how many were flagged."""
    flagged = 0
    for node in graph.nodes.values():
        if node.params:
            node.overflow = overflow_level(node.name, node.params)
            flagged += node.overflow is not None
    return flagged
