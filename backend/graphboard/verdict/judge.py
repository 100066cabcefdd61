"""A finished build's verdict, from the read API's own reader: counts per precision level
and overflow level over the target side's graphs (every step and rank, or the ones asked
for), and the first node that introduces an error, with its worst metric and the viewer URL
that opens it. One computation for ``GET /api/jobs/{id}/verdict``, ``graphboard verdict``,
the demo and graph_build's compare summary."""

from __future__ import annotations

from typing import cast
from urllib.parse import urlencode

from graphboard.diagnose.answer import diagnose
from graphboard.errors import StoreError
from graphboard.graph.model import TARGET_SIDE
from graphboard.store import rule_columns
from graphboard.store.reader import GraphKey, NodeSummary, VisDb, listing, search, tree
from graphboard.store.reader.rules import rule_counts
from graphboard.verdict import models
from graphboard.verdict.models import LevelName
from graphboard.verdict.rule_explain import rule_worst_metric
from graphboard.verdict.url import viewer_url
from graphboard.verdict.worst_metric import worst_metric

OVERFLOWS = ("medium", "high", "critical")


def _first_error(
    db: VisDb, keys: list[GraphKey], rules: str
) -> tuple[GraphKey, NodeSummary] | None:
    """The first (step, rank) whose graph introduces an error under ``rules``; failing that,
    a warning."""
    found: list[tuple[GraphKey, NodeSummary]] = []
    for key in keys:
        summary = tree.first_error(db, key, rules)
        if summary is not None:
            if summary.introduced == "error":
                return key, summary
            found.append((key, summary))
    return found[0] if found else None


def _no_graph(db: VisDb, step: int | None, rank: int | None) -> str:
    asked = " ".join(
        f"{name} {value}" for name, value in (("step", step), ("rank", rank)) if value is not None
    )
    held = sorted(
        (stats.step, stats.rank) for stats in listing.graphs(db) if stats.side == TARGET_SIDE
    )
    shown = ", ".join(f"step {s} rank {r}" for s, r in held) or "none"
    return f"{db.path.name}: no target graph at {asked or 'any step'}; the file holds {shown}"


def _diagnosis(db: VisDb, rules: str) -> models.DiagnosisSummaryOut:
    # the answer's fields the verdict shows, read off the diagnosis by name
    return models.DiagnosisSummaryOut.model_validate(
        diagnose(db, rules=rules), from_attributes=True
    )


def verdict(
    db: VisDb,
    job_id: str | None,
    graph: str,
    *,
    step: int | None = None,
    rank: int | None = None,
    rules: str | None = None,
    diagnose_without_overflow: bool = True,
) -> models.VerdictOut | models.RuledVerdictOut:
    """The verdict over the target's graphs, or those of ``step`` and/or ``rank`` only (then
    ``steps`` and ``ranks`` list what was judged), under the rule set ``rules``; a StoreError
    when none is there (or the file holds no verdicts of that rule set). The diagnosis reads
    every target graph's nodes (about 1 s at 27k records): ``diagnose_without_overflow=False``
    (graph_build's summary) runs it only where the target overflows. ``rules`` None: the
    file's default (dtype-aware where it holds those verdicts, msprobe's otherwise)."""
    rules = rules or rule_columns.file_default(db.conn)
    config = db.config()
    targets = [
        stats
        for stats in listing.graphs(db, rules)
        if stats.side == TARGET_SIDE
        and (step is None or stats.step == step)
        and (rank is None or stats.rank == rank)
    ]
    restricted = step is not None or rank is not None
    if restricted and not targets:
        raise StoreError(_no_graph(db, step, rank))
    keys = [GraphKey(TARGET_SIDE, stats.step, stats.rank) for stats in targets]
    overflow = dict.fromkeys(OVERFLOWS, 0)
    for key in keys:
        counted = search.filter_by(db, key, overflows=list(OVERFLOWS), limit=1, rules=rules).counts
        for name in OVERFLOWS:
            overflow[name] += counted.get(name, 0)
    first = _first_error(db, keys, rules)
    first_out = None
    url = viewer_url(graph)
    if first is not None:
        key, summary = first
        first_out = models.FirstErrorOut(
            name=summary.name,
            side=key.side,
            step=key.step,
            rank=key.rank,
            level=cast(LevelName, summary.introduced or summary.level or "error"),
            precision_index=summary.precision_index,
            worst_metric=worst_metric(db, key, summary)
            if rules == "msprobe"
            else rule_worst_metric(db, key, summary.name),
        )
        url = viewer_url(graph, key, summary.name)
    found = models.VerdictOut(
        job_id=job_id,
        graph=graph,
        graph_type=config.graph_type,
        data_mode=config.data_mode,
        steps=sorted({key.step for key in keys}) if restricted else config.steps,
        ranks=sorted({key.rank for key in keys}) if restricted else config.ranks,
        counts=models.CountsOut.model_validate(
            {
                "pass": sum(stats.pass_count or 0 for stats in targets),
                "warning": sum(stats.warning_count or 0 for stats in targets),
                "error": sum(stats.error_count or 0 for stats in targets),
                "unmatched": sum(stats.unmatched or 0 for stats in targets),
            }
        ),
        overflow=models.OverflowOut(**overflow),
        first_error=first_out,
        url=url,
        diagnosis=_diagnosis(db, rules)
        if not restricted and (diagnose_without_overflow or any(overflow.values()))
        else None,
    )
    if rules == "msprobe":
        return found
    return models.RuledVerdictOut(
        **found.model_dump(exclude={"url"}),
        url=f"{url}&{urlencode({'rules': rules})}",
        rules=rules,
        not_judged=sum(rule_counts(db, key, rules)["not judged"] for key in keys),
    )
