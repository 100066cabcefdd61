"""``POST /api/uploads``: dumps as archives, streamed to disk, checked, queued as a job."""

from __future__ import annotations

import shutil
from collections.abc import Callable

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from graphboard.server.auth import TokenDep
from graphboard.server.catalog import Catalog
from graphboard.server.catalog.tokens import TokenIdentity
from graphboard.server.deps import CatalogDep, SettingsDep
from graphboard.server.jobs import records
from graphboard.server.jobs.runner import Runner, RunnerDep, submit_or_fail
from graphboard.server.jobs.schemas import UPLOAD_ERRORS, JobCreated, UploadBody
from graphboard.server.settings import Settings
from graphboard.server.uploads.accept import TEXT_FIELDS, accept_upload, file_limits
from graphboard.server.uploads.multipart import receive_form

router = APIRouter(prefix="/api/uploads", tags=["uploads"])

_BODY = {
    "requestBody": {
        "required": True,
        "content": {"multipart/form-data": {"schema": UploadBody.model_json_schema()}},
    }
}


@router.post(
    "",
    status_code=201,
    response_model=JobCreated,
    responses=UPLOAD_ERRORS,
    summary="Upload dumps and build them in the background",
    openapi_extra=_BODY,
)
async def upload(
    request: Request,
    token: TokenDep,
    settings: SettingsDep,
    catalog: CatalogDep,
    runner: RunnerDep,
) -> JobCreated:
    """Multipart fields: ``target`` (a .tar.gz or .zip of a dump folder in any layout
    graph_build accepts), optional ``golden`` (turns on compare) and ``layer_mapping``
    (YAML), and the flags ``fuzzy_match`` and ``overflow_check``. The dumps are checked
    before the job is queued; poll ``status_url`` for its progress."""
    return await queue_upload(
        request,
        settings,
        catalog,
        runner,
        token,
        file_fields=file_limits(settings),
        text_fields=TEXT_FIELDS,
        accept=accept_upload,
    )


async def queue_upload(
    request: Request,
    settings: Settings,
    catalog: Catalog,
    runner: Runner,
    token: TokenIdentity,
    *,
    file_fields: dict[str, int],
    text_fields: set[str],
    accept: Callable[..., str],
) -> JobCreated:
    """Receive a multipart upload into its own folder, have ``accept`` (settings, catalog,
    runner name, upload id, folder, form, token) check it and record its job, and queue the
    job; the folder goes if anything fails before the job exists."""
    runner.warm()
    upload_id = records.new_id()
    folder = settings.uploads_dir / upload_id
    folder.mkdir(parents=True)
    try:
        form = await receive_form(
            request,
            folder,
            file_fields=file_fields,
            text_fields=text_fields,
            max_bytes=settings.max_upload_bytes,
        )
        job_id = await run_in_threadpool(
            accept, settings, catalog, runner.name, upload_id, folder, form, token
        )
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    await run_in_threadpool(submit_or_fail, runner, catalog, job_id)
    return JobCreated(
        job_id=job_id, upload_id=upload_id, status="queued", status_url=f"/api/jobs/{job_id}"
    )
