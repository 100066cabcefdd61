"""The Build page: start a background build and follow it (``frontend/templates/build.html``)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from fastapi.templating import Jinja2Templates

from graphboard import __version__
from graphboard.server.deps import SettingsDep
from graphboard.server.errors import NotFound
from graphboard.server.routes.pages import templates_root

router = APIRouter(include_in_schema=False)
TEMPLATE = "build.html"


@lru_cache(maxsize=8)
def _templates(folder: Path) -> Jinja2Templates:
    return Jinja2Templates(directory=folder)


@router.get("/build", response_class=HTMLResponse)
def build_page(request: Request, settings: SettingsDep) -> Response:
    folder = templates_root(settings)
    if not (folder / TEMPLATE).is_file():
        raise NotFound(f"the Build page's template is not at {folder}", code="no_frontend")
    response = _templates(folder).TemplateResponse(
        request,
        TEMPLATE,
        {"version": __version__, "builds_folder": settings.builds_folder},
    )
    response.headers["Cache-Control"] = "no-cache"
    return response
