"""``create_app(settings)``: the FastAPI application, and the hooks to extend it.

More routers (pages, uploads, jobs) are added to ``routes.API_ROUTERS`` or passed as
``create_app(settings, routers=[...])``; static files are mounted with :func:`mount_static`
(``settings.static_dir`` is mounted at ``/static`` when set) and page shells rendered with
``app.state.templates`` (a ``Jinja2Templates`` on ``settings.templates_dir``, when set).
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import APIRouter, Depends, FastAPI
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from graphboard import __version__
from graphboard.errors import GraphboardError
from graphboard.server.auth import read_access, write_access
from graphboard.server.catalog import Catalog
from graphboard.server.errors import install_error_handlers
from graphboard.server.jobs.runner import Runner, make_runner
from graphboard.server.request_origin import RequestOrigin
from graphboard.server.routes import API_ROUTERS, CI_ROUTERS, pages
from graphboard.server.security import SecurityHeaders
from graphboard.server.settings import Settings
from graphboard.server.viewer_token import viewer_token
from graphboard.store.graph_views import VIEWS
from graphboard.table.query import TABLES


def mount_static(app: FastAPI, url_path: str, directory: Path, name: str = "static") -> None:
    """Serve ``directory`` at ``url_path`` (ES modules, CSS...), behind the security headers."""
    app.mount(url_path, StaticFiles(directory=directory), name=name)


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    catalog: Catalog = app.state.catalog
    catalog.migrate()  # the schema is current before the first request
    settings: Settings = app.state.settings
    # the token the URL `graphboard serve` prints carries (None: writes need none)
    app.state.viewer_token = viewer_token(catalog, settings) if settings.protect_writes else None
    runner: Runner = app.state.runner
    runner.start()  # after the migrations: it queues again what a previous run left
    try:
        yield
    finally:
        runner.stop()
        catalog.dispose()


def create_app(settings: Settings | None = None, *, routers: Iterable[APIRouter] = ()) -> FastAPI:
    settings = settings or Settings()
    if not settings.data_root.is_dir():
        raise GraphboardError(
            f"{settings.data_dir}: the data dir does not exist or is not a folder"
        )
    app = FastAPI(
        title="graphboard",
        version=__version__,
        summary="Compare a target run with a golden run, layer by layer: .vis.db files over HTTP.",
        lifespan=_lifespan,
    )
    app.state.settings = settings
    app.state.catalog = Catalog(settings.catalog_url)
    app.state.runner = make_runner(settings, app.state.catalog)
    VIEWS.max_nodes = settings.view_cache_nodes
    TABLES.max_nodes = settings.table_cache_bytes
    app.state.exports = threading.BoundedSemaphore(settings.max_exports)  # downloads at once
    app.add_middleware(
        RequestOrigin, bound_host=settings.host, allowed_hosts=settings.allowed_hosts
    )
    app.add_middleware(SecurityHeaders)  # outermost: refusals carry the headers too
    install_error_handlers(app)
    # reads: token-protected only when settings.protect_reads; writes unless not protect_writes
    for router in API_ROUTERS:
        app.include_router(router, dependencies=[Depends(read_access), Depends(write_access)])
    for router in (*CI_ROUTERS, *routers):
        app.include_router(router)
    app.include_router(pages.router)  # the pages (viewer, Build, Trends, Table), modules, plotly.js
    if settings.static_dir is not None:
        mount_static(app, "/static", settings.static_dir)
    if settings.templates_dir is not None:
        app.state.templates = Jinja2Templates(directory=settings.templates_dir)
    return app
