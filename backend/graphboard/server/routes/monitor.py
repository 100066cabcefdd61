"""``/api/monitor/...``: the monitor page's numbers, read from ``graphboard monitor`` output
files (``*.trend.db`` under the data dir; graphboard.monitor.views does the reading)."""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse, Response

from graphboard.monitor import views
from graphboard.monitor.compare import find_runs
from graphboard.monitor.dump_config import config_for
from graphboard.monitor.formats import TREND_DB_SUFFIX
from graphboard.monitor.run import MonitorInputError
from graphboard.server import schemas
from graphboard.server.auth import TokenDep
from graphboard.server.deps import CatalogDep, SettingsDep
from graphboard.server.errors import InvalidParameters, NotFound
from graphboard.server.jobs.monitor_job import (
    MonitorJobRequest,
    accept_monitor_upload,
    create_monitor_job,
)
from graphboard.server.jobs.runner import RunnerDep, submit_or_fail
from graphboard.server.jobs.schemas import UPLOAD_ERRORS, JobCreated
from graphboard.server.monitor_links import departure_graphs
from graphboard.server.paths import InvalidGraphId, check_graph_id
from graphboard.server.routes.uploads import queue_upload

router = APIRouter(prefix="/api/monitor", tags=["monitor"], responses=schemas.ERRORS)

MonitorId = Annotated[
    str,
    PathParam(description="the file's path under the data dir without .trend.db", max_length=1024),
]
Statistic = Annotated[str, Query(description="norm | max | min | mean", max_length=32)]
SideQuery = Annotated[
    Literal["target", "golden", "diff", "score"],
    Query(description="target, golden, diff (target - golden) or score (|diff| / noise)"),
]
Index = Annotated[int, Query(ge=0, le=1_000_000)]
MAX_RUNS = 2000


def _plain(value: Any) -> Any:
    """JSON has no NaN or infinity: they go out as the strings "NaN" / "Infinity"."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def _answer(value: Any) -> JSONResponse:
    return JSONResponse(_plain(value))


def monitor_file(file: MonitorId, settings: SettingsDep) -> Path:
    root = settings.data_root
    try:
        segments = check_graph_id(file)
    except InvalidGraphId as error:
        raise InvalidParameters(f"file {file!r}: {error}", code="invalid_graph_id") from None
    candidate = root.joinpath(*segments[:-1], segments[-1] + TREND_DB_SUFFIX)
    try:
        real = candidate.resolve(strict=True)
    except (OSError, RuntimeError):
        raise NotFound(f"no monitor file {file!r} under the data dir") from None
    if not real.is_relative_to(root) or not real.is_file():
        raise NotFound(f"no monitor file {file!r} under the data dir")
    return real


def open_monitor(path: Annotated[Path, Depends(monitor_file)]) -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    try:
        yield connection
    finally:
        connection.close()


MonitorDb = Annotated[sqlite3.Connection, Depends(open_monitor)]


def _guarded(read: Any) -> Any:
    try:
        return read()
    except MonitorInputError as error:
        raise InvalidParameters(str(error)) from None
    except sqlite3.DatabaseError as error:
        raise InvalidParameters(f"not a graphboard monitor file: {error}") from None


@router.get("", summary="Monitor comparison files under the data dir")
def list_files(settings: SettingsDep) -> JSONResponse:
    root = settings.data_root
    found = []
    for path in sorted(root.rglob(f"*{TREND_DB_SUFFIX}")):
        relative = path.relative_to(root)
        if any(part.startswith(".") for part in relative.parts) or path.is_symlink():
            continue
        found.append({"id": str(relative)[: -len(TREND_DB_SUFFIX)], "size": path.stat().st_size})
    return _answer({"files": found})


@router.get("/runs", summary="Monitor runs under the data dir (inputs of a monitor job)")
def list_runs(_token: TokenDep, settings: SettingsDep) -> JSONResponse:
    """Folders of the monitor's rank folders, and ``.trend.db`` files (msprobe's or
    graphboard's), as paths under the data dir to pass to ``POST /api/monitor/jobs``."""
    root = settings.data_root
    found, truncated = find_runs(root, MAX_RUNS)
    runs = [
        {"path": path.relative_to(root).as_posix(), "kind": "file" if path.is_file() else "folder"}
        for path in found
        if path != root and not path.is_relative_to(settings.state_root)
    ]
    return _answer({"runs": runs, "truncated": truncated})


