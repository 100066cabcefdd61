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
from graphboard.build.finish import finish_build
from graphboard.build.options import BuildOptions, BuildResult, Task, TaskResult
from graphboard.build.plan import plan_build
from graphboard.build.task import run_task
from graphboard.errors import GraphboardError
from graphboard.progress import ProgressCallback, silent
from graphboard.stopping import die_with_parent

if TYPE_CHECKING:  # imported where a pool is started: a lone task needs none of it
    from concurrent.futures import ProcessPoolExecutor

POOL_MIN_BYTES = 48 * 1024 * 1024  # below this much dump.json, starting workers costs more
# Below this much golden dump.json, a lone compare reads its two sides one after the other:
# starting a process to read one costs more than it saves.
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
    total = 0
    for task in tasks:
        for rank_dir in (task.target, task.golden):
            if rank_dir is not None:
                with suppress(OSError):  # a missing file is reported when the task reads it
                    total += rank_dir.file("dump.json").stat().st_size
    return total


def run_tasks(
    tasks: list[Task], options: BuildOptions, parts: list[Path], progress: ProgressCallback
) -> list[TaskResult]:
    """Each task into its part, in task order."""

    def report(done: int, result: TaskResult) -> None:
        progress(
            0.95 * done / len(tasks), f"{done}/{len(tasks)} step {result.step} rank {result.rank}"
        )

    if _reads_golden_aside(options, tasks):
        result = _run_reading_golden_aside(tasks[0], options, parts[0])
        report(1, result)
        return [result]
    if workers_for(options, tasks) == 1:
        results = []
        for index, task in enumerate(tasks):
            results.append(run_task(task, options, parts[index], whole_file=len(tasks) == 1))
            report(index + 1, results[-1])
        return results
    return _run_in_pool(tasks, options, parts, report)


def _reads_golden_aside(options: BuildOptions, tasks: list[Task]) -> bool:
    """Whether a lone compare reads its golden side in a second process while this one reads
    the target: with a second core to do it (-w 2 asks for it on any input), and enough to
    read."""
    if len(tasks) != 1 or tasks[0].golden is None or tasks[0].merge is not None:
        return False  # a merged replica reads its ranks itself (merge/stage.py)
    if options.workers is not None:
        return options.workers >= 2
    if (os.cpu_count() or 1) < 2:
        return False
    try:
        return tasks[0].golden.file("dump.json").stat().st_size >= ASIDE_MIN_BYTES
    except OSError:  # reported by the read itself
        return False


def _run_reading_golden_aside(task: Task, options: BuildOptions, part: Path) -> TaskResult:
    from concurrent.futures import ProcessPoolExecutor

    from graphboard.graph.builder import read_records

    assert task.golden is not None
    pool = ProcessPoolExecutor(
        max_workers=1,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=die_with_parent,
        initargs=(os.getpid(),),
    )
    try:
        golden_records = pool.submit(read_records, task.golden)
        return run_task(task, options, part, whole_file=True, golden_records=golden_records)
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
