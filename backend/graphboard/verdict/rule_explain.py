"""A stored target node's dtype-aware working, read through the reader: its parameters and its
counterpart's (and a backward node's forward twin's) handed to compare/dtype_explain.py."""

from __future__ import annotations

from graphboard.compare.dtype_aware import NodeVerdict
from graphboard.compare.dtype_explain import explain_node
from graphboard.compare.dtype_graph import forward_twin
from graphboard.distributed.peer_verdicts import META_KEY, stored_peers
from graphboard.graph.model import GOLDEN_SIDE
from graphboard.store import rule_context_table
from graphboard.store.reader import GraphKey, VisDb, graphs, node_data, summaries
from graphboard.store.reference_table import reference_noise
from graphboard.verdict.models import WorstMetricOut


def explain_stored(db: VisDb, key: GraphKey, name: str) -> NodeVerdict | None:
    """None when the node is unknown, unmatched or has nothing to judge."""
    mode = db.config().mode
    summary = summaries.summary(db, key, name)
    golden_key = GraphKey(GOLDEN_SIDE, key.step, key.rank)
    if (
        mode is None
        or summary is None
        or not summary.counterpart
        or not graphs.has_graph(db, golden_key)
    ):
        return None
    twin = None
    twin_reference = None
    twin_name = forward_twin(name)
    twin_summary = summaries.summary(db, key, twin_name) if twin_name is not None else None
    if twin_name is not None and twin_summary is not None and twin_summary.counterpart:
        twin = (
            twin_name,
            node_data.params(db, key, twin_name) or [],
            node_data.params(db, golden_key, twin_summary.counterpart) or [],
        )
        twin_reference = reference_noise(db.conn, key.graph_id, twin_name)
    return explain_node(
        name,
        node_data.params(db, key, name) or [],
        node_data.params(db, golden_key, summary.counterpart) or [],
        mode,
        twin,
        reference_noise(db.conn, key.graph_id, name),
        twin_reference,
        stored_peers({META_KEY: graphs.meta(db).get(META_KEY)}, key.graph_id, name),
        rule_context_table.read(db.conn, key.graph_id, name),
    )


def rule_worst_metric(db: VisDb, key: GraphKey, name: str) -> WorstMetricOut | None:
    """The parameter a node's dtype-aware verdict comes from, as the verdict's worst metric:
    its measured d beside the band, and the reason."""
    found = explain_stored(db, key, name)
    deciding = found.deciding if found is not None else None
    if deciding is None:
        return None
    shown = None
    if deciding.difference is not None:
        band = f", band {deciding.band:.3g}" if deciding.band is not None else ""
        shown = f"{deciding.difference:.3g}{band}"
    return WorstMetricOut(
        parameter=deciding.key,
        result=deciding.verdict.label,
        metric="d" if deciding.difference is not None else None,
        value=deciding.difference,
        shown=shown,
        message=deciding.reason,
    )
