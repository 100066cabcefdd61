"""A whole build in one call: plan, run the tasks (in this process, or a pool of worker
processes when there are several large ones), finish."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING

from graphboard.build import output
from graphboard.build.options import BuildOptions, BuildResult, Task, TaskResult
from graphboard.build.plan import plan_build
from graphboard.dump.layout import RankDir
from graphboard.errors import GraphboardError
from graphboard.progress import ProgressCallback, silent
from graphboard.stopping import die_with_parent

if TYPE_CHECKING:  # imported where a pool is started: a lone task needs none of it
    from concurrent.futures import ProcessPoolExecutor

POOL_MIN_BYTES = 48 * 1024 * 1024  # below this much dump.json, starting workers costs more
# Below this much dump.json to read aside, a lone task reads its rank folders one after the
# other: starting a process to read them costs more than it saves.
ASIDE_MIN_BYTES = 8 * 1024 * 1024


def run_build(options: BuildOptions, progress: ProgressCallback = silent) -> BuildResult:
    """Build or compare and return where the finished .vis.db is."""
    plan = plan_build(options)
    output.ensure_output_dir(options)
    parts = output.part_paths(options.output_dir, plan.name, len(plan.tasks))
    try:
        progress(0.0, f"{len(plan.tasks)} graph(s) to build")
        results = run_tasks(plan.tasks, options, parts, progress)
    except BaseException:
        output.remove(parts)
        raise
    from graphboard.build.finish import finish_build  # see run_tasks

    return finish_build(plan, results, parts, progress)


def workers_for(options: BuildOptions, tasks: list[Task]) -> int:
    """How many processes run the tasks: -w if given, else one per core (at most eight) for
    several tasks with enough to read, else this process alone."""
    if options.workers is not None:
        return max(1, min(options.workers, len(tasks)))
    if len(tasks) == 1 or _dump_bytes(tasks) < POOL_MIN_BYTES:
        return 1
    return max(1, min(os.cpu_count() or 1, len(tasks), 8))


def _dump_bytes(tasks: list[Task]) -> int:
    return _folder_bytes([folder for task in tasks for folder in _folders(task)])


def _folders(task: Task) -> list[RankDir]:
    """Every rank folder the task reads."""
    if task.merge is not None:
        return task.merge.rank_folders()
    return [folder for folder in (task.target, task.golden, task.reference) if folder is not None]


def run_tasks(
    tasks: list[Task], options: BuildOptions, parts: list[Path], progress: ProgressCallback
) -> list[TaskResult]:
    """Each task into its part, in task order."""

    def report(done: int, result: TaskResult) -> None:
        progress(
            0.95 * done / len(tasks), f"{done}/{len(tasks)} step {result.step} rank {result.rank}"
        )

    folders = _folders_read_aside(options, tasks)
    if folders:
        result = _run_reading_aside(tasks[0], options, parts[0], folders)
        report(1, result)
        return [result]
    # the stages' modules are imported here, not with this one: reading aside, they are
    # imported while the workers start and read
    from graphboard.build.task import run_task

    if workers_for(options, tasks) == 1:
        results = []
        for index, task in enumerate(tasks):
            results.append(run_task(task, options, parts[index], whole_file=len(tasks) == 1))
            report(index + 1, results[-1])
        return results
    return _run_in_pool(tasks, options, parts, report)


def _folders_read_aside(options: BuildOptions, tasks: list[Task]) -> list[RankDir]:
    """The rank folders a lone task has read in other processes while it works itself: a
    compare's golden side while it reads the target, a merged replica's ranks but the first
    while it reads that one, then builds and merges the others as they come. Only with a
    second core to do it (-w 2 or more asks for it on any input, -w 1 never) and enough to
    read."""
    if len(tasks) != 1:
        return []  # several tasks run side by side instead (_run_in_pool)
    task = tasks[0]
    if task.merge is not None:
        folders = task.merge.rank_folders()[1:]  # the task reads the first meanwhile
    elif task.golden is not None:
        # the task reads its target meanwhile; a noise reference (-nr) after the golden
        folders = [folder for folder in (task.golden, task.reference) if folder is not None]
    else:
        return []  # a lone build: nothing to read beside its one rank
    if options.workers is not None:
        return folders if options.workers >= 2 else []
    if (os.cpu_count() or 1) < 2:
        return []
    return folders if _folder_bytes(folders) >= ASIDE_MIN_BYTES else []


def _folder_bytes(folders: list[RankDir]) -> int:
    total = 0
    for folder in folders:
        with suppress(OSError):  # a missing file is reported when the task reads it
            total += folder.file("dump.json").stat().st_size
    return total


def _run_reading_aside(
    task: Task, options: BuildOptions, part: Path, folders: list[RankDir]
) -> TaskResult:
    from concurrent.futures import ProcessPoolExecutor

    from graphboard.graph.builder import read_records

    # a compare's golden side is one read; a replica's other ranks, one a worker
    workers = (
        1 if task.merge is None else min(options.workers or os.cpu_count() or 1, len(folders), 8)
    )
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=die_with_parent,
        initargs=(os.getpid(),),
    )
    try:
        # submitted in the order the task reads them: the first is ready first
        read_aside = {folder: pool.submit(read_records, folder) for folder in folders}
        from graphboard.build.task import run_task  # see run_tasks

        return run_task(task, options, part, whole_file=True, read_aside=read_aside)
    except BaseException:
        _kill_workers(pool)
        raise
    finally:
        pool.shutdown(cancel_futures=True)


def _run_in_pool(
    tasks: list[Task],
    options: BuildOptions,
    parts: list[Path],
    report: Callable[[int, TaskResult], None],
) -> list[TaskResult]:
    from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, wait

    from graphboard.build.task import run_task  # see run_tasks

    context = multiprocessing.get_context("spawn")  # safe inside servers with threads
    pool = ProcessPoolExecutor(
        max_workers=workers_for(options, tasks),
        mp_context=context,
        initializer=die_with_parent,  # a worker outliving a killed build writes on for nothing
        initargs=(os.getpid(),),
    )
    try:
        futures: dict[Future[TaskResult], int] = {
            pool.submit(run_task, task, options, parts[index], whole_file=False): index
            for index, task in enumerate(tasks)
        }
        ordered: list[TaskResult | None] = [None] * len(tasks)
        pending = set(futures)
        done_count = 0
        while pending:
            done, pending = wait(pending, return_when=FIRST_EXCEPTION)
            for future in done:
                task = tasks[futures[future]]
                error = future.exception()
                if isinstance(error, GraphboardError):
                    raise error
                if error is not None:
                    raise GraphboardError(
                        f"building step {task.step} rank {task.rank} failed: {error!r}"
                    ) from error
                ordered[futures[future]] = future.result()
                done_count += 1
                report(done_count, future.result())
    except BaseException:
        _kill_workers(pool)
        raise
    finally:
        pool.shutdown(cancel_futures=True)
    return [result for result in ordered if result is not None]


def _kill_workers(pool: ProcessPoolExecutor) -> None:
    """End a failed or stopped build's workers now, before its part files are removed:
    shutdown would wait for every running task to end (minutes for a large rank), and a
    worker still running could write a part after its removal. The executor has no public
    way to do this before Python 3.14 (kill_workers), hence its process table."""
    workers = list((pool._processes or {}).values())
    for worker in workers:
        worker.kill()
    for worker in workers:
        worker.join()
    # A worker killed while it sent its result (a golden side's records: tens of megabytes)
    # leaves the pool's reading thread blocked for the rest of that message forever: this
    # process holds the result pipe's write end too, so no end of file ever comes, and
    # shutdown would wait for that thread for ever (SIGTERM mid-compare hanging past 15 s,
    # its pool's semaphores reported leaked once it was SIGKILLed). With every worker gone,
    # that write end is the last: closing it ends the read, and the thread marks the pool
    # broken and stops as for any dead worker.
    pool._result_queue._writer.close()  # type: ignore[attr-defined]
