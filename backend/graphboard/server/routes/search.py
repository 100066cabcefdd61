"""Finding nodes in one graph: by name, and by verdict."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from graphboard.compare.result import Level
from graphboard.server import present, schemas
from graphboard.server.deps import Cursor, ExistingGraph, GraphDb, PageLimit
from graphboard.server.errors import InvalidParameters

router = APIRouter(prefix="/api/graphs", tags=["search"], responses=schemas.ERRORS)

_LEVELS = {level.label: level for level in Level}


@router.get("/{graph:path}/search", response_model=schemas.SearchPage, summary="Search node names")
def search(
    db: GraphDb,
    key: ExistingGraph,
    q: Annotated[str, Query(min_length=1, max_length=1024, description="text or regex")],
    limit: PageLimit,
    cursor: Cursor = None,
    regex: Annotated[bool, Query(description="q is a regular expression")] = False,
) -> schemas.SearchPage:
    """Names containing ``q`` (any case), or matching the regex ``q`` (any case), in execution
    order, one page at a time, with the total."""
    try:
        page = db.search(key, q, regex=regex, after=cursor, limit=limit)
    except ValueError as error:
        raise InvalidParameters(f"q: {error}", code="invalid_regex") from None
    return schemas.SearchPage(
        items=present.nodes_out(page.items, key.side, db.config()),
        next_cursor=page.next_cursor,
        total=page.total or 0,
    )


@router.get("/{graph:path}/filter", response_model=schemas.FilterPage, summary="Nodes by verdict")
def filter_nodes(
    db: GraphDb,
    key: ExistingGraph,
    limit: PageLimit,
    cursor: Cursor = None,
    precision: Annotated[
        list[schemas.LevelName] | None, Query(description="precision buckets (repeatable)")
    ] = None,
    overflow: Annotated[
        list[schemas.OverflowName] | None, Query(description="overflow levels (repeatable)")
    ] = None,
    unmatched: Annotated[bool, Query(description="nodes without a counterpart")] = False,
    leaves_only: Annotated[bool, Query(description="only nodes without children")] = False,
) -> schemas.FilterPage:
    """Nodes in any chosen precision bucket or overflow level, or unmatched, in execution
    order, one page at a time, with the total and a count per criterion."""
    if not precision and not overflow and not unmatched:
        raise InvalidParameters("choose at least one of precision, overflow or unmatched")
    page = db.filter(
        key,
        levels=[_LEVELS[name] for name in dict.fromkeys(precision or [])],
        overflows=list(dict.fromkeys(overflow or [])),
        unmatched=unmatched,
        leaves_only=leaves_only,
        after=cursor,
        limit=limit,
    )
    return schemas.FilterPage(
        items=present.nodes_out(page.items, key.side, db.config()),
        next_cursor=page.next_cursor,
        total=page.total or 0,
        counts=page.counts,
    )
