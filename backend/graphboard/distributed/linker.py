"""The entry point: pair every (side, step), check the data, write annotations, flags, links
and the topology in one transaction."""

from __future__ import annotations

import sqlite3
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence

from graphboard.distributed.calls import Call
from graphboard.distributed.collectives import link_collectives
from graphboard.distributed.context import PairingContext, StepKey
from graphboard.distributed.model import CommNode, LinkSummary
from graphboard.distributed.p2p import link_p2p
from graphboard.distributed.peer_verdicts import sources_of
from graphboard.distributed.tables import build_tables
from graphboard.store.links import write_links
from graphboard.topology import build_topologies, topology_tables


def dumped_ranks(
    nodes: Sequence[CommNode], dumped: Iterable[tuple[str, int, int]] | None
) -> dict[StepKey, set[int]]:
    ranks: dict[StepKey, set[int]] = defaultdict(set)
    for side, step, rank in dumped or ():
        ranks[(side, step)].add(rank)
    for node in nodes:  # a rank with communication nodes was dumped, whatever the caller says
        ranks[(node.side, node.step)].add(node.rank)
    return dict(ranks)


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
    clock = _Stages()
    present = dumped_ranks(nodes, dumped)
    # timsort is linear on the per-rank runs the pipeline hands over already in order
    ordered = sorted(nodes, key=lambda node: (node.side, node.step, node.rank, node.order))
    calls = [Call.of(node) for node in ordered]
    clock.stage("read")
    ctx = PairingContext(present)
    link_p2p(ctx, calls)
    clock.stage("p2p")
    link_collectives(ctx, calls)
    ctx.warn_missing_ranks()
    clock.stage("collectives")
    tables, traffic, counter = build_tables(calls, ctx, overflow_check)
    clock.stage("rows")
    topologies = build_topologies(traffic.pairs, traffic.blocks, present)
    tables.edges, tables.ranks, topology = topology_tables(topologies)
    clock.stage("topology")
    write_links(conn, tables)
    clock.stage("write")

    counts = counter.as_dict(len(calls), tables)
    counts["topology"] = topology
    counts["seconds"] = clock.seconds()
    return LinkSummary(ctx.warnings.all(), counts, sources_of(ctx, calls))


class _Stages:
    """Wall seconds per stage of a link, for gb_meta and the benchmark."""

    def __init__(self) -> None:
        self.started = self.last = time.perf_counter()
        self.stages: dict[str, float] = {}

    def stage(self, name: str) -> None:
        now = time.perf_counter()
        self.stages[name] = round(now - self.last, 4)
        self.last = now

    def seconds(self) -> dict[str, float]:
        pairing = ("read", "p2p", "collectives")
        return {
            **self.stages,
            "pairing": round(sum(self.stages.get(name, 0.0) for name in pairing), 4),
            "total": round(time.perf_counter() - self.started, 4),
        }
