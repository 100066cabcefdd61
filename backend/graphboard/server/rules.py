"""The ``rules`` query parameter: which rule set's verdicts a read answers with.

``msprobe`` (the default) is what tb_nodes' precision_index holds, as tb_graph_ascend shows
it; ``dtype-aware`` is graphboard's second rule set (compare/dtype_aware.py), stored beside it
at build time, so switching needs no rebuild. A route takes it as a query parameter and hands
it to each read that answers with verdicts; it is never set on the reader.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Query

RuleSet = Literal["msprobe", "dtype-aware"]
DEFAULT_RULES: RuleSet = "msprobe"
RulesQuery = Annotated[
    RuleSet,
    Query(
        description="the verdicts' rule set: msprobe's (tb_nodes.precision_index) or "
        "graphboard's dtype-aware (a narrower floating target judged against the noise its "
        "dtypes and inputs explain)"
    ),
]
