"""The Table page: every parameter row of a compare graph, sortable and filterable
(``frontend/templates/table.html``; its rows come from ``/api/graphs/{graph}/table``)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from graphboard import __version__
from graphboard.server.deps import SettingsDep
from graphboard.server.errors import NotFound
from graphboard.server.routes.pages import _templates, templates_root

router = APIRouter(include_in_schema=False)
TEMPLATE = "table.html"


@router.get("/table", response_class=HTMLResponse)
def table_page(request: Request, settings: SettingsDep) -> Response:
    """The page shell; the view (file, step, rank, filters, sort) lives in the query string."""
    folder = templates_root(settings)
    if not (folder / TEMPLATE).is_file():
        raise NotFound(f"the Table page's template is not at {folder}", code="no_frontend")
    response = _templates(folder).TemplateResponse(request, TEMPLATE, {"version": __version__})
    response.headers["Cache-Control"] = "no-cache"
    return response
