"""One router per resource. ``API_ROUTERS`` is what ``create_app`` mounts; a new resource adds
its router here (or passes it to ``create_app(routers=...)``)."""

from fastapi import APIRouter

from graphboard.server.routes import graphs, matches, nodes, search

API_ROUTERS: tuple[APIRouter, ...] = (
    nodes.router,
    search.router,
    matches.router,
    graphs.router,  # last: its /{graph}/config must not shadow longer routes
)
