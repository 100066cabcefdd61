"""Assisted matching: proposals for a compare's grey nodes, accepted as manual matches
(one, or all above a confidence) or rejected (remembered, not proposed again)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import Field

from graphboard.graph.model import TARGET_SIDE
from graphboard.server import schemas
from graphboard.server.deps import GraphDb, GraphFilePath, Rank, SettingsDep, Step
from graphboard.server.errors import Conflict, NotFound
from graphboard.server.routes.matches import _pair, _skipped, add_match
from graphboard.store.reader import GraphKey, VisDb, node_data
from graphboard.suggest import DEFAULT_MIN_CONFIDENCE, Proposals
from graphboard.suggest.apply import accept, graph_parts
from graphboard.suggest.proposals import propose
from graphboard.suggest.rejections import check_rejection, reject, rejected

router = APIRouter(prefix="/api/graphs", tags=["suggestions"], responses=schemas.MATCH_ERRORS)

Confidence = Annotated[float, Field(ge=0.0, le=1.0)]
NodeText = Annotated[str, Field(min_length=1, max_length=4096)]


class SuggestionOut(schemas.ApiModel):
    step: int
    rank: int
    target: str
    golden: str
    confidence: float = Field(description="0 to 1")
    reason: str


class FusedOut(schemas.ApiModel):
    step: int
    rank: int
    target: list[str]
    golden: list[str]
    confidence: float
    reason: str = Field(description="one node doing the work of several: flagged, never paired")


class SuggestionsOut(schemas.ApiModel):
    suggestions: list[SuggestionOut]
    fused: list[FusedOut]


class PairRequest(schemas.ApiModel):
    step: schemas.Index
    rank: schemas.Index
    target: NodeText
    golden: NodeText


class AcceptAllRequest(schemas.ApiModel):
    step: schemas.Index
    rank: schemas.Index
    min_confidence: Confidence = DEFAULT_MIN_CONFIDENCE
    under: NodeText | None = Field(default=None, description="only below this target node")


class RejectedOut(schemas.ApiModel):
    target: str
    golden: str


def _proposals(db: VisDb, step: int, rank: int, under: str | None) -> Proposals:
    if not db.config().compare:
        raise Conflict(
            f"{db.path.name} is a build of one run, not a compare: there is nothing to match",
            code="not_a_compare",
        )
    if (step, rank) not in graph_parts(db):
        raise NotFound(
            f"the file has no compare graph for step {step}, rank {rank}",
            code="unknown_graph_part",
        )
    if under is not None and not node_data.orders_of_names(
        db, GraphKey(TARGET_SIDE, step, rank), [under]
    ):
        raise NotFound(f"no target node named {under!r}", code="unknown_node")
    return propose(db, step, rank, rejected=rejected(db, step, rank), under=under)


@router.get("/{graph:path}/suggestions", response_model=SuggestionsOut, summary="Proposed matches")
def list_suggestions(
    db: GraphDb,
    step: Step,
    rank: Rank,
    min_confidence: Annotated[float, Query(ge=0.0, le=1.0)] = DEFAULT_MIN_CONFIDENCE,
    under: Annotated[str | None, Query(min_length=1, max_length=4096)] = None,
) -> SuggestionsOut:
    """Proposals for the grey target nodes (or those below ``under``), each with a confidence
    and a reason, parents before children; rejected pairs are left out."""
    found = _proposals(db, step, rank, under)
    return SuggestionsOut(
        suggestions=[
            SuggestionOut.model_validate(item, from_attributes=True)
            for item in found.suggestions
            if item.confidence >= min_confidence
        ],
        fused=[
            FusedOut.model_validate(item, from_attributes=True)
            for item in found.fused
            if item.confidence >= min_confidence
        ],
    )


@router.post(
    "/{graph:path}/suggestions/accept",
    response_model=schemas.MatchOut,
    summary="Accept one proposal",
)
def accept_one(
    request: PairRequest, path: GraphFilePath, settings: SettingsDep, db: GraphDb
) -> schemas.MatchOut:
    """Match the proposed pair by hand through ``POST /matches`` (without twins or
    descendants: they have proposals of their own)."""
    match = schemas.MatchRequest(
        step=request.step,
        rank=request.rank,
        target=request.target,
        golden=request.golden,
        descendants=False,
        twins=False,
    )
    return add_match(match, path, settings, db)


@router.post(
    "/{graph:path}/suggestions/accept-all",
    response_model=schemas.ConfigImportOut,
    summary="Accept every proposal above a confidence",
)
def accept_all(
    request: AcceptAllRequest, path: GraphFilePath, settings: SettingsDep, db: GraphDb
) -> schemas.ConfigImportOut:
    """One import action (undo takes it back whole) of every proposal at or above
    ``min_confidence``; pairs the planner refuses are listed with the reason."""
    found = _proposals(db, request.step, request.rank, request.under)
    chosen = [s for s in found.suggestions if s.confidence >= request.min_confidence]
    outcomes = accept(path, settings, chosen) if chosen else []
    config = db.config()
    return schemas.ConfigImportOut(
        action_id=outcomes[0].action_id if outcomes else None,
        total=len(chosen),
        matched=sum(len(o.pairs) for o in outcomes),
        pairs=[_pair(pair, config) for o in outcomes for pair in o.pairs],
        failed=[_skipped(item) for o in outcomes for item in o.skipped],
    )


@router.post(
    "/{graph:path}/suggestions/reject", response_model=RejectedOut, summary="Reject a proposal"
)
def reject_one(
    request: PairRequest, path: GraphFilePath, settings: SettingsDep, db: GraphDb
) -> RejectedOut:
    """Remember that ``golden`` is not ``target``'s counterpart: never proposed again (the
    target may get another proposal). Only nodes the file holds (404 otherwise)."""
    # on the read-only connection first: a refused rejection opens nothing for writing
    check_rejection(db, request.step, request.rank, request.target, request.golden)
    reject(path, settings, request.step, request.rank, request.target, request.golden)
    return RejectedOut(target=request.target, golden=request.golden)
