"""Per-step rank topology: which ranks send data to which, and where that traffic went wrong.

One networkx ``DiGraph`` per (side, step): ranks are nodes (``in_dump`` False for a rank that
others name as a peer but that is absent from the dump), and an edge ``a -> b`` aggregates
every transfer of data from rank a to rank b, weighted by ``ops``. A collective where every
member exchanges with every other (all_reduce ...) counts in both directions.

networkx takes half a second to import, which every ``graph_build`` would pay, single-rank
ones included: it is imported only when some ranks exchanged data. A (side, step) without any
traffic gets no graph; its ranks are written as isolated ones.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    import networkx as nx

from graphboard.store.links import EdgeRow, RankRow

GraphKey = tuple[str, int]  # (side, step)


# Data that went (or should have gone) from one rank to another, as a plain tuple because a
# large run has millions of them: (side, step, source rank, target rank, API, verdict, linked).
# verdict is consistent | mismatch | unknown; linked is False when the peer's call was missing.
Transfer = tuple[str, int, int, int, str, str, bool]


def build_topologies(
    traffic: Mapping[Transfer, int], dumped: Mapping[GraphKey, Iterable[int]]
) -> dict[GraphKey, nx.DiGraph]:
    """One graph per (side, step) with traffic, from transfer counts (so networkx sees each
    edge rarely)."""
    if not traffic:
        return {}
    import networkx as nx

    graphs: dict[GraphKey, nx.DiGraph] = {}

    def graph_for(key: GraphKey) -> nx.DiGraph:
        graph = graphs.get(key)
        if graph is None:
            graph = graphs[key] = nx.DiGraph(side=key[0], step=key[1])
            graph.add_nodes_from(dumped.get(key, ()), in_dump=True)
        return graph

    for (side, step, source, target, api, verdict, linked), count in traffic.items():
        graph = graph_for((side, step))
        for rank in (source, target):
            if rank not in graph:
                graph.add_node(rank, in_dump=False)
        edge = graph.get_edge_data(source, target)
        if edge is None:
            graph.add_edge(source, target, ops=0, mismatches=0, unknown=0, unlinked=0)
            edge = graph[source][target]
            edge["apis"] = Counter()
        edge["ops"] += count
        edge["apis"][api] += count
        if not linked:
            edge["unlinked"] += count
        elif verdict == "mismatch":
            edge["mismatches"] += count
        elif verdict == "unknown":
            edge["unknown"] += count
    return graphs


def _edge_status(graph: nx.DiGraph, source: int, target: int, edge: dict[str, Any]) -> str:
    if not (graph.nodes[source]["in_dump"] and graph.nodes[target]["in_dump"]):
        return "missing"
    if edge["mismatches"]:
        return "mismatch"
    if edge["unlinked"]:
        return "unlinked"
    return "ok"


def _components(graph: nx.DiGraph) -> dict[int, int]:
    """Component number per rank, numbered in order of each component's lowest rank."""
    import networkx as nx

    components = sorted(nx.weakly_connected_components(graph), key=min)
    return {rank: index for index, members in enumerate(components) for rank in members}


def _quiet(
    graphs: Mapping[GraphKey, nx.DiGraph], dumped: Mapping[GraphKey, Iterable[int]]
) -> dict[GraphKey, list[int]]:
    """The dumped ranks of every (side, step) that exchanged no data at all."""
    return {key: sorted(ranks) for key, ranks in dumped.items() if key not in graphs}


def topology_rows(
    graphs: Mapping[GraphKey, nx.DiGraph], dumped: Mapping[GraphKey, Iterable[int]]
) -> tuple[list[EdgeRow], list[RankRow]]:
    edges: list[EdgeRow] = []
    ranks: list[RankRow] = []
    for (side, step), isolated in _quiet(graphs, dumped).items():
        # no edges: every rank is a component of its own, numbered by rank as networkx would be
        ranks.extend(
            RankRow(side, step, rank, 1, 0, 0, 0, index) for index, rank in enumerate(isolated)
        )
    for (side, step), graph in sorted(graphs.items()):
        for source, target, edge in graph.edges(data=True):
            edges.append(
                EdgeRow(
                    side,
                    step,
                    source,
                    target,
                    edge["ops"],
                    edge["mismatches"],
                    edge["unknown"],
                    edge["unlinked"],
                    orjson.dumps(dict(sorted(edge["apis"].items()))).decode(),
                    _edge_status(graph, source, target, edge),
                )
            )
        component = _components(graph)
        out_ops = dict(graph.out_degree(weight="ops"))
        in_ops = dict(graph.in_degree(weight="ops"))
        for rank, attributes in sorted(graph.nodes(data=True)):
            peers = set(graph.successors(rank)) | set(graph.predecessors(rank))
            ranks.append(
                RankRow(
                    side,
                    step,
                    rank,
                    1 if attributes["in_dump"] else 0,
                    out_ops[rank],
                    in_ops[rank],
                    len(peers - {rank}),
                    component[rank],
                )
            )
    return edges, ranks


def topology_counts(
    graphs: Mapping[GraphKey, nx.DiGraph], dumped: Mapping[GraphKey, Iterable[int]]
) -> dict[str, Any]:
    """What gb_meta "links" says about the topology: sizes and where it went wrong."""
    edges = mismatched = missing = 0
    components: dict[str, int] = {}
    absent: dict[str, list[int]] = {}
    for (side, step), isolated in _quiet(graphs, dumped).items():
        if isolated:
            components[f"{side}/{step}"] = len(isolated)
    for (side, step), graph in sorted(graphs.items()):
        label = f"{side}/{step}"
        for source, target, edge in graph.edges(data=True):
            edges += 1
            status = _edge_status(graph, source, target, edge)
            mismatched += status == "mismatch"
            missing += status == "missing"
        if graph.number_of_nodes():
            components[label] = len(set(_components(graph).values()))
        not_dumped = sorted(rank for rank, in_dump in graph.nodes(data="in_dump") if not in_dump)
        if not_dumped:
            absent[label] = not_dumped
    return {
        "edges": edges,
        "edges_with_mismatch": mismatched,
        "edges_to_missing_ranks": missing,
        "components": dict(sorted(components.items())),
        "missing_ranks": absent,
    }
