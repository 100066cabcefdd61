"""Who pairs with whom in one action: the requested pair, its forward/backward twins and,
on request, descendants by short name and call order, each checked against the current state."""

from __future__ import annotations

import re
from collections import defaultdict, deque
from collections.abc import Callable
from pathlib import Path

from graphboard.graph.model import API_COLLECTION_PREFIX, GOLDEN_SIDE, TARGET_SIDE, NodeType
from graphboard.graph.names import swap_direction
from graphboard.graph.sides import Side
from graphboard.matching.outcome import MatchFailure, Outcome, Skipped
from graphboard.matching.scoring import PairScorer
from graphboard.refusals import NotFound
from graphboard.store.reader import GraphKey, NodeSummary, VisDb, graphs, summaries, tree

_MODULE = re.compile(
    r"^(?:Module|Cell)\.(.+)\.([^.]+)\.(forward|backward|parameters_grad)(?:\.\d+)?$"
)
Pair = tuple[NodeSummary, NodeSummary]


def short_name(name: str, node_type: int) -> str:
    """What a child is called inside its parent, for pairing descendants by name and order:
    a module's attribute (``conv1.forward``), an API's function (``Functional.linear.forward``)."""
    if node_type == NodeType.MODULE:
        parsed = _MODULE.match(name)
        if parsed is not None:
            return f"{parsed.group(1).rsplit('.', 1)[-1]}.{parsed.group(3)}"
        return name
    if node_type == NodeType.API:
        parts = name.split(".")
        direction = parts[-1] if parts[-1] in ("forward", "backward") else ""
        return ".".join(parts[:2]) + "." + direction
    if name.startswith(API_COLLECTION_PREFIX):
        return API_COLLECTION_PREFIX
    return name


def _type_label(value: int) -> str:
    return {0: "a module", 1: "an API", 9: "an API collection"}.get(value, f"of type {value}")


