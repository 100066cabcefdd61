"""One router per resource. ``API_ROUTERS`` is what ``create_app`` mounts; a new resource adds
its router here (or passes it to ``create_app(routers=...)``)."""

from fastapi import APIRouter

from graphboard.server.routes import (
    diagnosis,
    dumps,
    graphs,
    heatmap,
    jobs,
    matches,
    monitor,
    nodes,
    search,
    suggestions,
    table,
    uploads,
    verdicts,
)

API_ROUTERS: tuple[APIRouter, ...] = (
    nodes.router,
    verdicts.router,
    search.router,
    matches.router,
    suggestions.router,
    heatmap.router,
    table.router,
    diagnosis.router,  # /{graph}/diagnosis: before graphs' catch-all
    monitor.router,  # /api/monitor/...: training-state trends (issue 33)
    graphs.router,  # last: its /{graph}/config must not shadow longer routes
)
# Uploads and jobs: each route requires a bearer token itself (not subject to protect_reads).
CI_ROUTERS: tuple[APIRouter, ...] = (
    uploads.router,
    jobs.router,
    dumps.router,
)
