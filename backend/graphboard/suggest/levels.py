"""Pairs one level apart: where one side has a wrapper the other lacks (Megatron's embedding
at the top of the model, Hugging Face's inside ``model``), a grey child of a pair meets its
counterpart among the children of its siblings' counterparts, not among its parent's
counterpart's own.

Each pair's grandchildren are looked at once, through the same banded alignment, so the
work stays linear; only strong evidence pairs this way.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol

from graphboard.suggest.sides import SideArrays

STRONG = 0.7  # a pair one level apart needs more than a pair in place


class _Walk(Protocol):
    """What this module reads and calls of the proposal walk (proposals.py), which calls it:
    named here so the walk's module and this one do not import each other."""

    t: SideArrays
    g: SideArrays
    proposed: dict[int, int]  # target order -> golden order
    taken: dict[int, int]  # golden order -> the target order proposed for it

    def grey(self, side: SideArrays, parent: int, taken: Collection[int]) -> list[int]: ...

    def pair_lists(
        self,
        t_grey: list[int],
        g_grey: list[int],
        where: str,
        parent_confidence: float,
        *,
        least: float = 0.0,
        fused: bool = True,
    ) -> list[tuple[int, int]]: ...


def _counterpart(walk: _Walk, order: int, target_side: bool) -> int:
    """The other side's node paired (or proposed) with ``order``, -1 for none."""
    side, proposed = (walk.t, walk.proposed) if target_side else (walk.g, walk.taken)
    if side.matched[order] == 1:
        return int(side.counterpart[order])
    return proposed.get(order, -1)


def _below_counterparts(walk: _Walk, parent: int, target_side: bool) -> list[int]:
    """Grey, unproposed children of the counterparts of ``parent``'s children (those on the
    other side), in execution order."""
    side, other = (walk.t, walk.g) if target_side else (walk.g, walk.t)
    taken = walk.taken if target_side else walk.proposed
    below: list[int] = []
    for child in side.children[parent] if parent >= 0 else side.roots:
        counterpart = _counterpart(walk, child, target_side)
        if counterpart >= 0:
            below.extend(walk.grey(other, counterpart, taken))
    return below


def one_level_apart(walk: _Walk, tp: int, gp: int, confidence: float) -> list[tuple[int, int]]:
    """New pairs between the pair (tp, gp)'s grey children and the grey children of their
    siblings' counterparts, both ways round."""
    found: list[tuple[int, int]] = []
    t_left = walk.grey(walk.t, tp, walk.proposed) if tp >= 0 else []
    if t_left:
        where = f"one level apart: under {walk.t.names[tp]}, inside the counterpart of a sibling"
        found += walk.pair_lists(
            t_left,
            _below_counterparts(walk, tp, True),
            where,
            confidence,
            least=STRONG,
            fused=False,
        )
    g_left = walk.grey(walk.g, gp, walk.taken) if gp >= 0 else []
    if g_left:
        where = f"one level apart: under {walk.g.names[gp]}, inside the counterpart of a sibling"
        found += walk.pair_lists(
            _below_counterparts(walk, gp, False),
            g_left,
            where,
            confidence,
            least=STRONG,
            fused=False,
        )
    return found
