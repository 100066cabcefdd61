"""Proposals for a compare's grey nodes, top-down: the children of every matched (or newly
proposed) pair are aligned with the children of its counterpart, bucket by bucket, so a
renamed layer's sub-modules and calls follow the layer's own pair.

Each node is featured once, each parent pair aligned once, within a band: linear in nodes.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable, Collection, Iterable

from graphboard.graph.model import GOLDEN_SIDE, TARGET_SIDE, NodeType
from graphboard.store.reader import GraphKey, VisDb, node_data
from graphboard.suggest.candidates import align, fused_runs
from graphboard.suggest.features import Features, features
from graphboard.suggest.levels import one_level_apart
from graphboard.suggest.results import Fused, Proposals, Suggestion
from graphboard.suggest.score import Position, Scored, score
from graphboard.suggest.sides import SideArrays, load_side

_REASONS_SHOWN = 4
_VIRTUAL = -1  # the parent of the roots


class _Walk:
    """The state of one (step, rank)'s proposal walk."""

    def __init__(
        self, target: SideArrays, golden: SideArrays, rejected: Collection[tuple[str, str]]
    ):
        self.t, self.g = target, golden
        self.rejected = rejected
        self.proposed: dict[int, int] = {}  # target order -> golden order
        self.taken: dict[int, int] = {}  # golden order -> the target order proposed for it
        self.visited: list[tuple[int, int, float]] = []  # parent pairs whose children paired
        self.confidence: dict[int, float] = {}  # target order -> its proposal's confidence
        self._features: dict[tuple[str, int], Features] = {}
        self.suggestions: list[tuple[int, int, float, str]] = []
        self.fused: list[tuple[tuple[int, ...], tuple[int, ...], float, str]] = []
        self.matched_parents: set[int] = set()  # target orders paired before the walk

    def feature(self, side: SideArrays, order: int) -> Features:
        key = (side.key.side, order)
        found = self._features.get(key)
        if found is None:
            found = features(
                side.names[order],
                side.node_type[order],
                side.params.get(order, []),
                side.descendants[order],
            )
            self._features[key] = found
        return found

    def grey(self, side: SideArrays, parent: int, taken: Collection[int]) -> list[int]:
        children = side.roots if parent == _VIRTUAL else side.children[parent]
        return [c for c in children if side.matched[c] != 1 and c not in taken]

    def _buckets(self, side: SideArrays, orders: list[int]) -> dict[tuple[int, str], list[int]]:
        buckets: dict[tuple[int, str], list[int]] = defaultdict(list)
        for order in orders:
            buckets[self.feature(side, order).bucket].append(order)
        return buckets

    def _where(self, tp: int, gp: int, parent_confidence: float) -> str:
        if tp == _VIRTUAL:
            return "both roots"
        how = "matched" if tp in self.matched_parents else f"proposed, {parent_confidence:.2f}"
        return f"under {self.t.names[tp]} ↔ {self.g.names[gp]} ({how})"

    def pair_children(self, tp: int, gp: int, parent_confidence: float) -> list[tuple[int, int]]:
        """Propose pairs among the grey children of the pair (tp, gp); the new pairs."""
        t_grey = self.grey(self.t, tp, self.proposed)
        if not t_grey:
            return []
        self.visited.append((tp, gp, parent_confidence))
        where = self._where(tp, gp, parent_confidence)
        return self.pair_lists(t_grey, self.grey(self.g, gp, self.taken), where, parent_confidence)

    def pair_lists(
        self,
        t_grey: list[int],
        g_grey: list[int],
        where: str,
        parent_confidence: float,
        *,
        least: float = 0.0,
        fused: bool = True,
    ) -> list[tuple[int, int]]:
        """Propose pairs between two lists of grey nodes (in execution order), bucket by
        bucket; those scoring under ``least`` are left out. The new pairs."""
        t_buckets = self._buckets(self.t, t_grey)
        g_buckets = self._buckets(self.g, g_grey)
        found: list[tuple[int, int]] = []
        for bucket, t_orders in t_buckets.items():
            g_orders = g_buckets.get(bucket, [])
            if not g_orders:
                continue
            if fused and len(t_orders) != len(g_orders):
                t_orders, g_orders = self._flag_fused(t_orders, g_orders, where, parent_confidence)
            for i, j, scored in align(
                len(t_orders), len(g_orders), self._scorer(t_orders, g_orders)
            ):
                if scored.confidence < least:
                    continue
                t_order, g_order = t_orders[i], g_orders[j]
                confidence = round(scored.confidence * (0.6 + 0.4 * parent_confidence), 4)
                reason = "; ".join([where, *scored.reasons[:_REASONS_SHOWN]])
                self.proposed[t_order] = g_order
                self.taken[g_order] = t_order
                self.confidence[t_order] = confidence
                self.suggestions.append((t_order, g_order, confidence, reason))
                found.append((t_order, g_order))
        return found

    def _scorer(self, t_orders: list[int], g_orders: list[int]) -> _Score:
        return _Score(self, t_orders, g_orders)

    def _flag_fused(
        self, t_orders: list[int], g_orders: list[int], where: str, parent_confidence: float
    ) -> tuple[list[int], list[int]]:
        """Flag fused nodes (one for a run on the other side) and leave them out of the 1:1
        alignment."""
        t_feats = [self.feature(self.t, o) for o in t_orders]
        g_feats = [self.feature(self.g, o) for o in g_orders]
        left_t, left_g = set(t_orders), set(g_orders)
        for whole, run in fused_runs(t_feats, g_feats):
            parts = tuple(g_orders[k] for k in run)
            self._add_fused((t_orders[whole],), parts, where, parent_confidence)
            left_t.discard(t_orders[whole])
            left_g.difference_update(parts)
        for whole, run in fused_runs(g_feats, t_feats):
            parts = tuple(t_orders[k] for k in run)
            if g_orders[whole] in left_g and left_t.issuperset(parts):
                self._add_fused(parts, (g_orders[whole],), where, parent_confidence)
                left_g.discard(g_orders[whole])
                left_t.difference_update(parts)
        return [o for o in t_orders if o in left_t], [o for o in g_orders if o in left_g]

    def _add_fused(
        self, t_parts: tuple[int, ...], g_parts: tuple[int, ...], where: str, parent: float
    ) -> None:
        one, many = (self.t, t_parts[0]), (self.g, g_parts)
        if len(t_parts) > 1:
            one, many = (self.g, g_parts[0]), (self.t, t_parts)
        label = self.feature(*one).raw_label
        reason = (
            f"{where}; {one[0].names[one[1]]} ({label}) does the work of "
            f"{len(many[1])} nodes: its tensors are theirs joined along one axis"
        )
        self.fused.append((t_parts, g_parts, round(0.9 * (0.6 + 0.4 * parent), 4), reason))
        self.taken.update(dict.fromkeys(g_parts, -1))
        self.proposed.update(dict.fromkeys(t_parts, -1))
        self._fused_children(t_parts, g_parts, f"inside fused {one[0].names[one[1]]}", parent)

    def _fused_children(
        self, t_parts: tuple[int, ...], g_parts: tuple[int, ...], where: str, parent: float
    ) -> None:
        """Inside a fused group the children fuse alike (the fused qkv's parameters_grad and
        its linear call against those of q, k and v): flagged the same way, bucket by bucket."""
        t_buckets = self._buckets(
            self.t, [c for p in t_parts for c in self.grey(self.t, p, self.proposed)]
        )
        g_buckets = self._buckets(
            self.g, [c for p in g_parts for c in self.grey(self.g, p, self.taken)]
        )
        for bucket, t_orders in t_buckets.items():
            g_orders = g_buckets.get(bucket, [])
            if g_orders and len(t_orders) != len(g_orders):
                self._flag_fused(t_orders, g_orders, where, parent)

    def run(self, starts: Iterable[tuple[int, int, float]]) -> None:
        """Top-down from ``starts``; then, for what is left grey, one level apart
        (:mod:`.levels`) and top-down again from what that pairs, until nothing new pairs."""
        todo = deque(starts)
        self.matched_parents = {tp for tp, _gp, _confidence in todo}
        while todo:
            while todo:
                tp, gp, confidence = todo.popleft()
                for t_order, g_order in self.pair_children(tp, gp, confidence):
                    todo.append((t_order, g_order, self.confidence[t_order]))
            visited, self.visited = self.visited, []
            for tp, gp, confidence in visited:
                for t_order, g_order in one_level_apart(self, tp, gp, confidence):
                    todo.append((t_order, g_order, self.confidence[t_order]))


