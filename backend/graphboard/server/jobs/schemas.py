"""Request and response models of the upload, job and verdict endpoints."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from graphboard.server.schemas import ApiModel, ErrorResponse, LevelName

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


class CountsOut(ApiModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    pass_: int = Field(alias="pass", serialization_alias="pass")
    warning: int
    error: int
    unmatched: int


class OverflowOut(ApiModel):
    medium: int
    high: int
    critical: int


class WorstMetricOut(ApiModel):
    """The worst parameter row of a node: the most severe result, then the largest
    error-like metric."""

    parameter: str = Field(description="input.0, output.0 ...")
    result: str | None = Field(description="the row's verdict: pass, warning, error")
    metric: str | None = Field(description="e.g. MaxRelativeErr; null when no metric is numeric")
    value: float | None
    shown: str | None = Field(description="the metric as the file stores it (e.g. '53.2%')")
    message: str | None = Field(description="the row's first message, e.g. why it is an error")


class FirstErrorOut(ApiModel):
    name: str
    side: str
    step: int
    rank: int
    level: LevelName = Field(description="error, or warning when no node introduces an error")
    precision_index: float | None
    worst_metric: WorstMetricOut | None = Field(
        description="the node's largest error-like metric (relative errors first)"
    )


class DiagnosisOut(ApiModel):
    """Where inf/NaN was born, the first non-deterministic op, or the first error."""

    kind: str = Field(description="overflow, nondeterminism, first_error or none")
    found: bool
    summary: str
    step: int | None
    rank: int | None
    node: str | None
    node_class: str | None = Field(description="weight, input, output, nondeterministic ...")
    advice: str | None


class VerdictOut(ApiModel):
    job_id: str | None = Field(description="the job's id; null for a file judged on its own")
    graph: str
    graph_type: str
    data_mode: str | None
    steps: list[int]
    ranks: list[int]
    counts: CountsOut = Field(description="nodes per verdict, summed over the target's graphs")
    overflow: OverflowOut = Field(description="nodes per overflow level, target side")
    first_error: FirstErrorOut | None
    url: str = Field(description="viewer URL (relative to the server) opening the first error")
    diagnosis: DiagnosisOut | None = Field(
        default=None,
        description="graphboard diagnose's answer (GET /api/graphs/{graph}/diagnosis in full)",
    )


class RuledVerdictOut(VerdictOut):
    """A verdict under a rule set other than msprobe's (``rules=dtype-aware``); msprobe's
    verdict keeps its fields exactly."""

    rules: str = Field(description="the rule set of the counts and the first error")
    not_judged: int = Field(
        description="nodes the rule set cannot judge (dtype-aware in md5 mode: no numbers)"
    )


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
