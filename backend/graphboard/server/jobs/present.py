"""Job records -> response models."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.orm import Session

from graphboard.server.catalog.models import Job
from graphboard.server.jobs import records
from graphboard.server.jobs.monitor_job import MONITOR, monitor_url
from graphboard.server.jobs.schemas import JobOut
from graphboard.server.settings import Settings
from graphboard.verdict.url import viewer_url


def _shown(settings: Settings, job: Job, folder: str | None) -> str | None:
    """A job's folder as the client knows it: under its upload, or under the data dir."""
    if folder is None:
        return None
    base = settings.uploads_dir / job.upload_id if job.upload_id is not None else settings.data_root
    path = Path(folder)
    return path.relative_to(base).as_posix() if path.is_relative_to(base) else path.name


def _utc(moment: datetime | None) -> datetime | None:
    """SQLite hands datetimes back without their zone; they were written in UTC."""
    if moment is not None and moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment


def _result_url(job: Job) -> str | None:
    if job.graph_id is None:
        return None
    return monitor_url(job.graph_id) if job.kind == MONITOR else viewer_url(job.graph_id)


def job_out(session: Session, settings: Settings, job: Job) -> JobOut:
    done_parts = len(records.parts(session, job.id)) if job.parts_total else 0
    return JobOut(
        id=job.id,
        kind="monitor" if job.kind == MONITOR else "build",
        status=job.status,  # type: ignore[arg-type]
        progress=job.progress,
        message=job.message,
        error=job.error,
        graph=job.graph_id,
        source="upload" if job.upload_id is not None else "data_dir",
        target=_shown(settings, job, job.target) or "",
        golden=_shown(settings, job, job.golden),
        fuzzy_match=job.fuzzy_match,
        overflow_check=job.overflow_check,
        runner=job.runner,
        attempts=job.attempts,
        parts_total=job.parts_total,
        parts_done=done_parts,
        created_at=_utc(job.created_at) or job.created_at,
        started_at=_utc(job.started_at),
        finished_at=_utc(job.finished_at),
        viewer_url=_result_url(job),
    )