class _Score:
    """Scores (i, j) of one bucket's alignment; a pair a user rejected scores nothing."""

    def __init__(self, walk: _Walk, t_orders: list[int], g_orders: list[int]) -> None:
        self.walk, self.t_orders, self.g_orders = walk, t_orders, g_orders
        self.t_ranks = _label_ranks([walk.feature(walk.t, o).label for o in t_orders])
        self.g_ranks = _label_ranks([walk.feature(walk.g, o).label for o in g_orders])

    def __call__(self, i: int, j: int) -> Scored:
        walk = self.walk
        t_order, g_order = self.t_orders[i], self.g_orders[j]
        if (walk.t.names[t_order], walk.g.names[g_order]) in walk.rejected:
            return Scored(0.0, ())
        t, g = walk.feature(walk.t, t_order), walk.feature(walk.g, g_order)
        if t.label == g.label:  # where among the calls of that one operation (or class)
            among = f"{t.raw_label} {'modules' if t.kind == NodeType.MODULE else 'calls'}"
            tp = Position(*self.t_ranks[i], among=among)
            gp = Position(*self.g_ranks[j], among=among)
        else:
            tp, gp = Position(i, len(self.t_orders)), Position(j, len(self.g_orders))
        return score(t, g, tp, gp)


def _label_ranks(labels: list[str]) -> list[tuple[int, int]]:
    """(index among the nodes of the same label, how many have it), for each node."""
    counts: dict[str, int] = defaultdict(int)
    ranks = []
    for label in labels:
        ranks.append(counts[label])
        counts[label] += 1
    return [(rank, counts[label]) for rank, label in zip(ranks, labels, strict=True)]


