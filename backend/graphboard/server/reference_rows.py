"""A node's noise reference (-nr) beside its target and golden rows, for the node view.

The reference's statistics and measured noise ``d_R`` come from gb_reference
(store/reference_table.py); ``d_T`` and the band are the dtype-aware working of the stored
verdict (verdict/rule_explain.py), so the three columns show what the verdict was judged on.
"""

from __future__ import annotations

from graphboard.graph.model import TARGET_SIDE
from graphboard.server import schemas
from graphboard.server.param_stats import stat_number
from graphboard.store.reader import GraphKey, VisDb
from graphboard.store.reference_table import has_table, read
from graphboard.verdict.rule_explain import explain_stored


def attach_reference(
    db: VisDb, key: GraphKey, target_name: str | None, rows: list[schemas.ParamRowOut]
) -> str | None:
    """Set each row's ``reference`` from the file's noise reference of the target node
    ``target_name``; returns the golden node the reference was matched to (None: no
    reference for this node, or none in the file)."""
    if target_name is None or not has_table(db.conn):
        return None
    target_key = GraphKey(TARGET_SIDE, key.step, key.rank)
    stored = read(db.conn, target_key.graph_id, target_name)
    if stored is None:
        return None
    judged = explain_stored(db, target_key, target_name)
    verdicts = {param.key: param for param in judged.params} if judged is not None else {}
    for row in rows:
        found = stored.params.get(row.key)
        if found is None:
            continue
        verdict = verdicts.get(row.key)
        row.reference = schemas.ReferenceParamOut(
            dtype=found.dtype,
            shape=found.shape,
            stats=schemas.ParamStats(
                max=stat_number(found.max),
                min=stat_number(found.min),
                mean=stat_number(found.mean),
                norm=stat_number(found.norm),
            ),
            d_target=stat_number(verdict.difference) if verdict is not None else None,
            d_reference=stat_number(found.noise),
            band=stat_number(verdict.band) if verdict is not None else None,
            verdict=verdict.verdict.label if verdict is not None else None,
        )
    return stored.golden
