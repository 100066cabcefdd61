"""The browser pages (the viewer, Build, Trends, Table): their shells, ES modules and CSS,
and plotly.js.

Where the front end lives: ``settings.static_dir`` / ``settings.templates_dir`` when set,
otherwise the repository's ``frontend/`` folder found relative to this package
(``backend/graphboard/server/routes/pages.py`` -> ``<repo>/frontend``). That is where an
editable install (``pip install -e .``, what ``scripts/setup`` does) finds it; a wheel built
without the repository has no ``frontend/``, so point ``GRAPHBOARD_STATIC_DIR`` and
``GRAPHBOARD_TEMPLATES_DIR`` at a copy of it. The JSON API works either way.

plotly.js is not vendored: it is served from the installed ``plotly`` Python package, which
ships ``package_data/plotly.min.js``.

Static files are served by a route of our own rather than a mount, so that this router is
all ``create_app`` has to include; paths are resolved and must stay inside the folder.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Request
from fastapi import Path as PathParam
from fastapi.responses import FileResponse, HTMLResponse, Response
from fastapi.templating import Jinja2Templates

from graphboard import __version__
from graphboard.server.deps import SettingsDep
from graphboard.server.errors import NotFound
from graphboard.server.settings import Settings

router = APIRouter(include_in_schema=False)

REPO_FRONTEND = Path(__file__).resolve().parents[4] / "frontend"
PLOTLY_FILE = "plotly.min.js"
# Our modules change with every edit during development and are small: revalidate each
# time (FileResponse answers with ETag / Last-Modified, so a revalidation is a 304).
# plotly.js is 4.8 MB and changes only with the package: let the browser keep it.
STATIC_CACHE = "no-cache"
PLOTLY_CACHE = "public, max-age=86400"


def static_root(settings: Settings) -> Path:
    return (settings.static_dir or REPO_FRONTEND / "static").expanduser().resolve()


def templates_root(settings: Settings) -> Path:
    return (settings.templates_dir or REPO_FRONTEND / "templates").expanduser().resolve()


@lru_cache(maxsize=8)
def _templates(folder: Path) -> Jinja2Templates:
    return Jinja2Templates(directory=folder)


@lru_cache(maxsize=1)
def plotly_path() -> Path | None:
    try:
        import plotly
    except ImportError:
        return None
    found = Path(plotly.__file__).resolve().parent / "package_data" / PLOTLY_FILE
    return found if found.is_file() else None


def _inside(root: Path, relative: str) -> Path | None:
    """The file ``relative`` names under ``root``, or None when it is elsewhere or missing."""
    if "\x00" in relative or "\\" in relative:
        return None
    candidate = (root / relative).resolve()
    if not candidate.is_relative_to(root) or not candidate.is_file():
        return None
    return candidate


def page_shell(
    request: Request, settings: Settings, template: str, context: dict[str, object]
) -> Response:
    """A page's HTML shell. Its state (file, step, rank, node, filters...) lives in the query
    string and is read by the page's scripts, so every deep link is this same shell."""
    folder = templates_root(settings)
    if not (folder / template).is_file():
        raise NotFound(
            f"the page template {template} is not at {folder}: set GRAPHBOARD_TEMPLATES_DIR "
            "and GRAPHBOARD_STATIC_DIR to a copy of the repository's frontend/ folder",
            code="no_frontend",
        )
    response = _templates(folder).TemplateResponse(
        request, template, {"version": __version__, **context}
    )
    response.headers["Cache-Control"] = "no-cache"
    return response


@router.get("/", response_class=HTMLResponse)
def viewer(request: Request, settings: SettingsDep) -> Response:
    """The tree viewer."""
    return page_shell(
        request, settings, "index.html", {"plotly_available": plotly_path() is not None}
    )


@router.get("/build", response_class=HTMLResponse)
def build_page(request: Request, settings: SettingsDep) -> Response:
    """Start a background build and follow it."""
    return page_shell(request, settings, "build.html", {"builds_folder": settings.builds_folder})


@router.get("/trends", response_class=HTMLResponse)
def trends_page(request: Request, settings: SettingsDep) -> Response:
    """Heatmaps of a statistic across modules, steps, ranks and passes (its numbers come
    from ``/api/graphs/{graph}/heatmap``)."""
    return page_shell(
        request, settings, "trends.html", {"plotly_available": plotly_path() is not None}
    )


@router.get("/monitor", response_class=HTMLResponse)
def monitor_page(request: Request, settings: SettingsDep) -> Response:
    """Two runs' training-state monitor data (its numbers come from ``/api/monitor/...``)."""
    return page_shell(
        request, settings, "monitor.html", {"plotly_available": plotly_path() is not None}
    )


@router.get("/table", response_class=HTMLResponse)
def table_page(request: Request, settings: SettingsDep) -> Response:
    """Every parameter row of a compare graph, sortable and filterable (its rows come from
    ``/api/graphs/{graph}/table``)."""
    return page_shell(request, settings, "table.html", {})


@router.get("/static/{relative:path}")
def static_file(
    relative: Annotated[str, PathParam(max_length=1024)], settings: SettingsDep
) -> FileResponse:
    found = _inside(static_root(settings), relative)
    if found is None:
        raise NotFound(f"no static file {relative!r}", code="not_found")
    return FileResponse(found, headers={"Cache-Control": STATIC_CACHE})


@router.get("/vendor/plotly.min.js")
def plotly_js() -> FileResponse:
    found = plotly_path()
    if found is None:
        raise NotFound("the plotly Python package is not installed", code="no_plotly")
    return FileResponse(
        found, media_type="text/javascript", headers={"Cache-Control": PLOTLY_CACHE}
    )