@router.post(
    "/jobs",
    status_code=201,
    response_model=JobCreated,
    responses=UPLOAD_ERRORS,
    summary="Compare two monitor runs under the data dir in the background",
)
def create_monitor_job_route(
    request: MonitorJobRequest,
    token: TokenDep,
    settings: SettingsDep,
    catalog: CatalogDep,
    runner: RunnerDep,
) -> JobCreated:
    """``graphboard monitor -tp target -gp golden`` as a job: poll ``status_url``; once done,
    ``/api/jobs/{id}/verdict`` answers with the summary and the first departure."""
    runner.warm()
    job_id = create_monitor_job(settings, catalog, runner.name, request, token)
    submit_or_fail(runner, catalog, job_id)
    return JobCreated(job_id=job_id, status="queued", status_url=f"/api/jobs/{job_id}")


@router.post(
    "/uploads",
    status_code=201,
    response_model=JobCreated,
    responses=UPLOAD_ERRORS,
    summary="Upload two runs' monitor output and compare them in the background",
)
async def upload_monitor_runs(
    request: Request,
    token: TokenDep,
    settings: SettingsDep,
    catalog: CatalogDep,
    runner: RunnerDep,
) -> JobCreated:
    """Multipart fields ``target`` and ``golden``: each a .tar.gz or .zip of a run's monitor
    output (its folder of ``<time>-rank<r>-<id>/`` CSV folders, or a .trend.db). Checked as
    dump uploads are (size, members), then queued as a monitor job."""
    return await queue_upload(
        request,
        settings,
        catalog,
        runner,
        token,
        file_fields={"target": settings.max_upload_bytes, "golden": settings.max_upload_bytes},
        text_fields=set(),
        accept=accept_monitor_upload,
    )


@router.get("/{file:path}/graphs", summary="The .vis.db files showing the first departure's step")
def get_graphs(db: MonitorDb, settings: SettingsDep) -> JSONResponse:
    report = _guarded(lambda: views.report(db))
    first = report.get("first_departure")
    return _answer(
        {
            "step": first["step"] if first else None,
            "rank": first["rank"] if first else None,
            "graphs": departure_graphs(settings, report),
        }
    )


def _shown_run(source: object, data_dir: Path) -> object:
    """A run's folder as a reader of the API sees it: relative to the data dir, or only its
    name when it lies outside (the file keeps the absolute path, which the link rule needs;
    the server's layout beyond its data dir, an upload's folder among them, is not shown)."""
    if not isinstance(source, str) or not Path(source).is_absolute():
        return source
    path = Path(source)
    try:
        return path.relative_to(data_dir).as_posix()
    except ValueError:
        return path.name


@router.get("/{file:path}/report", summary="The comparison's report and its series")
def get_report(db: MonitorDb, settings: SettingsDep) -> JSONResponse:
    def answer() -> dict[str, object]:
        report = views.report(db)
        data_dir = settings.data_root
        for side in ("target", "golden"):
            report[side] = _shown_run(report.get(side), data_dir)
        return {
            "report": report,
            "statistics": views.statistics(db),
            "series": views.series(db),
        }

    return _answer(_guarded(answer))


@router.get("/{file:path}/heatmap", summary="One metric's targets x steps on one rank")
def get_heatmap(
    db: MonitorDb,
    metric: Annotated[str, Query(max_length=64)],
    statistic: Statistic,
    side: SideQuery = "diff",
    rank: Index = 0,
) -> JSONResponse:
    grid = _guarded(lambda: views.heatmap(db, metric, statistic, side, rank))
    return _answer(vars(grid))


@router.get("/{file:path}/ranks", summary="One series: ranks x steps")
def get_ranks(
    db: MonitorDb, series: Index, statistic: Statistic, side: SideQuery = "diff"
) -> JSONResponse:
    return _answer(vars(_guarded(lambda: views.ranks_grid(db, series, statistic, side))))


@router.get("/{file:path}/lines", summary="One series on one rank over steps, both runs")
def get_lines(db: MonitorDb, series: Index, statistic: Statistic, rank: Index = 0) -> JSONResponse:
    return _answer(_guarded(lambda: views.lines(db, series, statistic, rank)))


@router.get("/{file:path}/grad-norm", summary="Both runs' global gradient norm on one rank")
def get_grad_norm(db: MonitorDb, rank: Index = 0) -> JSONResponse:
    return _answer(_guarded(lambda: views.grad_norm(db, rank)))


@router.get(
    "/{file:path}/dump-config", summary="msprobe's dump config.json for the first departure"
)
def get_dump_config(db: MonitorDb) -> Response:
    report = _guarded(lambda: views.report(db))
    first = report.get("first_departure")
    if not first:
        raise NotFound("no departure: nothing to dump", code="no_departure")
    config = config_for(int(first["step"]), int(first["rank"]), list(first["modules_at_step"]))
    return Response(
        json.dumps(config, indent=2) + "\n",
        media_type="application/json",
        headers={"Content-Disposition": 'attachment; filename="config.json"'},
    )
