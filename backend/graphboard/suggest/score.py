"""How alike a target node and a golden node are, as a confidence in [0, 1] with the reasons
a person can check: what they are, where they sit, what their tensors look like and hold."""

from __future__ import annotations

import math
import re
from typing import NamedTuple

from graphboard.graph.model import NodeType
from graphboard.suggest.features import Features, Tensor

# Weights of the evidence; a missing piece (no tensors on either side) drops out of the mean.
_WEIGHTS = {
    "label": 0.25,
    "position": 0.15,
    "tensors": 0.25,
    "statistics": 0.2,
    "parameters": 0.1,
    "name": 0.05,
    "descendants": 0.15,
}
FLOOR = 0.35  # below this two nodes are not proposed as a pair at all
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_STAT_SCALE = 20.0  # a relative difference of 5% costs 1 - 1/e of the statistics' share


class Position(NamedTuple):
    place: int  # among the parent's unmatched children of the same bucket (or label)
    of: int
    among: str | None = None  # what they are, when not the whole bucket: "Torch.softmax calls"


class Scored(NamedTuple):
    confidence: float
    reasons: tuple[str, ...]


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _kind_word(f: Features) -> str:
    kind = {NodeType.MODULE: "module", NodeType.API: "API"}.get(NodeType(f.kind), "collection")
    return f"{f.direction.replace('_', ' ')} {kind}".strip()


def _label(t: Features, g: Features) -> tuple[float, str]:
    if t.raw_label == g.raw_label:
        return 1.0, f"same {'class' if t.kind == NodeType.MODULE else 'API'} {t.raw_label}"
    if t.label == g.label:
        return 0.9, f"{t.raw_label} and {g.raw_label} are both {t.label}"
    if t.kind == NodeType.MODULE:
        shared = words(t.raw_label) & words(g.raw_label)
        share = len(shared) / len(words(t.raw_label) | words(g.raw_label))
        return 0.4 + 0.5 * share, f"class {t.raw_label} vs {g.raw_label}"
    return 0.0, f"different operations {t.raw_label} vs {g.raw_label}"


def words(name: str) -> set[str]:
    """``SelfAttention`` / ``self_attention`` -> {"self", "attention"}."""
    return {w.lower() for w in _WORD.findall(name.replace("_", " "))} or {name.lower()}


def _position(t: Position, g: Position, f: Features) -> tuple[float, str]:
    among = t.among or f"{_kind_word(f)}s"
    if t.place == g.place and t.of == g.of:
        return 1.0, f"both the {_ordinal(t.place + 1)} of {t.of} {among} there"
    drift = abs(t.place / max(t.of, 1) - g.place / max(g.of, 1))
    return max(0.0, 0.8 - 2 * drift), (
        f"{_ordinal(t.place + 1)} of {t.of} vs {_ordinal(g.place + 1)} of {g.of} {among}"
    )


def _alike(a: Tensor, b: Tensor) -> float:
    """A tensor's shape says which one it is; its dtype may be just what differs between the
    runs (a bf16 target against an fp32 golden), so it counts for little."""
    return 0.8 * (a.shape == b.shape) + 0.2 * (a.dtype == b.dtype)


def _tensors(t: tuple[Tensor, ...], g: tuple[Tensor, ...]) -> tuple[float, str] | None:
    if not t and not g:
        return None
    if len(t) != len(g):
        agree = sum(_alike(a, b) for a, b in zip(t, g, strict=False))
        return 0.5 * agree / max(len(t), len(g)), f"{len(t)} vs {len(g)} tensors"
    shapes = sum(a.shape == b.shape for a, b in zip(t, g, strict=True))
    dtypes = sum(a.dtype == b.dtype for a, b in zip(t, g, strict=True))
    value = sum(_alike(a, b) for a, b in zip(t, g, strict=True)) / len(t)
    if shapes == dtypes == len(t):
        return 1.0, f"{len(t)} tensors of the same shapes and dtypes"
    if shapes == len(t):
        return value, f"{len(t)} tensors of the same shapes ({len(t) - dtypes} dtype(s) differ)"
    return value, f"{shapes} of {len(t)} tensors of the same shape"


def _relative(a: float, b: float) -> float:
    scale = max(abs(a), abs(b))
    return 0.0 if scale == 0 else abs(a - b) / scale


def _statistics(t: tuple[Tensor, ...], g: tuple[Tensor, ...]) -> tuple[float, str] | None:
    worst: float | None = None
    for a, b in zip(t, g, strict=False):
        if a.shape != b.shape:
            continue
        for x, y in ((a.norm, b.norm), (a.mean, b.mean)):
            if x is not None and y is not None:
                worst = max(worst or 0.0, _relative(x, y))
    if worst is None:
        return None
    if worst == 0:
        shown = "identical statistics"
    elif worst < 1e-4:
        shown = "statistics agree to 0.01%"
    else:
        shown = f"statistics within {worst:.2%}"
    return math.exp(-_STAT_SCALE * worst), shown


def _parameters(t: Features, g: Features) -> tuple[float, str] | None:
    if not t.param_names and not g.param_names:
        return None
    common = t.param_names & g.param_names
    share = len(common) / len(t.param_names | g.param_names)
    if share == 1:
        return 1.0, "same parameters " + ", ".join(sorted(common))
    return share, f"{len(common)} of {len(t.param_names | g.param_names)} parameter names shared"


def _name(t: Features, g: Features) -> tuple[float, str] | None:
    if t.kind == NodeType.MODULE:
        if t.attribute and t.attribute == g.attribute:
            return 1.0, f"same attribute {t.attribute}"
        if t.attribute and g.attribute and words(t.attribute) & words(g.attribute):
            return 0.6, f"attributes {t.attribute} and {g.attribute} share a word"
        return None
    if t.call and t.call == g.call:
        return 1.0, f"same call index {t.call}"
    return (0.0, f"call {t.call} vs {g.call}") if t.call else None


def _descendants(t: Features, g: Features) -> tuple[float, str] | None:
    a, b = t.descendants, g.descendants
    if not a and not b:
        return None
    if a == b:
        return 1.0, f"{a} nodes inside each"
    return min(a, b) / max(a, b), f"{a} vs {b} nodes inside"


def score(t: Features, g: Features, tp: Position, gp: Position) -> Scored:
    """The confidence that ``g`` is ``t``'s counterpart, given they share a parent pair and a
    bucket (kind and direction), and the reasons, strongest first."""
    evidence: dict[str, tuple[float, str | None] | None] = {
        "label": _label(t, g),
        "position": _position(tp, gp, t),
        "tensors": _tensors(t.tensors, g.tensors),
        "statistics": _statistics(t.tensors, g.tensors),
        "parameters": _parameters(t, g),
        "name": _name(t, g),
        "descendants": _descendants(t, g),
    }
    total = weight = 0.0
    reasons: list[tuple[float, str]] = []
    for key, found in evidence.items():
        if found is None:
            continue
        value, why = found
        share = _WEIGHTS[key]
        if key == "statistics":  # the target may be wrong: far statistics say little
            share *= max(value, 0.25)
        total += share * value
        weight += share
        if why:
            reasons.append((share * value, why))
    confidence = total / weight if weight else 0.0
    if t.kind == NodeType.API and t.label != g.label:
        confidence = min(confidence, FLOOR)  # another operation is not the same call renamed
    reasons.sort(key=lambda item: -item[0])
    return Scored(round(confidence, 4), tuple(why for _value, why in reasons))
