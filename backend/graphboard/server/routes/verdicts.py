"""Why a node has its verdict under a rule set: the dtype-aware rules' working, per parameter."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter
from pydantic import Field

from graphboard.graph.model import TARGET_SIDE
from graphboard.server import schemas
from graphboard.server.deps import ExistingGraph, GraphDb, NodeName
from graphboard.server.errors import InvalidParameters, NotFound
from graphboard.server.schemas import ApiModel
from graphboard.store.reader import summaries
from graphboard.verdict.rule_explain import explain_stored

router = APIRouter(prefix="/api/graphs", tags=["nodes"], responses=schemas.ERRORS)

VerdictLabel = Literal["pass", "warning", "error", "not judged"]


class ParamVerdictOut(ApiModel):
    key: str = Field(description="the parameter: input.0, output.0, parameters.weight ...")
    is_output: bool
    verdict: VerdictLabel
    difference: float | None = Field(
        description="measured d: the statistics' difference over their scales"
    )
    band: float | None = Field(
        description="expected noise band: an input's own roundoff; an output's band from "
        "its inputs' d and its own rounding, with the margin"
    )
    reason: str
    introduces: bool = Field(description="an error that arises at this parameter")


class RuleVerdictOut(ApiModel):
    name: str
    rules: Literal["dtype-aware"]
    verdict: VerdictLabel = Field(description="as worked from the parameters")
    stored: str | None = Field(
        description="as stored at build time: a module whose error a node inside introduces "
        "is a warning there"
    )
    introduced: bool
    input_difference: float
    reason: str
    params: list[ParamVerdictOut]
    note: str | None = Field(description="what the working leaves out (tensor mode)")


@router.get(
    "/{graph:path}/rule-verdict",
    response_model=RuleVerdictOut,
    summary="Why a target node has its dtype-aware verdict",
)
def rule_verdict(db: GraphDb, key: ExistingGraph, name: NodeName) -> RuleVerdictOut:
    """The dtype-aware verdict of a matched target node worked from its stored parameters:
    per parameter the measured difference beside the noise band, and why the node passes
    or introduces an error."""
    if key.side != TARGET_SIDE:
        raise InvalidParameters("verdicts are the target's: ask with side=target")
    if summaries.summary(db, key, name) is None:
        raise NotFound(f"no node {name!r}", code="unknown_node")
    found = explain_stored(db, key, name)
    if found is None:
        raise NotFound(f"{name} has no counterpart or parameters to judge", code="unscored_node")
    mode = db.config().mode
    stored = summaries.summary(db, key, name, "dtype-aware")
    return RuleVerdictOut(
        name=name,
        rules="dtype-aware",
        verdict=found.verdict.label,  # type: ignore[arg-type]
        stored=stored.level if stored is not None else None,
        introduced=found.introduced,
        input_difference=found.input_difference,
        reason=found.reason,
        params=[
            ParamVerdictOut(
                key=param.key,
                is_output=param.is_output,
                verdict=param.verdict.label,  # type: ignore[arg-type]
                difference=param.difference,
                band=param.band,
                reason=param.reason,
                introduces=param.introduces,
            )
            for param in found.params
        ],
        note="tensor mode: worked from the statistics, the tensors are not read again"
        if mode is not None and mode.value == "all"
        else None,
    )
