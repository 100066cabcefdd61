"""A multi-rank build spread over Celery workers, one (step, rank) task per message.

    run_job(job)            claim; plan_build; one task -> build it here, done.
        │                   n tasks -> record n expected parts, send n build_part messages
        ▼
    build_part(job, i) × n  run_part(tasks[i]) -> part file + its TaskResult; count the
        │                   part once in job_parts; the one that completes the count claims
        ▼                   the merge (a conditional UPDATE: exactly one wins) and sends it
    merge_parts(job)        finish_build: merge parts in task order, link ranks, index,
                            rename into place; job done

These are the pipeline's own stages (:func:`plan_build`, :func:`run_part`: one task without
msprobe's indexes, which the merge builds once, :func:`finish_build`), run by an executor that
starts no process (a Celery worker is a daemon), so a fanned-out build writes the same file as
``graph_build``.
Every worker plans again from the job's folders (planning only lists folders, and gives the
same tasks in the same order), so messages carry nothing but the job id and a task index.

Part files and their results live in ``<state>/jobs/<job id>/``, which every worker must see
(the shared data volume). A TaskResult goes from part to merge as a pickle in that folder:
the folder is the service's own, written only by its workers; it is trusted as much as the
part databases beside it.

A failed part fails the job and removes the folder; parts still running then find the job
failed and delete their own files; the merge is never sent.
"""

from __future__ import annotations

import logging
import os
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path

from graphboard.errors import GraphboardError
from graphboard.executor import Executor
from graphboard.pipeline import BuildPlan, TaskResult, plan_build, run_part
from graphboard.pipeline.finish import finish_build
from graphboard.server.catalog import Catalog
from graphboard.server.catalog.models import Job
from graphboard.server.jobs import records
from graphboard.server.jobs.execute import (
    CatalogProgress,
    end_job,
    fail_job,
    graph_id_of,
    job_options,
    remove_leftovers,
    run_claimed,
    summary,
)
from graphboard.server.jobs.monitor_job import MONITOR
from graphboard.server.settings import Settings

log = logging.getLogger("graphboard.jobs")

TASK_RUN, TASK_PART, TASK_MERGE = (
    "graphboard.run_job",
    "graphboard.build_part",
    "graphboard.merge_parts",
)
Dispatch = Callable[..., None]  # dispatch(task name, *args): send a message
PARTS_SHARE = 0.95  # of the progress bar; the merge has the rest
EXECUTOR = Executor(processes=False)  # a Celery worker is a daemon: it may start no process


def work_folder(settings: Settings, job_id: str) -> Path:
    return settings.work_dir / job_id


def part_path(settings: Settings, job_id: str, index: int) -> Path:
    return work_folder(settings, job_id) / f"part{index}.db"


def _result_path(part: Path) -> Path:
    return part.with_suffix(".result")


def _plan(settings: Settings, job: Job) -> BuildPlan:
    return plan_build(job_options(settings, job))


def _load(catalog: Catalog, job_id: str) -> Job | None:
    with catalog.session() as session:
        return records.get(session, job_id)


def _discard(settings: Settings, job_id: str) -> None:
    shutil.rmtree(work_folder(settings, job_id), ignore_errors=True)


def _fail(settings: Settings, catalog: Catalog, job: Job, error: BaseException) -> None:
    # The error first, then the folder: removed first, a part still running could lose its
    # folder and record that as the job's error before this one is recorded.
    fail_job(settings, catalog, job, error)
    _discard(settings, job.id)


def start(
    settings: Settings, catalog: Catalog, job_id: str, owner: str, dispatch: Dispatch
) -> None:
    with catalog.session() as session:
        job = records.claim(session, job_id, owner, settings.job_attempts)
    if job is None:
        return
    if job.stage in (records.STAGE_PARTS, records.STAGE_MERGE):
        return  # delivered again after fanning out: the parts have messages of their own
    if job.kind == MONITOR:  # one comparison: nothing to fan out
        run_claimed(settings, catalog, job, EXECUTOR)
        return
    try:
        plan = _plan(settings, job)
    except Exception as error:
        _fail(settings, catalog, job, error)
        return
    if len(plan.tasks) == 1:
        run_claimed(settings, catalog, job, EXECUTOR)
        return
    _discard(settings, job_id)  # parts of an earlier attempt
    remove_leftovers(settings, job_id)
    work_folder(settings, job_id).mkdir(parents=True)
    with catalog.session() as session:
        records.start_parts(session, job_id, len(plan.tasks))
        records.report(session, job_id, 0, f"{len(plan.tasks)} graph(s) to build")
    for index in range(len(plan.tasks)):
        dispatch(TASK_PART, job_id, index)


def build_part(
    settings: Settings, catalog: Catalog, job_id: str, index: int, dispatch: Dispatch
) -> None:
    job = _load(catalog, job_id)
    if job is None or job.status != records.RUNNING:
        return
    part = part_path(settings, job_id, index)
    result_file = _result_path(part)
    temp = result_file.with_suffix(".tmp")
    try:
        plan = _plan(settings, job)
        if not 0 <= index < len(plan.tasks):
            raise GraphboardError(f"the dump changed: part {index} is no longer in its plan")
        task = plan.tasks[index]
        part.unlink(missing_ok=True)  # a redelivered message starts the part afresh
        result = run_part(plan, index, part, EXECUTOR)
        temp.write_bytes(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(temp, result_file)
    except BaseException as error:
        # Half a part is of no use to anyone: removed on an error and on a stop alike. A
        # stop leaves the job running and the message goes back to the queue (celery_app).
        part.unlink(missing_ok=True)
        temp.unlink(missing_ok=True)
        if not isinstance(error, Exception):
            raise
        _fail(settings, catalog, job, error)
        return
    with catalog.session() as session:
        done = records.record_part(session, job_id, index, task.step, task.rank, result.seconds)
        current = records.get(session, job_id)
        if current is None or current.status != records.RUNNING:
            # The job failed meanwhile: its folder goes, even if the failing part's removal
            # ran while this part still wrote into it (and so could not remove the folder).
            _discard(settings, job_id)
            return
        records.report(
            session,
            job_id,
            int(100 * PARTS_SHARE * done / len(plan.tasks)),
            f"{done}/{len(plan.tasks)} step {task.step} rank {task.rank}",
        )
        last = done >= len(plan.tasks) and records.claim_merge(session, job_id)
    if last:
        dispatch(TASK_MERGE, job_id)


def merge(settings: Settings, catalog: Catalog, job_id: str) -> None:
    job = _load(catalog, job_id)
    if job is None or job.status != records.RUNNING or job.stage != records.STAGE_MERGE:
        return
    try:
        plan = _plan(settings, job)
        parts = [part_path(settings, job_id, index) for index in range(len(plan.tasks))]
        missing = [part.name for part in parts if not part.exists()]
        if missing:
            raise GraphboardError(
                f"the parts {', '.join(missing)} are gone (an interrupted merge?); "
                "start the build again"
            )
        results: list[TaskResult] = [
            pickle.loads(_result_path(part).read_bytes()) for part in parts
        ]
        progress = CatalogProgress(catalog, job_id, low=PARTS_SHARE, high=1.0)
        result = EXECUTOR.call(finish_build, plan, results, parts, progress)
    except Exception as error:
        _fail(settings, catalog, job, error)
        return
    with catalog.session() as session:
        records.finish(session, job_id, graph_id_of(settings, result.path), summary(result))
    _discard(settings, job_id)
    end_job(settings, catalog, job_id)
