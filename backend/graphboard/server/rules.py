"""The ``rules`` query parameter: which rule set's verdicts a read answers with.

``msprobe`` (the default) is what tb_nodes' precision_index holds, as tb_graph_ascend shows
it; ``dtype-aware`` is graphboard's second rule set (compare/dtype_aware.py), stored beside it
at build time, so switching needs no rebuild.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Depends, Query

from graphboard.server.deps import GraphDb
from graphboard.store.reader import VisDb

RuleSet = Literal["msprobe", "dtype-aware"]
RulesQuery = Annotated[
    RuleSet,
    Query(
        description="the verdicts' rule set: msprobe's (tb_nodes.precision_index) or "
        "graphboard's dtype-aware (a narrower floating target judged against the noise its "
        "dtypes and inputs explain)"
    ),
]


def ruled_db(db: GraphDb, rules: RulesQuery = "msprobe") -> VisDb:
    """The request's reader, answering under ``rules``."""
    db.use_rules(rules)
    return db


RuledDb = Annotated[VisDb, Depends(ruled_db)]
