"""Per-step rank topology: which ranks send data to which, and where that traffic went wrong.

Per (side, step): ranks (``in_dump`` False for a rank that others name as a peer but that is
absent from the dump), and one edge ``a -> b`` per ordered pair of ranks that exchanged data,
aggregating every transfer from rank a to rank b (``ops`` is its weight). A collective where
every member exchanges with every other (all_reduce ...) counts in both directions.

The traffic comes in two shapes. ``Transfer`` counts are pairwise (point-to-point, rooted
collectives). A ``Block`` stands for every ordered pair of two rank sets at once: one per
many↔many group call and verdict, so that a 1,024-rank world group is expanded into its million
edges once per step, not once per call, and every edge that saw the same blocks shares one
computation of its counts and its ``apis`` text.

Components are found with networkx on a sparse graph (each block as a path through its ranks,
plus the pairwise edges). networkx takes half a second to import, which every ``graph_build``
would pay, single-rank ones included: it is imported only when some ranks exchanged data.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import orjson

from graphboard.store.links import EdgeRow, RankRow

GraphKey = tuple[str, int]  # (side, step)
Pair = tuple[int, int]  # (source rank, target rank)

# Data that went (or should have gone) from one rank to another, as a plain tuple because a
# large run has millions of them: (side, step, source rank, target rank, API, verdict, linked).
# verdict is consistent | mismatch | unknown; linked is False when the peer's call was missing.
# A count may be negative: it corrects what a Block counted for that pair.
Transfer = tuple[str, int, int, int, str, str, bool]
# Every ordered pair (source, target), source != target, of two rank sets: (side, step, API,
# verdict, linked, sources, targets).
Block = tuple[str, int, str, str, bool, tuple[int, ...], tuple[int, ...]]


@dataclass(slots=True)
class _Tally:
    """Transfers over one edge, or over every edge that saw the same blocks."""

    ops: int = 0
    mismatches: int = 0
    unknown: int = 0
    unlinked: int = 0
    apis: Counter[str] = field(default_factory=Counter)

    def add(self, api: str, verdict: str, linked: bool, count: int) -> None:
        self.ops += count
        self.apis[api] += count
        if not linked:
            self.unlinked += count
        elif verdict == "mismatch":
            self.mismatches += count
        elif verdict == "unknown":
            self.unknown += count

    def merged(self, other: _Tally) -> _Tally:
        return _Tally(
            self.ops + other.ops,
            self.mismatches + other.mismatches,
            self.unknown + other.unknown,
            self.unlinked + other.unlinked,
            self.apis + other.apis,  # Counter addition also drops APIs netted to zero
        )

    def row(self) -> Edge:
        apis = orjson.dumps(dict(sorted((+self.apis).items()))).decode()
        return (self.ops, self.mismatches, self.unknown, self.unlinked, apis)


# (ops, mismatches, unknown, unlinked, apis JSON) of one edge
Edge = tuple[int, int, int, int, str]


@dataclass(slots=True)
class StepTopology:
    in_dump: dict[int, bool]  # every rank of the step: dumped, or only named by others
    edges: dict[Pair, Edge]
    # what connects the ranks, without a block's every pair: each block's ranks (connected
    # among themselves) and the pairwise edges
    spans: list[tuple[int, ...]]
    pairwise: list[Pair]
    _components: dict[int, int] | None = None

    def components(self) -> dict[int, int]:
        """Weakly connected component per rank, numbered in order of each one's lowest rank."""
        if self._components is None:
            self._components = self._find_components()
        return self._components

    def _find_components(self) -> dict[int, int]:
        ranks = sorted(self.in_dump)
        if not self.edges:  # every rank on its own, without importing networkx
            return {rank: index for index, rank in enumerate(ranks)}
        import networkx as nx

        graph = nx.Graph()
        graph.add_nodes_from(ranks)
        graph.add_edges_from(self.pairwise)
        for span in self.spans:  # a path through a block's ranks connects them all
            graph.add_edges_from(pairwise(span))
        found = sorted(nx.connected_components(graph), key=min)
        return {rank: index for index, members in enumerate(found) for rank in members}


