"""Running one job's build in this process, reporting progress to its catalog record.

Used by the server's own worker processes and, for single-rank jobs, by Celery workers.
Whatever happens, the job ends ``done`` with its graph or ``failed`` with a one-line reason
(the GraphboardError message, with server folders replaced by ``target/``, ``golden/``...),
and run_build leaves either a complete .vis.db or nothing.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from graphboard.errors import GraphboardError
from graphboard.executor import Executor
from graphboard.pipeline import BuildOptions, BuildResult, run_build
from graphboard.server.catalog import Catalog
from graphboard.server.catalog.models import Job
from graphboard.server.jobs import records
from graphboard.server.jobs.monitor_job import MONITOR, run_monitor
from graphboard.server.paths import GRAPH_SUFFIX
from graphboard.server.settings import Settings
from graphboard.server.uploads import records as uploads
from graphboard.server.uploads.dumps import relative_message

log = logging.getLogger("graphboard.jobs")


def output_name(job: Job) -> str:
    return f"{'compare' if job.golden else 'build'}_{job.id}{GRAPH_SUFFIX}"


def remove_leftovers(settings: Settings, job_id: str) -> None:
    """Temporary files of an attempt whose process was killed (run_build removes its own
    unless it gets no chance to: SIGKILL, power loss). They are named after the output."""
    for leftover in settings.builds_dir.glob(f".*_{job_id}{GRAPH_SUFFIX}.*"):
        leftover.unlink(missing_ok=True)


def job_options(settings: Settings, job: Job) -> BuildOptions:
    return BuildOptions(
        target=Path(job.target),
        golden=Path(job.golden) if job.golden else None,
        output_dir=settings.builds_dir,
        overflow_check=job.overflow_check,
        fuzzy_match=job.fuzzy_match,
        layer_mapping=Path(job.layer_mapping) if job.layer_mapping else None,
        noise_reference=Path(job.noise_reference) if job.noise_reference else None,
        output_name=output_name(job),
        command=["graphboard", "job", job.id],
    )


def graph_id_of(settings: Settings, path: Path) -> str:
    relative = path.resolve().relative_to(settings.data_root).as_posix()
    return relative.removesuffix(GRAPH_SUFFIX)


def summary(result: BuildResult) -> str:
    text = f"{result.graph_type} of {len(result.steps)} step(s) x {len(result.ranks)} rank(s)"
    return text + f" in {result.seconds:.1f}s"


def failure_message(settings: Settings, job: Job, error: BaseException) -> str:
    if not isinstance(error, GraphboardError):
        log.exception("job %s: unexpected error", job.id, exc_info=error)
        return f"internal error while building: {type(error).__name__}: {error}"
    if job.upload_id is not None:
        return relative_message(error, settings.uploads_dir / job.upload_id)
    return relative_message(error, settings.data_root)


class CatalogProgress:
    """run_build's progress callback: write the percentage to the job, when it changes and
    at most twice a second (a build reports per task; the catalog may be remote)."""

    def __init__(
        self,
        catalog: Catalog,
        job_id: str,
        *,
        low: float = 0.0,
        high: float = 1.0,
        interval: float = 0.5,
    ) -> None:
        self.catalog = catalog
        self.job_id = job_id
        self.low, self.high = low, high
        self.interval = interval
        self._last_percent = -1
        self._last_time = 0.0

    def __call__(self, fraction: float, message: str) -> None:
        percent = int(100 * (self.low + (self.high - self.low) * max(0.0, min(1.0, fraction))))
        moment = time.monotonic()
        if percent == self._last_percent or (
            moment - self._last_time < self.interval and fraction < 1.0
        ):
            return
        self._last_percent, self._last_time = percent, moment
        with self.catalog.session() as session:
            records.report(session, self.job_id, percent, message)


def end_job(settings: Settings, catalog: Catalog, job_id: str) -> None:
    """After done or failed: remove the job's unpacked upload unless they are kept."""
    if settings.keep_uploads:
        return
    with catalog.session() as session:
        job = records.get(session, job_id)
        if job is not None and job.upload_id is not None:
            uploads.purge(session, job.upload_id)


def fail_job(settings: Settings, catalog: Catalog, job: Job, error: BaseException) -> None:
    with catalog.session() as session:
        records.fail(session, job.id, failure_message(settings, job, error))
    end_job(settings, catalog, job.id)


def run_claimed(settings: Settings, catalog: Catalog, job: Job, executor: Executor) -> None:
    """Build a job this process has claimed (status running), start to finish, on
    ``executor``; a monitor job (``kind`` monitor) is compared instead, by the same steps."""
    remove_leftovers(settings, job.id)
    progress = CatalogProgress(catalog, job.id)
    try:
        # A stop signal raises here (stop_signals_raise, entered by the caller's process:
        # local.py's build process, celery_app's tasks) and unwinds run_build, which removes
        # its files and stops its children.
        if job.kind == MONITOR:
            made, text = run_monitor(settings, job, progress)
        else:
            result = run_build(job_options(settings, job), progress, executor)
            made, text = graph_id_of(settings, result.path), summary(result)
    except Exception as error:  # KeyboardInterrupt / SystemExit: leave it running (re-queued)
        fail_job(settings, catalog, job, error)
        return
    with catalog.session() as session:
        records.finish(session, job.id, made, text)
    end_job(settings, catalog, job.id)


def run_job(
    settings: Settings,
    catalog: Catalog,
    job_id: str,
    owner: str,
    executor: Executor,
) -> None:
    """Claim the job and build it; nothing happens if it has ended or is someone else's."""
    with catalog.session() as session:
        job = records.claim(session, job_id, owner, settings.job_attempts)
    if job is None:
        with catalog.session() as session:
            current = records.get(session, job_id)
            ended = current is not None and current.status in (records.DONE, records.FAILED)
        if ended:  # e.g. failed just now for its attempts: free its files
            end_job(settings, catalog, job_id)
        return
    run_claimed(settings, catalog, job, executor)
