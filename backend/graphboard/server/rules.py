"""The ``rules`` query parameter: which rule set's verdicts a read answers with.

``dtype-aware`` (the default, compare/rule_sets.py ``DEFAULT_RULES``) is graphboard's rule
set (compare/dtype_aware.py), stored beside msprobe's at build time, so switching needs no
rebuild; ``msprobe`` is what tb_nodes' precision_index holds, as tb_graph_ascend shows it. A
read that names no rule set answers under the default where the file holds its verdicts and
under msprobe's where it does not (msprobe's files, a build, md5 mode:
store/rule_columns.py ``file_default``); naming ``dtype-aware`` for such a file is refused
with the reason. A route takes the chosen rule set as a value (:data:`Rules`) and hands it
to each read that answers with verdicts; it is never set on the reader.
"""

from __future__ import annotations

from typing import Annotated, Literal, cast

from fastapi import Depends, Query

from graphboard.server.deps import GraphDb
from graphboard.store import rule_columns

RuleSet = Literal["msprobe", "dtype-aware"]
RulesQuery = Annotated[
    RuleSet | None,
    Query(
        description="the verdicts' rule set: graphboard's dtype-aware (a narrower floating "
        "target judged against the noise its dtypes and inputs explain) or msprobe's "
        "(tb_nodes.precision_index). Omitted: dtype-aware where the file holds its verdicts, "
        "msprobe's where it does not (msprobe's files, a build, md5 mode)"
    ),
]
FILE_DEFAULT: RuleSet | None = None  # omitted: the file's default (rule_columns.file_default)


def chosen_rules(db: GraphDb, rules: RulesQuery = FILE_DEFAULT) -> RuleSet:
    """The rule set the request answers under: the one it names, else the file's default.
    FastAPI hands the route and this function the same per-request reader."""
    return rules or cast(RuleSet, rule_columns.file_default(db.conn))


Rules = Annotated[RuleSet, Depends(chosen_rules)]
