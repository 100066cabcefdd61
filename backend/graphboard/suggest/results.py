"""What the proposer gives: pairs with a confidence and a reason, and fused groups."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MIN_CONFIDENCE = 0.6


@dataclass(frozen=True, slots=True)
class Suggestion:
    step: int
    rank: int
    target: str
    golden: str
    confidence: float
    reason: str


@dataclass(frozen=True, slots=True)
class Fused:
    """One node on one side doing the work of several on the other: flagged, never paired."""

    step: int
    rank: int
    target: tuple[str, ...]
    golden: tuple[str, ...]
    confidence: float
    reason: str


@dataclass(slots=True)
class Proposals:
    suggestions: list[Suggestion]
    fused: list[Fused]
