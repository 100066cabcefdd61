"""Why a node has its verdict under a rule set: the dtype-aware rules' working, per parameter."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter
from pydantic import Field

from graphboard.compare.dtype_explain import explain_node
from graphboard.compare.dtype_graph import forward_twin
from graphboard.dump.records import Param
from graphboard.graph.model import GOLDEN_SIDE, TARGET_SIDE
from graphboard.server import schemas
from graphboard.server.deps import ExistingGraph, GraphDb, NodeName
from graphboard.server.errors import InvalidParameters, NotFound
from graphboard.server.schemas import ApiModel
from graphboard.store.reader import GraphKey, VisDb

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


def _params(db: VisDb, key: GraphKey, name: str) -> list[Param]:
    return db.params(key, name) or []


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
        raise InvalidParameters("verdicts are the target's: ask with side=NPU")
    mode = db.config().mode
    summary = db.summary(key, name)
    if summary is None:
        raise NotFound(f"no node {name!r}", code="unknown_node")
    golden_key = GraphKey(GOLDEN_SIDE, key.step, key.rank)
    if mode is None or not summary.counterpart or not db.has_graph(golden_key):
        raise NotFound(f"{name} has no counterpart to judge against", code="unmatched_node")
    twin = None
    twin_name = forward_twin(name)
    if twin_name is not None:
        twin_summary = db.summary(key, twin_name)
        if twin_summary is not None and twin_summary.counterpart:
            twin = (
                twin_name,
                _params(db, key, twin_name),
                _params(db, golden_key, twin_summary.counterpart),
            )
    found = explain_node(
        name, _params(db, key, name), _params(db, golden_key, summary.counterpart), mode, twin
    )
    if found is None:
        raise NotFound(f"{name} has no parameters to judge", code="unscored_node")
    db.use_rules("dtype-aware")
    stored = db.summary(key, name)
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
        if mode.value == "all"
        else None,
    )