def build_topologies(
    pairs: Mapping[Transfer, int],
    blocks: Mapping[Block, int],
    dumped: Mapping[GraphKey, Iterable[int]],
) -> dict[GraphKey, StepTopology]:
    """One topology per dumped (side, step), and per (side, step) that traffic names."""
    step_pairs: dict[GraphKey, dict[Pair, _Tally]] = defaultdict(dict)
    for (side, step, source, target, api, verdict, linked), count in pairs.items():
        tallies = step_pairs[(side, step)]
        tally = tallies.get((source, target))
        if tally is None:
            tally = tallies[(source, target)] = _Tally()
        tally.add(api, verdict, linked, count)
    step_blocks: dict[GraphKey, list[tuple[Block, int]]] = defaultdict(list)
    for block, count in blocks.items():
        step_blocks[(block[0], block[1])].append((block, count))

    topologies: dict[GraphKey, StepTopology] = {}
    for key in {*dumped, *step_pairs, *step_blocks}:
        in_dump = dict.fromkeys(dumped.get(key, ()), True)
        edges = _edges(step_blocks.get(key, []), step_pairs.get(key, {}))
        for source, target in edges:
            in_dump.setdefault(source, False)
            in_dump.setdefault(target, False)
        spans = [tuple(sorted({*block[5], *block[6]})) for block, _ in step_blocks.get(key, [])]
        pairwise = [pair for pair, tally in step_pairs.get(key, {}).items() if tally.ops > 0]
        topologies[key] = StepTopology(in_dump, edges, spans, pairwise)
    return topologies


def _edges(blocks: list[tuple[Block, int]], pairs: dict[Pair, _Tally]) -> dict[Pair, Edge]:
    # which blocks each pair saw: edges with the same blocks share one tally and one text
    seen: dict[Pair, tuple[int, ...]] = {}
    for index, ((_s, _t, _a, _v, _l, sources, targets), _count) in enumerate(blocks):
        mine = (index,)
        for source in sources:
            for target in targets:
                if source != target:
                    pair = (source, target)
                    seen[pair] = seen.get(pair, ()) + mine
    shared: dict[tuple[int, ...], _Tally] = {}
    rows: dict[tuple[int, ...], Edge] = {}
    edges: dict[Pair, Edge] = {}
    for pair, signature in seen.items():
        tally = shared.get(signature)
        if tally is None:
            tally = shared[signature] = _Tally()
            for index in signature:
                (_s, _t, api, verdict, linked, _f, _to), count = blocks[index]
                tally.add(api, verdict, linked, count)
            rows[signature] = tally.row()
        extra = pairs.get(pair)
        edges[pair] = rows[signature] if extra is None else tally.merged(extra).row()
    for pair, tally in pairs.items():
        if pair not in seen and tally.ops > 0:
            edges[pair] = tally.row()
    return edges


def topology_tables(
    topologies: Mapping[GraphKey, StepTopology],
) -> tuple[list[EdgeRow], list[RankRow], dict[str, Any]]:
    """gb_topology and gb_topology_ranks rows, and what gb_meta "links" says about them (sizes
    and where it went wrong), in one pass over the edges: a world group has a million."""
    edges: list[EdgeRow] = []
    ranks: list[RankRow] = []
    mismatched = missing = 0
    components: dict[str, int] = {}
    absent: dict[str, list[int]] = {}
    for (side, step), topology in sorted(topologies.items()):
        in_dump = topology.in_dump
        out_ops: Counter[int] = Counter()
        in_ops: Counter[int] = Counter()
        peers: dict[int, set[int]] = defaultdict(set)
        for (source, target), (ops, mismatches, unknown, unlinked, apis) in topology.edges.items():
            if not (in_dump[source] and in_dump[target]):
                status = "missing"
                missing += 1
            elif mismatches:
                status = "mismatch"
                mismatched += 1
            else:
                status = "unlinked" if unlinked else "ok"
            edges.append(
                (side, step, source, target, ops, mismatches, unknown, unlinked, apis, status)
            )
            out_ops[source] += ops
            in_ops[target] += ops
            if source != target:
                peers[source].add(target)
                peers[target].add(source)
        component = topology.components()
        for rank, dumped in sorted(in_dump.items()):
            ranks.append(
                (
                    side,
                    step,
                    rank,
                    1 if dumped else 0,
                    out_ops[rank],
                    in_ops[rank],
                    len(peers.get(rank, ())),
                    component[rank],
                )
            )
        label = f"{side}/{step}"
        if in_dump:
            components[label] = len(set(component.values()))
        not_dumped = sorted(rank for rank, dumped in in_dump.items() if not dumped)
        if not_dumped:
            absent[label] = not_dumped
    counts = {
        "edges": len(edges),
        "edges_with_mismatch": mismatched,
        "edges_to_missing_ranks": missing,
        "components": components,
        "missing_ranks": absent,
    }
    return edges, ranks, counts
