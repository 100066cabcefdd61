"""A job's life in the catalog: queued -> running -> done | failed.

Every change of state is one conditional ``UPDATE`` (``... WHERE status IN (...)``), so two
processes racing on a job (a server and a Celery worker, two workers given the same
redelivered message) cannot both win: the row count says who did. This is what lets the API
process, its build processes and Celery workers share the table without locks.

Restarts: a job found ``running`` by a starting server (its builder died with the old
process) is queued again while ``attempts`` is below the limit, else failed with the reason;
a build is deterministic and its files are only renamed into place when complete, so
running it again is safe.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from graphboard.server.catalog.models import Job, JobPart

QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
ACTIVE = (QUEUED, RUNNING)
STAGE_BUILD, STAGE_PARTS, STAGE_MERGE = "build", "parts", "merge"


def now() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    return uuid.uuid4().hex


def _changed(result: Any) -> bool:
    return bool(getattr(result, "rowcount", 0))


def create(
    session: Session,
    *,
    target: Path,
    golden: Path | None,
    layer_mapping: Path | None,
    fuzzy_match: bool,
    overflow_check: bool,
    runner: str,
    upload_id: str | None = None,
    token_id: int | None = None,
    noise_reference: Path | None = None,
    kind: str | None = None,
) -> Job:
    moment = now()
    job = Job(
        id=new_id(),
        upload_id=upload_id,
        token_id=token_id,
        status=QUEUED,
        progress=0,
        message="waiting for a worker",
        target=str(target),
        golden=str(golden) if golden is not None else None,
        layer_mapping=str(layer_mapping) if layer_mapping is not None else None,
        noise_reference=str(noise_reference) if noise_reference is not None else None,
        kind=kind,
        fuzzy_match=fuzzy_match,
        overflow_check=overflow_check,
        runner=runner,
        attempts=0,
        parts_total=0,
        created_at=moment,
        updated_at=moment,
    )
    session.add(job)
    return job


def get(session: Session, job_id: str) -> Job | None:
    return session.get(Job, job_id, populate_existing=True)


def recent(session: Session, limit: int) -> list[Job]:
    return list(session.scalars(select(Job).order_by(Job.created_at.desc()).limit(limit)))


def claim(session: Session, job_id: str, owner: str, max_attempts: int) -> Job | None:
    """Mark a queued job running for ``owner``; None when someone else has it, it has ended,
    or it has used up its attempts (then it is failed here, with the reason).

    The same owner may claim its running job again: a Celery message delivered again because
    its worker died carries the same task id. A duplicate message (another id) may not.
    """
    moment = now()
    started = session.execute(
        update(Job)
        .where(Job.id == job_id, Job.status == QUEUED, Job.attempts < max_attempts)
        .values(
            status=RUNNING,
            owner=owner,
            stage=STAGE_BUILD,
            attempts=Job.attempts + 1,
            progress=0,
            message="starting",
            started_at=moment,
            updated_at=moment,
        )
    )
    session.commit()
    if _changed(started):
        return get(session, job_id)
    again = session.execute(
        update(Job)
        .where(
            Job.id == job_id,
            Job.status == RUNNING,
            Job.owner == owner,
            Job.attempts < max_attempts,
        )
        .values(attempts=Job.attempts + 1, updated_at=moment)
    )
    session.commit()
    job = get(session, job_id)
    if _changed(again):
        return job
    if job is not None and (job.status == QUEUED or (job.status == RUNNING and job.owner == owner)):
        fail(
            session,
            job_id,
            f"gave up after {job.attempts} attempt(s): the process building it stopped each "
            "time (a server restart or a crash)",
        )
    return None


def report(session: Session, job_id: str, percent: int, message: str) -> None:
    session.execute(
        update(Job)
        .where(Job.id == job_id, Job.status == RUNNING)
        .values(progress=max(0, min(99, percent)), message=message[:2000], updated_at=now())
    )
    session.commit()


def finish(session: Session, job_id: str, graph_id: str, message: str) -> bool:
    moment = now()
    result = session.execute(
        update(Job)
        .where(Job.id == job_id, Job.status == RUNNING)
        .values(
            status=DONE,
            stage=None,
            progress=100,
            graph_id=graph_id,
            message=message[:2000],
            finished_at=moment,
            updated_at=moment,
        )
    )
    session.commit()
    return _changed(result)


def fail(session: Session, job_id: str, error: str) -> bool:
    """Fail an active job with ``error``; False when it had already ended."""
    moment = now()
    result = session.execute(
        update(Job)
        .where(Job.id == job_id, Job.status.in_(ACTIVE))
        .values(
            status=FAILED, stage=None, error=error[:8000], finished_at=moment, updated_at=moment
        )
    )
    session.commit()
    return _changed(result)


def recover(session: Session, runner: str, max_attempts: int) -> list[str]:
    """After a restart: queue again (or fail) the jobs this runner was building, and return
    every job it has queued, oldest first."""
    moment = now()
    session.execute(
        update(Job)
        .where(Job.runner == runner, Job.status == RUNNING, Job.attempts < max_attempts)
        .values(
            status=QUEUED,
            stage=None,
            message="queued again: the server stopped while it was building",
            updated_at=moment,
        )
    )
    session.execute(
        update(Job)
        .where(Job.runner == runner, Job.status == RUNNING)
        .values(
            status=FAILED,
            stage=None,
            error="the server stopped while it was building, on every attempt",
            finished_at=moment,
            updated_at=moment,
        )
    )
    session.commit()
    return list(
        session.scalars(
            select(Job.id)
            .where(Job.runner == runner, Job.status == QUEUED)
            .order_by(Job.created_at)
        )
    )


def recover_queued(session: Session, runner: str) -> list[str]:
    """Jobs of ``runner`` still waiting, oldest first (running ones are its workers')."""
    return list(
        session.scalars(
            select(Job.id)
            .where(Job.runner == runner, Job.status == QUEUED)
            .order_by(Job.created_at)
        )
    )


# --- fanned-out builds -----------------------------------------------------------------------


def start_parts(session: Session, job_id: str, total: int) -> None:
    """Forget parts of an earlier attempt and expect ``total`` new ones."""
    session.execute(delete(JobPart).where(JobPart.job_id == job_id))
    session.execute(
        update(Job)
        .where(Job.id == job_id, Job.status == RUNNING)
        .values(stage=STAGE_PARTS, parts_total=total, updated_at=now())
    )
    session.commit()


def record_part(
    session: Session, job_id: str, index: int, step: int, rank: int, seconds: float
) -> int:
    """Count a finished part once (a redelivered task inserts nothing); the parts done."""
    session.add(
        JobPart(
            job_id=job_id,
            part_index=index,
            step=step,
            rank=rank,
            seconds=seconds,
            finished_at=now(),
        )
    )
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
    return int(
        session.scalar(select(func.count()).select_from(JobPart).where(JobPart.job_id == job_id))
        or 0
    )


def claim_merge(session: Session, job_id: str) -> bool:
    """True for exactly one caller: the one that moves the job from parts to merge."""
    result = session.execute(
        update(Job)
        .where(Job.id == job_id, Job.status == RUNNING, Job.stage == STAGE_PARTS)
        .values(stage=STAGE_MERGE, updated_at=now())
    )
    session.commit()
    return _changed(result)


def parts(session: Session, job_id: str) -> Sequence[JobPart]:
    return list(
        session.scalars(
            select(JobPart).where(JobPart.job_id == job_id).order_by(JobPart.part_index)
        )
    )
