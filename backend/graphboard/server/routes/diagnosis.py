"""A file's diagnosis (graphboard.diagnose): where inf/NaN was born, the first
non-deterministic op or the first error, with the evidence, and the next dump's config.json."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import Response
from pydantic import Field

from graphboard.diagnose.answer import diagnose
from graphboard.graph.sides import Side
from graphboard.server import schemas
from graphboard.server.deps import GraphDb, GraphId
from graphboard.server.errors import NotFound
from graphboard.server.schemas import ApiModel
from graphboard.store.graph_views import GraphKey
from graphboard.verdict.models import SideWord
from graphboard.verdict.url import viewer_url

router = APIRouter(prefix="/api/graphs", tags=["graphs"], responses=schemas.ERRORS)

Mode = Annotated[
    Literal["auto", "overflow", "nondeterminism", "first_error"],
    Query(description="auto: each question in turn (docs/diagnose.md); or ask one"),
]


class EvidenceOut(ApiModel):
    key: str = Field(description="input.0, output.0, parameters.weight ...")
    kinds: list[str] = Field(description="the non-finite values it holds: nan, +inf, -inf")
    dtype: str | None
    shape: list[Any] | None
    max: float | str | None = Field(description="a number, or 'inf' / '-inf' / 'nan'")
    min: float | str | None
    note: str | None = Field(description="e.g. whose parameter it is, or which run")


class CollectivePeerOut(ApiModel):
    rank: int
    node: str | None
    inputs_bad: bool | None = Field(description="its inputs to the collective held inf/NaN")


class RankOut(ApiModel):
    rank: int
    state: Literal["born", "receiver", "clean"]
    node: str | None = Field(description="the rank's first inf/NaN")
    kind: str | None = Field(description="weight, input or output")
    collective: str | None = Field(description="the first communication op holding inf/NaN")
    collective_inputs_bad: bool | None
    peers: list[CollectivePeerOut] = Field(
        description="that collective's linked calls on other ranks"
    )


class DiagnosisOut(ApiModel):
    kind: Literal["overflow", "nondeterminism", "first_error", "none"]
    found: bool = Field(description="false: no origin found")
    summary: str
    step: int | None
    rank: int | None
    node: str | None
    node_class: str | None = Field(
        description="weight, input, output, nondeterministic, uncaptured_input or error"
    )
    module: str | None
    side: SideWord
    evidence: list[EvidenceOut]
    ranks: list[RankOut] = Field(description="each rank's state, in a multi-rank run")
    also_born: list[int]
    by_design: list[str] = Field(description="ops before it that made infinities on purpose")
    advice: str | None = Field(description="the guide's next step")
    next_config: dict[str, Any] | None = Field(description="msprobe's config.json, next dump")
    notes: list[str]
    url: str = Field(description="the viewer on the node (relative to the server)")


def _answer(db: GraphDb, graph: str, mode: str) -> dict[str, Any]:
    found = diagnose(db, mode).as_json()
    if found["node"] is not None and found["step"] is not None and found["rank"] is not None:
        key = GraphKey(Side.parse(found["side"]).data_source, found["step"], found["rank"])
        found["url"] = viewer_url(graph, key, found["node"])
    else:
        found["url"] = viewer_url(graph)
    return found


@router.get(
    "/{graph:path}/diagnosis",
    response_model=DiagnosisOut,
    summary="Where inf/NaN was born, or the first non-deterministic op",
)
def diagnosis(db: GraphDb, graph: GraphId, mode: Mode = "auto") -> DiagnosisOut:
    """The answer of ``graphboard diagnose`` for this file, with its evidence (the ranks'
    states, the node's parameters), the guide's next step and msprobe's config.json for the
    next dump (``next_config``; null when there is nothing to dump)."""
    return DiagnosisOut.model_validate(_answer(db, graph, mode))


@router.get(
    "/{graph:path}/diagnosis/config.json", summary="msprobe's config.json for the next dump"
)
def next_config(db: GraphDb, graph: GraphId, mode: Mode = "auto") -> Response:
    config = _answer(db, graph, mode)["next_config"]
    if config is None:
        raise NotFound("no next dump to suggest: nothing was found")
    return Response(
        json.dumps(config, indent=2) + "\n",
        media_type="application/json",
        headers={"Content-Disposition": 'attachment; filename="config.json"'},
    )