def _starts(target: SideArrays) -> list[tuple[int, int, float]]:
    """The roots, then every matched pair with a grey child (any pair the build or a user made)."""
    starts = [(_VIRTUAL, _VIRTUAL, 1.0)]
    for order, children in enumerate(target.children):
        grey_child = any(target.matched[c] != 1 for c in children)
        if grey_child and target.matched[order] == 1 and target.counterpart[order] >= 0:
            starts.append((order, int(target.counterpart[order]), 1.0))
    return starts


def _under(side: SideArrays, order: int, top: int) -> bool:
    while order >= 0:
        if order == top:
            return True
        order = int(side.parent[order])
    return False


def propose(
    db: VisDb,
    step: int,
    rank: int,
    *,
    rejected: Collection[tuple[str, str]] = (),
    under: str | None = None,
) -> Proposals:
    """Proposals for one (step, rank)'s grey target nodes, strongest evidence first within
    the walk's order (parents before children); ``under``: only those below that target node."""
    # No collector pause here (there was one): this runs inside the server, on a request's
    # thread, and the collector is the whole interpreter's. The command-line callers pause it
    # (graphboard/executor.py), a process that does nothing else.
    target = load_side(db, GraphKey(TARGET_SIDE, step, rank))
    golden = load_side(db, GraphKey(GOLDEN_SIDE, step, rank))
    walk = _Walk(target, golden, rejected)
    walk.run(_starts(target))
    return _named(walk, _keep(db, target, under))


def _keep(db: VisDb, target: SideArrays, under: str | None) -> Callable[[int], bool]:
    if under is None:
        return lambda order: True
    top = node_data.orders_of_names(db, target.key, [under]).get(under, -2)
    return lambda order: _under(target, order, top)


def _named(walk: _Walk, keep: Callable[[int], bool]) -> Proposals:
    t, g = walk.t, walk.g
    step, rank = t.key.step, t.key.rank
    return Proposals(
        suggestions=[
            Suggestion(step, rank, t.names[target], g.names[golden], confidence, reason)
            for target, golden, confidence, reason in walk.suggestions
            if keep(target)
        ],
        fused=[
            Fused(
                step,
                rank,
                tuple(t.names[o] for o in t_parts),
                tuple(g.names[o] for o in g_parts),
                confidence,
                reason,
            )
            for t_parts, g_parts, confidence, reason in walk.fused
            if keep(t_parts[0])
        ],
    )
