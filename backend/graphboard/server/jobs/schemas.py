"""Request and response models of the upload and job endpoints (the verdict's are
``graphboard.verdict.models``: ``graphboard verdict`` answers them too)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from graphboard.server.schemas import ApiModel, ErrorResponse

JobStatus = Literal["queued", "running", "done", "failed"]


class UploadForm(BaseModel):
    """The text fields of ``POST /api/uploads`` (the files are ``target``, ``golden`` and
    ``layer_mapping``). Booleans accept true/false, 1/0, yes/no, on/off."""

    model_config = ConfigDict(extra="forbid")

    fuzzy_match: bool = Field(default=False, description="-fm: modules by name, APIs by order")
    overflow_check: bool = Field(default=False, description="-oc: mark overflow levels")


class UploadBody(BaseModel):
    """What ``/docs`` shows for the multipart body (the route parses it as a stream)."""

    target: bytes = Field(
        description=".tar.gz or .zip of the target dump folder (any layout graph_build takes)",
        json_schema_extra={"format": "binary"},
    )
    golden: bytes | None = Field(
        default=None,
        description=".tar.gz or .zip of the golden dump: turns on compare",
        json_schema_extra={"format": "binary"},
    )
    layer_mapping: bytes | None = Field(
        default=None, description="-lm: layer mapping YAML", json_schema_extra={"format": "binary"}
    )
    fuzzy_match: bool = False
    overflow_check: bool = False


class JobRequest(ApiModel):
    """``POST /api/jobs``: build dump folders already under the data dir."""

    target: Annotated[str, Field(min_length=1, max_length=1024)] = Field(
        description="folder under the data dir ('/' separators), as listed by /api/dumps"
    )
    golden: Annotated[str, Field(min_length=1, max_length=1024)] | None = None
    layer_mapping: Annotated[str, Field(min_length=1, max_length=1024)] | None = Field(
        default=None, description="a .yaml file under the data dir"
    )
    fuzzy_match: bool = False
    overflow_check: bool = False
    noise_reference: Annotated[str, Field(min_length=1, max_length=1024)] | None = Field(
        default=None,
        description="a noise reference dump folder under the data dir (graph_build -nr: the "
        "golden's configuration in the target's precision); needs golden",
    )


class JobCreated(ApiModel):
    job_id: str
    upload_id: str | None = None
    status: JobStatus
    status_url: str


class JobOut(ApiModel):
    id: str
    kind: Literal["build", "monitor"] = Field(
        default="build", description="build: graph_build; monitor: graphboard monitor"
    )
    status: JobStatus
    progress: int = Field(ge=0, le=100, description="percent")
    message: str | None = Field(description="what the build is doing, or what it did")
    error: str | None = Field(description="why it failed")
    graph: str | None = Field(
        description="the .vis.db's graph id once done (use in /api/graphs); a monitor job's "
        ".trend.db id (use in /api/monitor)"
    )
    source: Literal["upload", "data_dir"]
    target: str = Field(description="the target folder (under the upload or the data dir)")
    golden: str | None
    fuzzy_match: bool
    overflow_check: bool
    runner: str = Field(description="local: the server's workers; celery: Celery workers")
    attempts: int
    parts_total: int = Field(description="(step, rank) tasks, when fanned out to workers")
    parts_done: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    viewer_url: str | None = Field(
        description="the viewer (a monitor job: the /monitor page) on the result, once done"
    )


class JobListOut(ApiModel):
    jobs: list[JobOut]


class DumpFolderOut(ApiModel):
    path: str = Field(description="under the data dir; pass it as target or golden")
    kind: Literal["rank", "ranks", "steps"] | None
    steps: list[int]
    ranks: list[int]
    error: str | None = Field(description="why it cannot be built, if so")


class DumpListOut(ApiModel):
    folders: list[DumpFolderOut]
    layer_mappings: list[str] = Field(description=".yaml files under the data dir")
    truncated: bool


def _error(description: str) -> dict[str, Any]:
    return {"model": ErrorResponse, "description": description}


AUTH_ERRORS: dict[int | str, dict[str, Any]] = {401: _error("missing, unknown or revoked token")}
UPLOAD_ERRORS: dict[int | str, dict[str, Any]] = {
    **AUTH_ERRORS,
    400: _error("unsafe or damaged archive (the member is named), malformed form"),
    413: _error("the upload, or what it unpacks to, is too large"),
    415: _error("not multipart/form-data"),
    422: _error("missing target, or not a dump graph_build accepts (the reason is given)"),
    503: _error("the job was recorded but could not be queued (the broker is down): failed"),
}
JOB_ERRORS: dict[int | str, dict[str, Any]] = {
    **AUTH_ERRORS,
    404: _error("no such job"),
    409: _error("the job has not finished (or failed): no verdict yet"),
}
