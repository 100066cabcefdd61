"""The .vis.db files under the data dir and what each holds."""

from __future__ import annotations

import os
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

from fastapi import APIRouter

from graphboard.errors import GraphboardError
from graphboard.graph.model import TARGET_SIDE
from graphboard.server import schemas
from graphboard.server.catalog import known_graphs
from graphboard.server.deps import CatalogSession, GraphFilePath, GraphId, SettingsDep
from graphboard.server.paths import GraphFile, discover
from graphboard.server.rules import RuleSet
from graphboard.server.settings import Settings
from graphboard.store import rule_columns
from graphboard.store.reader import listing, open_vis_db

router = APIRouter(prefix="/api/graphs", tags=["graphs"])


def _writable(path: Path, settings: Settings) -> bool:
    if not settings.allow_matching:
        return False
    return all(
        os.access(item, os.W_OK) and stat.S_IMODE(item.stat().st_mode) & 0o222
        for item in (path, path.parent)
    )


def describe(found: GraphFile, settings: Settings) -> schemas.GraphFileOut:
    """One file's listing entry; a file that cannot be read is listed with the reason."""
    entry = schemas.GraphFileOut(
        id=found.graph_id,
        path=found.graph_id + ".vis.db",
        source=None,
        size_bytes=found.size,
        modified_at=datetime.fromtimestamp(found.mtime_ns / 1e9, UTC),
        writable=False,
        config=None,
        graphs=[],
        matched=None,
        unmatched=None,
    )
    try:
        with open_vis_db(found.path, settings.cache_dir) as db:
            config = db.config()
            graphs = listing.graphs(db)
            entry.source = db.source.value
            entry.default_rules = cast(RuleSet, rule_columns.file_default(db.conn))
    except GraphboardError as error:
        entry.error = str(error)
        return entry
    entry.config = schemas.GraphConfigOut.model_validate(config, from_attributes=True)
    entry.graphs = [
        schemas.GraphStatsOut.model_validate(graph, from_attributes=True) for graph in graphs
    ]
    entry.writable = config.compare and _writable(found.path, settings)
    targets = [graph for graph in graphs if graph.side == TARGET_SIDE and graph.matched is not None]
    if targets:
        entry.matched = sum(graph.matched or 0 for graph in targets)
        entry.unmatched = sum(graph.unmatched or 0 for graph in targets)
    return entry


@router.get("", response_model=schemas.GraphListOut, summary="Every .vis.db under the data dir")
def list_graphs(settings: SettingsDep, session: CatalogSession) -> schemas.GraphListOut:
    """Scanned on every call, so new files appear without a restart; the catalog records them."""
    files = [describe(found, settings) for found in discover(settings.data_root)]
    known_graphs.record(
        session,
        [
            known_graphs.Sighting(
                graph_id=entry.id,
                source=entry.source,
                graph_type=entry.config.graph_type if entry.config else None,
                data_mode=entry.config.data_mode if entry.config else None,
                size_bytes=entry.size_bytes,
                modified_at=entry.modified_at,
                error=entry.error,
            )
            for entry in files
        ],
    )
    return schemas.GraphListOut(files=files)


@router.get(
    "/{graph:path}/config",
    response_model=schemas.GraphFileOut,
    responses=schemas.ERRORS,
    summary="One file: its configuration and graphs",
)
def graph_config(
    graph: GraphId, path: GraphFilePath, settings: SettingsDep
) -> schemas.GraphFileOut:
    status = path.stat()
    return describe(GraphFile(graph, path, status.st_size, status.st_mtime_ns), settings)
