"""Jobs: start one on folders under the data dir, follow it, read its verdict."""

from __future__ import annotations

import sqlite3
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi import Path as PathParam

from graphboard.errors import GraphboardError
from graphboard.monitor.formats import TREND_DB_SUFFIX
from graphboard.server.auth import TokenDep
from graphboard.server.catalog.models import Job
from graphboard.server.deps import CatalogDep, CatalogSession, SettingsDep
from graphboard.server.errors import Conflict, NotFound, UnreadableFile
from graphboard.server.jobs import records
from graphboard.server.jobs.folders import create_folder_job
from graphboard.server.jobs.monitor_job import MONITOR, MonitorVerdictOut, monitor_verdict
from graphboard.server.jobs.present import job_out
from graphboard.server.jobs.runner import RunnerDep, submit_or_fail
from graphboard.server.jobs.schemas import (
    AUTH_ERRORS,
    JOB_ERRORS,
    UPLOAD_ERRORS,
    JobCreated,
    JobListOut,
    JobOut,
    JobRequest,
)
from graphboard.server.paths import InvalidGraphId, UnknownGraph, resolve_graph
from graphboard.server.rules import FILE_DEFAULT, RulesQuery
from graphboard.server.settings import Settings
from graphboard.store.reader import open_vis_db
from graphboard.verdict.judge import verdict
from graphboard.verdict.models import RuledVerdictOut, VerdictOut

router = APIRouter(prefix="/api/jobs", tags=["jobs"])

JobId = Annotated[str, PathParam(pattern=r"^[0-9a-f]{32}$", description="from POST /api/uploads")]


@router.get("", response_model=JobListOut, responses=AUTH_ERRORS, summary="Recent jobs")
def list_jobs(
    _token: TokenDep,
    session: CatalogSession,
    settings: SettingsDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 20,
) -> JobListOut:
    return JobListOut(
        jobs=[job_out(session, settings, job) for job in records.recent(session, limit)]
    )


@router.post(
    "",
    status_code=201,
    response_model=JobCreated,
    responses=UPLOAD_ERRORS,
    summary="Build dump folders under the data dir",
)
def create_job(
    request: JobRequest,
    token: TokenDep,
    settings: SettingsDep,
    catalog: CatalogDep,
    runner: RunnerDep,
) -> JobCreated:
    """Folders as ``/api/dumps`` lists them; checked as uploads are, then queued."""
    runner.warm()
    job_id = create_folder_job(settings, catalog, runner.name, request, token)
    submit_or_fail(runner, catalog, job_id)
    return JobCreated(job_id=job_id, status="queued", status_url=f"/api/jobs/{job_id}")


@router.get("/{job_id}", response_model=JobOut, responses=JOB_ERRORS, summary="A job's state")
def get_job(
    job_id: JobId, _token: TokenDep, session: CatalogSession, settings: SettingsDep
) -> JobOut:
    job = records.get(session, job_id)
    if job is None:
        raise NotFound(f"no job {job_id}", code="unknown_job")
    return job_out(session, settings, job)


@router.get(
    "/{job_id}/verdict",
    response_model=VerdictOut | RuledVerdictOut | MonitorVerdictOut,
    responses=JOB_ERRORS,
    summary="A finished job's verdict",
)
def get_verdict(
    job_id: JobId,
    _token: TokenDep,
    session: CatalogSession,
    settings: SettingsDep,
    rules: RulesQuery = FILE_DEFAULT,
) -> VerdictOut | RuledVerdictOut | MonitorVerdictOut:
    """Nodes per verdict and overflow level over the target side (all steps and ranks),
    the first node that introduces an error, and the viewer URL that opens it. A monitor
    job answers with its summary and first departure (``kind`` monitor; ``rules`` unused)."""
    job = records.get(session, job_id)
    if job is None:
        raise NotFound(f"no job {job_id}", code="unknown_job")
    if job.status == records.FAILED:
        raise Conflict(f"the job failed: {job.error}", code="job_failed")
    if job.status != records.DONE or job.graph_id is None:
        raise Conflict(f"the job is {job.status}: no verdict yet", code="job_not_done")
    if job.kind == MONITOR:
        return _monitor_verdict(settings, job)
    try:
        path = resolve_graph(settings.data_root, job.graph_id)
    except (InvalidGraphId, UnknownGraph):
        raise NotFound(
            f"the job's result {job.graph_id!r} is no longer under the data dir",
            code="unknown_graph",
        ) from None
    try:
        with open_vis_db(path, settings.cache_dir) as db:
            return verdict(db, job.id, job.graph_id, rules=rules)
    except GraphboardError as error:
        raise UnreadableFile(str(error)) from None


def _monitor_verdict(settings: Settings, job: Job) -> MonitorVerdictOut:
    path = settings.data_root / f"{job.graph_id}{TREND_DB_SUFFIX}"
    if not path.is_file():
        raise NotFound(
            f"the job's result {job.graph_id!r} is no longer under the data dir",
            code="unknown_graph",
        )
    try:
        return monitor_verdict(settings, job, path)
    except (GraphboardError, sqlite3.DatabaseError) as error:
        raise UnreadableFile(f"{path.name}: {error}") from None
