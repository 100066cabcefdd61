"""The entry point: pair every (side, step), check the data, write annotations, flags, links
and the topology in one transaction."""

from __future__ import annotations

import gc
import sqlite3
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from graphboard.distributed.annotations import per_node
from graphboard.distributed.apis import P2P_FAMILIES
from graphboard.distributed.calls import Call
from graphboard.distributed.collectives import link_collectives
from graphboard.distributed.context import PairingContext, StepKey
from graphboard.distributed.model import CommNode, Link, LinkSummary
from graphboard.distributed.p2p import P2P_GROUP, link_p2p
from graphboard.distributed.verdicts import unknown
from graphboard.store.links import Annotation, CommNodeRow, LinkRow, node_id, write_links
from graphboard.topology import Transfer, build_topologies, topology_counts, topology_rows


def traffic(links: Iterable[Link]) -> Counter[Transfer]:
    """How many transfers went each way, by API and verdict: what the topology is built from."""
    counts: Counter[Transfer] = Counter()
    for link in links:
        status = link.verdict.status.value
        source, target, api, linked = link.source.rank, link.target.rank, link.api, link.linked
        counts[(link.side, link.step, source, target, api, status, linked)] += 1
        if link.mutual:
            counts[(link.side, link.step, target, source, api, status, linked)] += 1
    return counts


def dumped_ranks(
    nodes: Sequence[CommNode], dumped: Iterable[tuple[str, int, int]] | None
) -> dict[StepKey, set[int]]:
    ranks: dict[StepKey, set[int]] = defaultdict(set)
    for side, step, rank in dumped or ():
        ranks[(side, step)].add(rank)
    for node in nodes:  # a rank with communication nodes was dumped, whatever the caller says
        ranks[(node.side, node.step)].add(node.rank)
    return dict(ranks)


def _counts(
    calls: list[Call], links: list[Link], rows: list[LinkRow], node_rows: list[CommNodeRow]
) -> dict[str, Any]:
    linked = [link for link in links if link.linked]
    return {
        "comm_nodes": len(calls),
        "linked_nodes": sum(1 for row in node_rows if row.linked_peers),
        "links": len(linked),
        "unlinked": len(links) - len(linked),
        "link_rows": len(rows),
        "links_by_api": dict(sorted(Counter(link.api for link in linked).items())),
        "links_by_verdict": dict(
            sorted(Counter(str(link.verdict.status) for link in linked).items())
        ),
        "nodes_by_verdict": dict(sorted(Counter(row.verdict for row in node_rows).items())),
    }


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Linking keeps ~10 acyclic objects per link alive at once; refcounting frees them, and
    the cyclic collector would only rescan the growing heap over and over (it doubled the
    time of a 1,024-rank link in bench/bench_links.py)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def link_ranks(
    conn: sqlite3.Connection,
    nodes: Sequence[CommNode],
    overflow_check: bool,
    dumped: Iterable[tuple[str, int, int]] | None = None,
) -> LinkSummary:
    """Link communication nodes across ranks and write the links (see the package docstring).

    ``dumped`` lists every built (side, step, rank), so that a rank without communication
    nodes still counts as present; without it, the ranks holding communication nodes are.
    """
    with _collector_paused():
        return _link(conn, nodes, overflow_check, dumped)


def _link(
    conn: sqlite3.Connection,
    nodes: Sequence[CommNode],
    overflow_check: bool,
    dumped: Iterable[tuple[str, int, int]] | None,
) -> LinkSummary:
    started = time.perf_counter()
    present = dumped_ranks(nodes, dumped)
    # timsort is linear on the per-rank runs the pipeline hands over already in order
    ordered = sorted(nodes, key=lambda node: (node.side, node.step, node.rank, node.order))
    calls = [Call.of(node) for node in ordered]
    ctx = PairingContext(present)
    link_p2p(ctx, calls)
    link_collectives(ctx, calls)
    ctx.warn_missing_ranks()
    links = ctx.links
    paired = time.perf_counter()

    link_rows: list[LinkRow] = []
    by_node = per_node(links, overflow_check, link_rows)
    annotations: list[Annotation] = []
    node_rows: list[CommNodeRow] = []
    for call in calls:
        node = call.node
        entry = by_node.get(id(node))
        text = entry.annotation() if entry is not None else None
        if text is not None:
            annotations.append(
                Annotation(text, node_id(node.side, node.step, node.rank, node.name))
            )
        verdict = entry.verdict() if entry is not None else unknown("not linked")
        node_rows.append(
            CommNodeRow(
                node.side,
                node.step,
                node.rank,
                node.name,
                call.api,
                call.kind(),
                P2P_GROUP if call.family in P2P_FAMILIES else call.group_key,
                entry.linked if entry is not None else 0,
                entry.missing if entry is not None else 0,
                str(verdict.status),
                verdict.reason,
            )
        )
    graphs = build_topologies(traffic(links), present)
    edge_rows, rank_rows = topology_rows(graphs, present)
    write_links(conn, annotations, link_rows, node_rows, edge_rows, rank_rows)

    counts = _counts(calls, links, link_rows, node_rows)
    counts["topology"] = topology_counts(graphs, present)
    counts["seconds"] = {
        "pairing": round(paired - started, 4),
        "total": round(time.perf_counter() - started, 4),
    }
    return LinkSummary(warnings=ctx.warnings.all(), counts=counts)
