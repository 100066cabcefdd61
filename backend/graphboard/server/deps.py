"""Shared request dependencies, as ``Annotated`` types routes can declare."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

from fastapi import Depends, Query, Request
from fastapi import Path as PathParam
from sqlalchemy.orm import Session

from graphboard.errors import GraphboardError
from graphboard.graph.sides import Side, spoken
from graphboard.server.catalog import Catalog
from graphboard.server.errors import InvalidParameters, NotFound, UnreadableFile
from graphboard.server.paths import InvalidGraphId, UnknownGraph, resolve_graph
from graphboard.server.schemas import SIDE_DESCRIPTION, Index, SideName
from graphboard.server.settings import Settings
from graphboard.store.reader import GraphKey, VisDb, graphs, open_vis_db


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


SettingsDep = Annotated[Settings, Depends(get_settings)]


def get_catalog(request: Request) -> Catalog:
    catalog: Catalog = request.app.state.catalog
    return catalog


CatalogDep = Annotated[Catalog, Depends(get_catalog)]


def catalog_session(catalog: CatalogDep) -> Iterator[Session]:
    with catalog.session() as session:
        yield session


CatalogSession = Annotated[Session, Depends(catalog_session)]

GraphId = Annotated[
    str,
    PathParam(
        description="the file's path under the data dir without .vis.db (may contain '/')",
        max_length=1024,
    ),
]


def graph_file(graph: GraphId, settings: SettingsDep) -> Path:
    """The .vis.db a ``{graph}`` path parameter names, never anything outside the data dir."""
    try:
        return resolve_graph(settings.data_root, graph)
    except InvalidGraphId as error:
        raise InvalidParameters(f"graph {graph!r}: {error}", code="invalid_graph_id") from None
    except UnknownGraph:
        raise NotFound(f"no graph {graph!r} under the data dir", code="unknown_graph") from None


GraphFilePath = Annotated[Path, Depends(graph_file)]


def open_graph(path: GraphFilePath, settings: SettingsDep) -> Iterator[VisDb]:
    """The file, open read-only for the length of the request."""
    try:
        with open_vis_db(path, settings.cache_dir) as db:
            yield db
    except GraphboardError as error:
        raise UnreadableFile(str(error)) from None


GraphDb = Annotated[VisDb, Depends(open_graph)]


Step = Annotated[Index, Query(description="step number")]
Rank = Annotated[Index, Query(description="rank number")]


def graph_key(
    side: Annotated[SideName, Query(description=SIDE_DESCRIPTION)],
    step: Step,
    rank: Rank,
) -> GraphKey:
    return GraphKey(Side.parse(side).data_source, step, rank)


GraphKeyDep = Annotated[GraphKey, Depends(graph_key)]


def existing_graph(db: GraphDb, key: GraphKeyDep) -> GraphKey:
    if not graphs.has_graph(db, key):
        config = db.config()
        raise NotFound(
            f"the file has no {spoken(key.side)} graph for step {key.step}, rank {key.rank} "
            f"(steps {config.steps}, ranks {config.ranks})",
            code="unknown_graph_part",
        )
    return key


ExistingGraph = Annotated[GraphKey, Depends(existing_graph)]


def page_limit(
    settings: SettingsDep,
    limit: Annotated[int | None, Query(ge=1, description="page length")] = None,
) -> int:
    if limit is None:
        return settings.page_size
    if limit > settings.max_page_size:
        raise InvalidParameters(f"limit: at most {settings.max_page_size}")
    return limit


PageLimit = Annotated[int, Depends(page_limit)]
Cursor = Annotated[Index | None, Query(description="next_cursor of the previous page")]
NodeName = Annotated[str, Query(min_length=1, max_length=4096, description="node name")]
