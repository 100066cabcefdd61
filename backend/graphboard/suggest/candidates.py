"""Which golden child may be which target child, inside one parent pair and one bucket (kind
and direction): an order-keeping alignment, and fused nodes (one qkv for q, k and v).

Children are compared only with children of the parent's counterpart, in the same bucket,
and within a band around the diagonal, so the work is linear in the nodes, never all pairs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from graphboard.suggest.features import Features, Tensor
from graphboard.suggest.score import FLOOR, Scored

BAND = 16  # how far off the diagonal an alignment may go, beyond the two lists' difference
MAX_BAND = 64
MAX_FUSED = 8  # the most nodes one fused node may stand for (q, k, v; gate, up)

ScoreFn = Callable[[int, int], Scored]
Aligned = list[tuple[int, int, Scored]]


def align(n: int, m: int, score: ScoreFn) -> Aligned:
    """Index pairs (i, j, score), increasing in both, of the best total score: the diagonal
    when it holds throughout, else a banded dynamic programme."""
    if n == m:
        diagonal = [(i, i, score(i, i)) for i in range(n)]
        if all(found.confidence >= FLOOR for _i, _j, found in diagonal):
            return diagonal
    if n == 0 or m == 0:
        return []
    band = min(abs(n - m) + BAND, MAX_BAND)
    cache: dict[tuple[int, int], Scored] = {}
    # best[i][j]: the best total over target[:i] and golden[:j], kept only inside the band
    # (a cell outside it counts 0: skipping nodes is free, so that is a total one can reach)
    best: list[dict[int, float]] = [{}]
    moves: list[dict[int, int]] = [{}]  # 0: target i-1 left out, 1: golden j-1, 2: paired
    for i in range(1, n + 1):
        row: dict[int, float] = {}
        move: dict[int, int] = {}
        above = best[i - 1]
        centre = (i * m) // n
        for j in range(max(0, centre - band), min(m, centre + band) + 1):
            value, how = above.get(j, 0.0), 0
            if j > 0 and row.get(j - 1, 0.0) > value:
                value, how = row[j - 1], 1
            if j > 0:
                found = cache.get((i - 1, j - 1))
                if found is None:
                    found = cache[(i - 1, j - 1)] = score(i - 1, j - 1)
                paired = above.get(j - 1, 0.0) + found.confidence
                if found.confidence >= FLOOR and paired > value:
                    value, how = paired, 2
            row[j], move[j] = value, how
        best.append(row)
        moves.append(move)
    i, j = n, max(best[n], key=lambda k: best[n][k])
    pairs: Aligned = []
    while i > 0 and j >= 0 and j in moves[i]:
        how = moves[i][j]
        if how == 2:
            pairs.append((i - 1, j - 1, cache[(i - 1, j - 1)]))
            i, j = i - 1, j - 1
        elif how == 1:
            j -= 1
        else:
            i -= 1
    pairs.reverse()
    return pairs


def _concatenates(whole: tuple[int, ...], parts: Sequence[tuple[int, ...]]) -> bool | None:
    """True: ``parts`` joined along one axis make ``whole``; None: every part is ``whole``
    (an input they share); False: neither."""
    if all(part == whole for part in parts):
        return None
    if any(len(part) != len(whole) for part in parts):
        return False
    for axis in range(len(whole)):
        if sum(part[axis] for part in parts) == whole[axis] and all(
            part[:axis] + part[axis + 1 :] == whole[:axis] + whole[axis + 1 :] for part in parts
        ):
            return True
    return False


def fuses(whole: Features, parts: Sequence[Features]) -> bool:
    """Whether ``whole`` is one node doing the work of ``parts`` (a fused qkv for q, k and v):
    the same kind of node, tensor for tensor either shared or split along one axis."""
    if len(parts) < 2 or any(p.label != whole.label for p in parts):
        return False
    tensors: list[tuple[Tensor, ...]] = [p.tensors for p in parts]
    if not whole.tensors or any(len(t) != len(whole.tensors) for t in tensors):
        return False
    split = False
    for k, tensor in enumerate(whole.tensors):
        shapes = [t[k].shape for t in tensors]
        if tensor.shape is None or any(shape is None for shape in shapes):
            return False
        joined = _concatenates(tensor.shape, [s for s in shapes if s is not None])
        if joined is False:
            return False
        split = split or bool(joined)
    return split


def fused_runs(
    singles: Sequence[Features], many: Sequence[Features]
) -> list[tuple[int, list[int]]]:
    """(index in ``singles``, indexes of a run of consecutive ``many``) for each single node
    that fuses a run of the other side's nodes, looked for within a band around its place;
    each node used once."""
    found: list[tuple[int, list[int]]] = []
    used: set[int] = set()
    band = min(abs(len(singles) - len(many)) + BAND, MAX_BAND)  # near the diagonal only
    for i, whole in enumerate(singles):
        centre = (i * len(many)) // max(len(singles), 1)
        for start in range(max(0, centre - band), min(len(many), centre + band + 1)):
            if start in used or many[start].label != whole.label:
                continue
            for size in range(min(MAX_FUSED, len(many) - start), 1, -1):
                run = list(range(start, start + size))
                if not used.intersection(run) and fuses(whole, [many[k] for k in run]):
                    found.append((i, run))
                    used.update(run)
                    break
            else:
                continue
            break
    return found
