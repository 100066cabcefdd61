"""Builds on Celery workers (``GRAPHBOARD_BROKER_URL=redis://...``; ``graphboard worker``).

The catalog, not Celery, holds a job's state: messages carry a job id (and a task index),
results are ignored, and the API polls the ``jobs`` table. Delivery settings follow from
builds being long and repeatable: acknowledge a message only when its task has finished, so
a worker that dies mid-build has its message delivered again (same task id: it may claim its
own job again, see ``records.claim``); take one message at a time; and keep the broker from
redelivering a build that is merely slow (Redis's visibility timeout, longer than a build).

Stopping (tests/server/test_worker_stop.py). A warm shutdown (SIGTERM to the worker) lets the
running task finish. A cold one (SIGQUIT) sends SIGTERM to the pool's child running it, then
SIGTERM again as it terminates the pool; so may a service manager signalling every process
of the worker. Every task runs under :func:`stop_signals_raise` (in the child's main thread,
where prefork runs tasks): the first signal raises :class:`~graphboard.stopping.Stopped` and
unwinds the build, which removes its files and stops its children, and later ones cannot cut
that short (billiard's own handler, which it replaces for the task, would end the process on
the second). Celery counts a task that raised KeyboardInterrupt as a lost worker: with
``task_reject_on_worker_lost`` its message goes back to the queue, and the next worker
builds the job again under the same task id (``records.claim``).
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery, Task

from graphboard.server.catalog import Catalog
from graphboard.server.jobs import fanout, records
from graphboard.server.settings import Settings
from graphboard.server.uploads import records as uploads
from graphboard.stopping import stop_signals_raise

QUEUE = "graphboard"
RUNNER = "celery"
VISIBILITY_TIMEOUT = 24 * 3600

celery = Celery("graphboard")
celery.conf.update(
    task_default_queue=QUEUE,
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_ignore_result=True,
    task_serializer="json",
    accept_content=["json"],
    broker_connection_retry_on_startup=True,
    broker_transport_options={"visibility_timeout": VISIBILITY_TIMEOUT},
    worker_hijack_root_logger=False,
)
_configured: dict[str, Any] = {}


def configure(settings: Settings) -> Celery:
    """Point the app at the settings' broker; tasks of this process use these settings."""
    if celery.conf.broker_url != settings.broker_url:
        celery.conf.broker_url = settings.broker_url
        # The app keeps the connections of the broker it first sent to: another broker
        # (a second configure in one process, as tests do) would never be used.
        celery.close()
        celery.amqp._producer_pool = None
    _configured["settings"] = settings
    _configured.pop("catalog", None)
    return celery


def _context() -> tuple[Settings, Catalog]:
    settings: Settings = _configured.get("settings") or Settings()
    # One engine per process: a prefork worker's children must not share the parent's pool.
    catalog = _configured.get("catalog")
    if catalog is None or _configured.get("pid") != os.getpid():
        catalog = Catalog(settings.catalog_url)
        _configured.update(settings=settings, catalog=catalog, pid=os.getpid())
    return settings, catalog


def dispatch(task: str, *args: Any) -> None:
    celery.send_task(task, args=list(args), queue=QUEUE)


@celery.task(name=fanout.TASK_RUN, bind=True)
def run_job(self: Task, job_id: str) -> None:
    settings, catalog = _context()
    with stop_signals_raise():
        fanout.start(settings, catalog, job_id, f"{RUNNER}:{self.request.id}", dispatch)


@celery.task(name=fanout.TASK_PART)
def build_part(job_id: str, index: int) -> None:
    settings, catalog = _context()
    with stop_signals_raise():
        fanout.build_part(settings, catalog, job_id, index, dispatch)


@celery.task(name=fanout.TASK_MERGE)
def merge_parts(job_id: str) -> None:
    settings, catalog = _context()
    with stop_signals_raise():
        fanout.merge(settings, catalog, job_id)


class CeleryRunner:
    """The API side: queue a job as a message. The workers do the rest."""

    name = RUNNER

    def __init__(self, settings: Settings, catalog: Catalog) -> None:
        configure(settings)
        self.settings = settings
        self.catalog = catalog

    def start(self) -> None:
        # A job recorded just before the server died may have no message: send one. A
        # duplicate is harmless, the second claim of a running job by another task fails.
        with self.catalog.session() as session:
            pending = records.recover_queued(session, RUNNER)
            uploads.sweep(
                session, self.settings.uploads_dir, keep_uploads=self.settings.keep_uploads
            )
        for job_id in pending:
            self.submit(job_id)

    def warm(self) -> None:
        return None  # the workers are already running

    def submit(self, job_id: str) -> None:
        dispatch(fanout.TASK_RUN, job_id)

    def stop(self) -> None:
        return None


def run_worker(settings: Settings, *, concurrency: int, loglevel: str = "INFO") -> None:
    """``graphboard worker``: a Celery worker consuming the build queue."""
    configure(settings)
    celery.worker_main(
        [
            "worker",
            f"--concurrency={concurrency}",
            f"--loglevel={loglevel}",
            f"--queues={QUEUE}",
            "--without-gossip",
            "--without-mingle",
            f"--hostname=graphboard@{os.uname().nodename}.{os.getpid()}",
        ]
    )
