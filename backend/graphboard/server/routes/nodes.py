"""Walking one graph: children pages, a node's two sides, paths, lookups, cross-rank peers."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from graphboard.compare.rule_sets import MSPROBE
from graphboard.graph.sides import Side, spoken
from graphboard.server import present, schemas
from graphboard.server.deps import Cursor, ExistingGraph, GraphDb, NodeName, PageLimit, Rank, Step
from graphboard.server.errors import NotFound
from graphboard.server.param_stats import rank_stats_by_name, stats_by_name
from graphboard.server.reference_rows import attach_reference
from graphboard.server.rules import Rules
from graphboard.store.reader import GraphKey, NodeSummary, VisDb, graphs, node_data, summaries, tree
from graphboard.store.reader.peers import peer_links

router = APIRouter(prefix="/api/graphs", tags=["nodes"], responses=schemas.ERRORS)


def require_node(db: VisDb, key: GraphKey, name: str, rules: str = MSPROBE) -> NodeSummary:
    """The node ``name`` (its verdict under ``rules``; existence does not depend on them)."""
    found = summaries.summary(db, key, name, rules)
    if found is None:
        raise NotFound(
            f"no {spoken(key.side)} node {name!r} in step {key.step}, rank {key.rank}",
            code="unknown_node",
        )
    return found


@router.get(
    "/{graph:path}/children", response_model=schemas.ChildrenPage, summary="A page of children"
)
def children(
    db: GraphDb,
    rules: Rules,
    key: ExistingGraph,
    limit: PageLimit,
    cursor: Cursor = None,
    parent: Annotated[
        str | None, Query(max_length=4096, description="omit for the root's children")
    ] = None,
    micro_step: Annotated[
        schemas.Index | None, Query(description="only the root's children in this micro step")
    ] = None,
) -> schemas.ChildrenPage:
    """The parent's children in execution (sibling) order, one page at a time: pass
    ``next_cursor`` back as ``cursor``. Without ``parent``, the root and its children."""
    if parent is None:
        top = tree.root(db, key, rules)
        if top is None:
            raise NotFound("the graph has no root node", code="unknown_node")
    else:
        top = require_node(db, key, parent, rules)
    page = tree.children(
        db,
        key,
        top.name,
        after=cursor,
        limit=limit,
        micro_step=micro_step if top.parent is None else None,
        rules=rules,
    )
    config = db.config()
    return schemas.ChildrenPage(
        parent=present.node_out(top, key.side, config),
        items=present.nodes_out(page.items, key.side, config),
        next_cursor=page.next_cursor,
    )


@router.get(
    "/{graph:path}/node", response_model=schemas.NodeDetailOut, summary="Both sides of a node"
)
def node(db: GraphDb, key: ExistingGraph, name: NodeName) -> schemas.NodeDetailOut:
    """The node and its counterpart: paired input/output rows (by name) with every stored
    statistic, metric, result and message; stacks, merge info and cross-rank links."""
    record = node_data.node(db, key, name)
    if record is None:
        require_node(db, key, name)
        raise AssertionError("unreachable")
    other_key = GraphKey(Side.from_data_source(key.side).other.data_source, key.step, key.rank)
    counterpart = None
    if record.summary.counterpart and graphs.has_graph(db, other_key):
        counterpart = node_data.node(db, other_key, record.summary.counterpart)
    on_target = Side.from_data_source(key.side) is Side.TARGET
    target, golden = (record, counterpart) if on_target else (counterpart, record)
    target_side, golden_side = Side.TARGET.data_source, Side.GOLDEN.data_source
    config = db.config()
    rows = present.paired_rows(target, golden)
    stats = {
        side: stats_by_name(
            found.name, node_data.params(db, GraphKey(side, key.step, key.rank), found.name) or []
        )
        for side, found in ((target_side, target), (golden_side, golden))
        if found is not None
    }
    ranks = {
        side: rank_stats_by_name(
            found.name,
            node_data.rank_stats(db, GraphKey(side, key.step, key.rank), found.summary.node_order),
        )
        for side, found in ((target_side, target), (golden_side, golden))
        if found is not None
    }
    for row in rows:
        for side, fields in ((target_side, row.target), (golden_side, row.golden)):
            if fields is not None:
                fields.stats = stats[side].get(fields.name)
                fields.ranks = ranks[side].get(fields.name)
    reference_golden = attach_reference(db, key, target.name if target else None, rows)  # -nr
    return schemas.NodeDetailOut(
        target=present.side_out(target, target_side, config) if target else None,
        golden=present.side_out(golden, golden_side, config) if golden else None,
        rows=rows,
        reference_golden=reference_golden,
    )


@router.get("/{graph:path}/path", response_model=schemas.PathOut, summary="A node's ancestors")
def path(db: GraphDb, key: ExistingGraph, name: NodeName, rules: Rules) -> schemas.PathOut:
    """Root first, down to the node's parent: what to expand to reveal the node."""
    summary = require_node(db, key, name, rules)
    config = db.config()
    return schemas.PathOut(
        node=present.node_out(summary, key.side, config),
        ancestors=present.nodes_out(tree.ancestors(db, key, name, rules) or [], key.side, config),
    )


