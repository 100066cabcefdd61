"""Finding nodes in one graph: by name, and by verdict."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from typing import Annotated

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool

from graphboard.compare.result import level_of_label
from graphboard.server import present, schemas
from graphboard.server.deps import Cursor, ExistingGraph, GraphDb, PageLimit, SettingsDep
from graphboard.server.errors import InvalidParameters
from graphboard.server.rules import Rules
from graphboard.store.name_regex import SearchTooSlow
from graphboard.store.reader import GraphKey, VisDb
from graphboard.store.reader.search import filter_by, find_names

router = APIRouter(prefix="/api/graphs", tags=["search"], responses=schemas.ERRORS)

# RE2 matches with the GIL released, on a worker thread: at most half the cores do so at
# once, so the rest keep answering everything else. A search waiting for its turn holds no
# thread (it polls from the event loop), and its wait counts against its time limit.
_REGEX_TURNS = threading.BoundedSemaphore(max(1, (os.cpu_count() or 2) // 2))
_TURN_POLL_SECONDS = 0.02


def _search_page(
    db: VisDb,
    key: GraphKey,
    q: str,
    cursor: int | None,
    limit: int,
    deadline: float | None,
    rules: str,
) -> schemas.SearchPage:
    page = find_names(
        db,
        key,
        q,
        regex=deadline is not None,
        after=cursor,
        limit=limit,
        deadline=deadline,
        rules=rules,
    )
    return schemas.SearchPage(
        items=present.nodes_out(page.items, key.side, db.config()),
        next_cursor=page.next_cursor,
        total=page.total or 0,
    )


async def _regex_search(
    db: VisDb, key: GraphKey, q: str, cursor: int | None, limit: int, seconds: float, rules: str
) -> schemas.SearchPage:
    deadline = time.monotonic() + seconds
    while not _REGEX_TURNS.acquire(blocking=False):
        if time.monotonic() >= deadline:
            raise SearchTooSlow(
                f"other regex searches kept the server busy for {seconds:g} s: try again"
            )
        await asyncio.sleep(_TURN_POLL_SECONDS)
    try:
        return await run_in_threadpool(_search_page, db, key, q, cursor, limit, deadline, rules)
    finally:
        _REGEX_TURNS.release()


@router.get("/{graph:path}/search", response_model=schemas.SearchPage, summary="Search node names")
async def search(
    db: GraphDb,
    rules: Rules,
    key: ExistingGraph,
    settings: SettingsDep,
    q: Annotated[str, Query(min_length=1, max_length=1024, description="text or regex")],
    limit: PageLimit,
    cursor: Cursor = None,
    regex: Annotated[
        bool, Query(description="q is a regular expression (RE2 syntax, linear time)")
    ] = False,
) -> schemas.SearchPage:
    """Names containing ``q`` (any case), or matching the regex ``q`` (any case), in execution
    order, one page at a time, with the total. A regex is refused (422 ``invalid_regex``)
    when RE2 cannot run it or it is too costly for the graph's names, and gives up (422
    ``search_too_slow``) past the server's ``search_seconds``."""
    try:
        if regex:
            return await _regex_search(db, key, q, cursor, limit, settings.search_seconds, rules)
        return await run_in_threadpool(_search_page, db, key, q, cursor, limit, None, rules)
    except ValueError as error:
        raise InvalidParameters(f"q: {error}", code="invalid_regex") from None
    except SearchTooSlow as error:
        raise InvalidParameters(f"q: {error}", code="search_too_slow") from None


@router.get("/{graph:path}/filter", response_model=schemas.FilterPage, summary="Nodes by verdict")
def filter_nodes(
    db: GraphDb,
    rules: Rules,
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
    page = filter_by(
        db,
        key,
        levels=[
            level
            for name in dict.fromkeys(precision or [])
            if (level := level_of_label(name)) is not None
        ],
        overflows=list(dict.fromkeys(overflow or [])),
        unmatched=unmatched,
        leaves_only=leaves_only,
        after=cursor,
        limit=limit,
        rules=rules,
    )
    return schemas.FilterPage(
        items=present.nodes_out(page.items, key.side, db.config()),
        next_cursor=page.next_cursor,
        total=page.total or 0,
        counts=page.counts,
    )