class Planner:
    """Decides the pairs of one action against the state of one (step, rank)."""

    def __init__(self, db: VisDb, step: int, rank: int, data_root: Path) -> None:
        self.db = db
        self.step, self.rank = step, rank
        self.target_key, self.golden_key = (
            GraphKey(TARGET_SIDE, step, rank),
            GraphKey(GOLDEN_SIDE, step, rank),
        )
        for key in (self.target_key, self.golden_key):
            if not graphs.has_graph(db, key):
                raise NotFound(
                    f"the file has no {key.side} graph for step {step}, rank {rank}",
                    code="unknown_graph_part",
                )
        self.scorer = PairScorer(db, self.target_key, self.golden_key, data_root)
        self.claimed: set[tuple[str, str]] = set()  # (side, name) (un)paired by this action

    def _summary(self, key: GraphKey, name: str) -> NodeSummary:
        found = summaries.summary(self.db, key, name)
        if found is None:
            side = Side.from_data_source(key.side).value
            raise MatchFailure(
                "unknown_node", f"no {side} ({key.side}) node named {name!r}", status=404
            )
        return found

    def _claim(self, pair: Pair) -> None:
        self.claimed.add((TARGET_SIDE, pair[0].name))
        self.claimed.add((GOLDEN_SIDE, pair[1].name))

    def _twin(
        self, target: str, golden: str, outcome: Outcome, check: Callable[[str, str], Pair]
    ) -> Pair | None:
        """The forward/backward twin pair, if both twins exist and pass ``check``."""
        target_twin, golden_twin = swap_direction(target), swap_direction(golden)
        if target_twin is None or golden_twin is None:
            return None
        have_target = summaries.summary(self.db, self.target_key, target_twin) is not None
        have_golden = summaries.summary(self.db, self.golden_key, golden_twin) is not None
        if not (have_target or have_golden):
            return None
        if have_target != have_golden:
            missing = golden_twin if have_target else target_twin
            outcome.skipped.append(
                Skipped(target_twin, golden_twin, "no_twin", f"{missing} does not exist")
            )
            return None
        try:
            return check(target_twin, golden_twin)
        except MatchFailure as failure:
            outcome.skipped.append(Skipped(target_twin, golden_twin, failure.code, failure.message))
            return None

    # --- match -----------------------------------------------------------------------------

    def check_match(self, target: str, golden: str) -> Pair:
        t, g = self._summary(self.target_key, target), self._summary(self.golden_key, golden)
        if t.node_type != g.node_type:
            raise MatchFailure(
                "type_mismatch",
                f"{target} is {_type_label(t.node_type)} but {golden} is {_type_label(g.node_type)}; "
                "only nodes of the same type can be matched",
            )
        for node, side in ((t, TARGET_SIDE), (g, GOLDEN_SIDE)):
            if (side, node.name) in self.claimed:
                raise MatchFailure(
                    "already_matched", f"{node.name} is already paired in this request"
                )
            if node.matched:
                raise MatchFailure(
                    "already_matched",
                    f"{node.name} ({side}) is already matched with {node.counterpart}; unmatch it first",
                )
        return t, g

    def match(self, target: str, golden: str, *, descendants: bool, twins: bool) -> Outcome:
        outcome = Outcome(None)
        first = self.check_match(target, golden)
        self._claim(first)
        todo: deque[Pair] = deque([first])
        if twins and (twin := self._twin(target, golden, outcome, self.check_match)) is not None:
            self._claim(twin)
            todo.append(twin)
        while todo:
            pair = todo.popleft()
            try:
                outcome.pairs.append(self.scorer.score(*pair))
            except MatchFailure as failure:
                if pair is first:
                    raise
                outcome.skipped.append(
                    Skipped(pair[0].name, pair[1].name, failure.code, failure.message)
                )
                continue
            if descendants:
                for child_pair in self._child_pairs(*pair):
                    self._claim(child_pair)
                    todo.append(child_pair)
        return outcome

    def _child_pairs(self, t: NodeSummary, g: NodeSummary) -> list[Pair]:
        """Unmatched children of a new pair, paired by (short name, type) in call order."""
        waiting: dict[tuple[str, int], deque[NodeSummary]] = defaultdict(deque)
        for child in tree.children(self.db, self.golden_key, g.name).items:
            if not child.matched and (GOLDEN_SIDE, child.name) not in self.claimed:
                waiting[(short_name(child.name, child.node_type), child.node_type)].append(child)
        pairs = []
        for child in tree.children(self.db, self.target_key, t.name).items:
            if child.matched or (TARGET_SIDE, child.name) in self.claimed:
                continue
            queue = waiting.get((short_name(child.name, child.node_type), child.node_type))
            if queue:
                pairs.append((child, queue.popleft()))
        return pairs

    # --- unmatch ---------------------------------------------------------------------------

    def check_unmatch(self, target: str, golden: str) -> Pair:
        t, g = self._summary(self.target_key, target), self._summary(self.golden_key, golden)
        if not t.matched or t.counterpart != golden:
            now = f"matched with {t.counterpart}" if t.matched else "not matched"
            raise MatchFailure("not_matched", f"{target} is not matched with {golden} ({now})")
        return t, g

    def unmatch(self, target: str, golden: str, *, descendants: bool, twins: bool) -> Outcome:
        outcome = Outcome(None)
        pairs = [self.check_unmatch(target, golden)]
        if twins and (twin := self._twin(target, golden, outcome, self.check_unmatch)) is not None:
            pairs.append(twin)
        if descendants:
            for top, _golden in list(pairs):
                pairs.extend(self._matched_descendants(top))
        done: set[str] = set()
        for t, g in pairs:
            if t.name not in done:
                done.add(t.name)
                outcome.pairs.append(self.scorer.unpair(t, g))
        return outcome

    def _matched_descendants(self, top: NodeSummary) -> list[Pair]:
        """Every target descendant paired with a golden node that points back at it."""
        found: list[Pair] = []
        todo = deque([top.name])
        while todo:
            for child in tree.children(self.db, self.target_key, todo.popleft()).items:
                todo.append(child.name)
                if child.matched and child.counterpart:
                    golden = summaries.summary(self.db, self.golden_key, child.counterpart)
                    if golden is not None and golden.counterpart == child.name:
                        found.append((child, golden))
        return found