def _located(db: VisDb, key: GraphKey, found: NodeSummary | None, rules: str) -> schemas.LocatedOut:
    config = db.config()
    if found is None:
        return schemas.LocatedOut(node=None, ancestors=[])
    return schemas.LocatedOut(
        node=present.node_out(found, key.side, config),
        ancestors=present.nodes_out(
            tree.ancestors(db, key, found.name, rules) or [], key.side, config
        ),
    )


@router.get(
    "/{graph:path}/first-error",
    response_model=schemas.LocatedOut,
    summary="Where the first error is introduced",
)
def first_error(db: GraphDb, key: ExistingGraph, rules: Rules) -> schemas.LocatedOut:
    """The first node, in execution order, whose input tensors agree but which is flagged (an
    error first, else a warning), with its ancestors; ``node`` is null when there is none."""
    return _located(db, key, tree.first_error(db, key, rules), rules)


@router.get(
    "/{graph:path}/worst",
    response_model=schemas.LocatedOut,
    summary="The worst descendant of a node",
)
def worst(db: GraphDb, key: ExistingGraph, name: NodeName, rules: Rules) -> schemas.LocatedOut:
    """The first node in the subtree (itself included) at the subtree's worst level."""
    require_node(db, key, name, rules)
    return _located(db, key, tree.worst_descendant(db, key, name, rules), rules)


@router.get("/{graph:path}/peers", response_model=schemas.PeersOut, summary="Cross-rank peers")
def peers(
    db: GraphDb,
    name: NodeName,
    step: Step,
    rank: Rank,
    side: Annotated[schemas.SideName, Query(description=schemas.SIDE_DESCRIPTION)] = "target",
) -> schemas.PeersOut:
    """A communication node's counterparts on other ranks, with their precision and overflow
    as they are now (graphboard's links when the file has them, else msprobe's annotation)."""
    key = GraphKey(Side.parse(side).data_source, step, rank)
    if not graphs.has_graph(db, key):
        raise NotFound(
            f"the file has no {spoken(key.side)} graph for step {step}, rank {rank}",
            code="unknown_graph_part",
        )
    require_node(db, key, name)
    found = peer_links(db, key, name)
    assert found is not None
    config = db.config()
    return schemas.PeersOut(
        node=name,
        communication=found.communication,
        peers=[
            schemas.PeerOut(
                rank=peer.rank,
                name=peer.name,
                kind=peer.kind,
                stored_precision=peer.stored_precision,
                verdict=peer.verdict,
                reason=peer.reason,
                node=present.node_out(peer.node, key.side, config) if peer.node else None,
            )
            for peer in found.peers
        ],
    )
