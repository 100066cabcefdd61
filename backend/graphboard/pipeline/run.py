"""A whole build, as the list of what it runs: plan, the tasks (each into a part file), finish.

How each runs (this process, a pool of processes, reading aside) is the executor's
(graphboard/executor.py); this module decides only how many processes the plan is worth.
"""

from __future__ import annotations

import os
from concurrent.futures import Future
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING

from graphboard.dump.layout import RankDir
from graphboard.executor import Executor
from graphboard.graph.builder import DumpRecords, read_records
from graphboard.pipeline import output
from graphboard.pipeline.options import BuildOptions, BuildResult, Task, TaskResult
from graphboard.pipeline.plan import BuildPlan, plan_build
from graphboard.progress import ProgressCallback, silent

if TYPE_CHECKING:
    from graphboard.pipeline.task import Reader

# The stages' modules (compare, store, distributed: 0.1 to 0.2 s to import, measured against
# graphboard.pipeline alone) are imported in the functions below, after a lone compare has
# started reading its golden side aside: imported first, they delayed that read by as much
# and the compare waited for it ("wait for and build golden", bench/bench_core.py).

POOL_MIN_BYTES = 48 * 1024 * 1024  # below this much dump.json, starting workers costs more
# Below this much dump.json to read aside, a lone task reads its rank folders one after the
# other: starting a process to read them costs more than it saves.
ASIDE_MIN_BYTES = 8 * 1024 * 1024


def run_build(
    options: BuildOptions, progress: ProgressCallback = silent, executor: Executor | None = None
) -> BuildResult:
    """Build or compare and return where the finished .vis.db is."""
    executor = executor or Executor()
    plan = plan_build(options)
    output.ensure_output_dir(options)
    parts = output.part_paths(options.output_dir, plan.name, len(plan.tasks))
    try:
        progress(0.0, f"{len(plan.tasks)} graph(s) to build")
        results = run_tasks(plan, parts, progress, executor)
    except BaseException:
        output.remove(parts)
        raise
    from graphboard.pipeline.finish import finish_build  # see above

    return executor.call(finish_build, plan, results, parts, progress)


def run_part(plan: BuildPlan, index: int, part: Path, executor: Executor) -> TaskResult:
    """One task of a build fanned out over several processes (Celery's workers), into its
    part: without msprobe's indexes, which the finish builds once in the merged file."""
    from graphboard.pipeline.task import run_task  # see above

    return executor.run(run_task, plan.tasks[index], plan.options, part, False)


def run_tasks(
    plan: BuildPlan, parts: list[Path], progress: ProgressCallback, executor: Executor
) -> list[TaskResult]:
    """Each task into its part, results in task order."""
    tasks, options = plan.tasks, plan.options

    def done(count: int, result: TaskResult) -> None:
        progress(
            0.95 * count / len(tasks), f"{count}/{len(tasks)} step {result.step} rank {result.rank}"
        )

    aside = _folders_read_aside(options, tasks) if executor.processes else []
    if aside:
        task = tasks[0]
        # a compare's golden side is one read; a replica's other ranks, one a worker
        workers = 1 if task.merge is None else options.workers or os.cpu_count() or 1
        with executor.reading_aside(read_records, aside, workers=workers) as futures:
            from graphboard.pipeline.task import run_task  # see above: the read has started

            result = executor.run(run_task, task, options, parts[0], True, _reader(futures), True)
        done(1, result)
        return [result]
    from graphboard.pipeline.task import run_task  # see above

    return executor.run_each(
        run_task,
        [(task, options, part, len(tasks) == 1) for task, part in zip(tasks, parts, strict=True)],
        workers=workers_for(options, tasks),
        label=lambda index: f"building step {tasks[index].step} rank {tasks[index].rank}",
        done=done,
    )


def workers_for(options: BuildOptions, tasks: list[Task]) -> int:
    """How many processes run the tasks: -w if given, else one per core (at most eight) for
    several tasks with enough to read, else this process alone."""
    if options.workers is not None:
        return max(1, min(options.workers, len(tasks)))
    if len(tasks) == 1 or _folder_bytes([f for task in tasks for f in _folders(task)]) < (
        POOL_MIN_BYTES
    ):
        return 1
    return max(1, min(os.cpu_count() or 1, len(tasks), 8))


def _folders(task: Task) -> list[RankDir]:
    """Every rank folder the task reads."""
    if task.merge is not None:
        return task.merge.rank_folders()
    return [folder for folder in (task.target, task.golden, task.reference) if folder is not None]


def _folders_read_aside(options: BuildOptions, tasks: list[Task]) -> list[RankDir]:
    """The rank folders a lone task has read in other processes while it works itself: a
    compare's golden side while it reads the target, a merged replica's ranks but the first
    while it reads that one, then builds and merges the others as they come. Only with a
    second core to do it (-w 2 or more asks for it on any input, -w 1 never) and enough to
    read."""
    if len(tasks) != 1:
        return []  # several tasks run side by side instead (Executor.run_each)
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


def _reader(futures: dict[RankDir, Future[DumpRecords]]) -> Reader:
    """The read stage of a task some of whose folders other processes read: theirs waited
    for, the others read here. A future is let go once taken, so its records are freed with
    the task's graphs, while the collector is still paused, not left for it to traverse."""

    def read(folder: RankDir) -> DumpRecords:
        future = futures.pop(folder, None)
        if future is None:
            return read_records(folder)
        if not future.done():
            # what the summaries need (numpy: a few tenths of a second), loaded meanwhile
            from graphboard.store import writer  # see above

            writer.load_summary_modules()
        return future.result()

    return read
