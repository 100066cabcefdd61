"""The Trends page: heatmaps of a statistic across modules, steps, ranks and passes
(``frontend/templates/trends.html``; its numbers come from ``/api/graphs/{graph}/heatmap``)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from graphboard import __version__
from graphboard.server.deps import SettingsDep
from graphboard.server.errors import NotFound
from graphboard.server.routes.pages import _templates, plotly_path, templates_root

router = APIRouter(include_in_schema=False)
TEMPLATE = "trends.html"


@router.get("/trends", response_class=HTMLResponse)
def trends_page(request: Request, settings: SettingsDep) -> Response:
    """The page shell; the view (file, shape, statistic...) lives in the query string."""
    folder = templates_root(settings)
    if not (folder / TEMPLATE).is_file():
        raise NotFound(f"the Trends page's template is not at {folder}", code="no_frontend")
    response = _templates(folder).TemplateResponse(
        request,
        TEMPLATE,
        {"version": __version__, "plotly_available": plotly_path() is not None},
    )
    response.headers["Cache-Control"] = "no-cache"
    return response
