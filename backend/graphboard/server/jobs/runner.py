"""Which runner executes jobs: the server's own worker processes, or Celery workers."""

from __future__ import annotations

from typing import Annotated, Protocol

from fastapi import Depends, Request

from graphboard.server.catalog import Catalog
from graphboard.server.errors import ApiError
from graphboard.server.jobs import records
from graphboard.server.settings import Settings


class ServiceUnavailable(ApiError):
    status = 503
    code = "runner_unavailable"


class Runner(Protocol):
    name: str

    def start(self) -> None:
        """Pick up what a previous server left unfinished."""

    def warm(self) -> None:
        """A job is likely soon: get ready (start build processes) without blocking."""

    def submit(self, job_id: str) -> None:
        """Have a queued job built; returns at once."""

    def stop(self) -> None: ...


def make_runner(settings: Settings, catalog: Catalog) -> Runner:
    if settings.broker_url:
        from graphboard.server.jobs.celery_app import CeleryRunner

        return CeleryRunner(settings, catalog)
    from graphboard.server.jobs.local import LocalRunner

    return LocalRunner(settings, catalog)


def get_runner(request: Request) -> Runner:
    runner: Runner = request.app.state.runner
    return runner


RunnerDep = Annotated[Runner, Depends(get_runner)]


def submit_or_fail(runner: Runner, catalog: Catalog, job_id: str) -> None:
    """Hand a recorded job to the runner; if it cannot take it (the broker is down), fail
    the job with the reason rather than leave it queued with no message behind it."""
    try:
        runner.submit(job_id)
    except Exception as error:
        reason = f"could not queue the build: {type(error).__name__}: {error}"
        with catalog.session() as session:
            records.fail(session, job_id, reason)
        raise ServiceUnavailable(reason, details={"job_id": job_id}) from None
