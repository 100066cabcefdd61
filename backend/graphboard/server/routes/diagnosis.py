"""A file's diagnosis (graphboard.diagnose): where inf/NaN was born, the first
non-deterministic op or the first error, with the evidence, and the next dump's config.json."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import Response

from graphboard.diagnose.answer import MODES, diagnose
from graphboard.server import schemas
from graphboard.server.deps import GraphDb, GraphId
from graphboard.server.errors import InvalidParameters, NotFound
from graphboard.server.jobs.verdict import viewer_url
from graphboard.store.graph_views import GraphKey

router = APIRouter(prefix="/api/graphs", tags=["graphs"], responses=schemas.ERRORS)

Mode = Annotated[str, Query(description="auto (in turn), overflow, nondeterminism, first_error")]


def _answer(db: GraphDb, graph: str, mode: str) -> dict[str, Any]:
    if mode not in MODES:
        raise InvalidParameters(f"mode must be one of {', '.join(MODES)}")
    found = diagnose(db, mode).as_json()
    if found["node"] is not None and found["step"] is not None and found["rank"] is not None:
        key = GraphKey(found["side"], found["step"], found["rank"])
        found["url"] = viewer_url(graph, key, found["node"])
    else:
        found["url"] = viewer_url(graph)
    return found


@router.get(
    "/{graph:path}/diagnosis", summary="Where inf/NaN was born, or the first non-deterministic op"
)
def diagnosis(db: GraphDb, graph: GraphId, mode: Mode = "auto") -> dict[str, Any]:
    """The answer of ``graphboard diagnose`` for this file, with its evidence (the ranks'
    states, the node's parameters), the guide's next step and msprobe's config.json for the
    next dump (``next_config``; null when there is nothing to dump)."""
    return _answer(db, graph, mode)


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
