"""Orchestrate a build or compare: sides x steps x ranks -> one complete .vis.db, or none.

Each (step, rank) task is built, matched, scored and written by one worker into a part file
of its own; the parent merges the parts, links communication ops across ranks, indexes, and
renames the finished file into place. A failure anywhere removes every temporary file.

The stages are public so that a distributed runner (the service's Celery tasks) can run them
on different machines: :func:`plan_build` (validate and list the tasks), :func:`process_task`
(one task -> one part file) and :func:`finish_build` (merge, link, index, rename).
:func:`run_build` is the three in one process.
"""

from __future__ import annotations

import functools
import gc
import multiprocessing
import os
import sqlite3
import sys
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphboard import __version__
from graphboard.compare.colors import node_colors, tool_tips
from graphboard.compare.layer_mapping import LayerMapping
from graphboard.compare.matching import MatchMode, match_graphs
from graphboard.compare.modes import common_mode, data_mode
from graphboard.compare.result import DataMode
from graphboard.dump.layout import DumpLayout, LayoutKind, RankDir, discover
from graphboard.errors import CompareError, GraphboardError, StoreError
from graphboard.gcpause import collector_paused
from graphboard.graph.builder import build_graph, read_records
from graphboard.graph.model import BENCH, NPU, Graph
from graphboard.overflow import check_overflow
from graphboard.progress import ProgressCallback, Stopwatch, silent
from graphboard.stopping import die_with_parent
from graphboard.store import schema, writer
from graphboard.store.insert_process import InsertProcess
from graphboard.store.statements import NodeWriter
from graphboard.target_rows import score_and_write

if TYPE_CHECKING:  # imported where the pipeline uses it, after the task's rows are out
    from concurrent.futures import ProcessPoolExecutor

    from graphboard.distributed import CommNode

SCHEMA_NAME = "graphboard.vis.db"


@dataclass(slots=True)
class BuildOptions:
    target: Path
    output_dir: Path
    golden: Path | None = None
    overflow_check: bool = False
    fuzzy_match: bool = False
    layer_mapping: Path | bool | None = None  # True: -lm without a file
    workers: int | None = None
    output_name: str | None = None  # file name; default build_/compare_<timestamp>.vis.db
    command: list[str] = field(default_factory=list)
    # A one-shot process (the graph_build command) ends right after the build: the last task
    # it runs itself keeps its graphs until the exit instead of freeing them object by object
    # (0.2 s of a 27k-record compare), which the exit does at once. Earlier tasks, and tasks
    # in worker processes, free theirs: the graphs of every rank would not fit.
    one_shot: bool = False

    @property
    def compare(self) -> bool:
        return self.golden is not None

    @property
    def match_mode(self) -> MatchMode:
        if self.layer_mapping:
            return MatchMode.LAYER_MAPPING
        if self.fuzzy_match:
            return MatchMode.FUZZY
        return MatchMode.DEFAULT


@dataclass(slots=True)
class Task:
    step: int
    rank: int
    target: RankDir
    golden: RankDir | None


@dataclass(slots=True)
class TaskResult:
    step: int
    rank: int
    mode: DataMode | None
    micro_steps: int
    match: dict[str, int] | None
    warnings: list[str]
    comm_nodes: list[CommNode]
    seconds: float
    timings: dict[str, float] = field(default_factory=dict)


@dataclass(slots=True)
class BuildResult:
    path: Path
    graph_type: str
    mode: DataMode | None
    steps: list[int]
    ranks: list[int]
    warnings: list[str]
    match: dict[str, dict[str, int]]
    seconds: float


def _pair_tasks(
    target: DumpLayout, golden: DumpLayout | None, warnings: list[str], missing: dict[str, Any]
) -> list[Task]:
    if golden is None:
        return [Task(item.step, item.rank, item, None) for item in target.ranks]
    if target.kind is not golden.kind:
        raise CompareError(
            f"the target {target.root} is a {target.kind.value} folder but the golden {golden.root} is a "
            f"{golden.kind.value} folder; point both at the same level (rank folder, step folder or dump root)"
        )
    if target.kind is LayoutKind.RANK:
        return [Task(target.ranks[0].step, target.ranks[0].rank, target.ranks[0], golden.ranks[0])]
    if target.kind is LayoutKind.STEPS:
        target_steps, golden_steps = set(target.steps), set(golden.steps)
        only_target, only_golden = (
            sorted(target_steps - golden_steps),
            sorted(golden_steps - target_steps),
        )
        if only_target or only_golden:
            missing["steps"] = {"target_only": only_target, "golden_only": only_golden}
            warnings.append(
                f"steps present on one side only are not compared: target only {only_target}, golden only {only_golden}"
            )
        steps = sorted(target_steps & golden_steps)
        if not steps:
            raise CompareError(
                f"no step is in both {target.root} (steps {target.steps}) and {golden.root} (steps {golden.steps})"
            )
    else:
        steps = [target.steps[0]]
    tasks: list[Task] = []
    rank_gaps: dict[str, dict[str, list[int]]] = {}
    for step in steps:
        golden_step = step if target.kind is LayoutKind.STEPS else golden.steps[0]
        target_ranks = {item.rank: item for item in target.ranks if item.step == step}
        golden_ranks = {item.rank: item for item in golden.ranks if item.step == golden_step}
        only_target = sorted(set(target_ranks) - set(golden_ranks))
        only_golden = sorted(set(golden_ranks) - set(target_ranks))
        if only_target or only_golden:
            rank_gaps[str(step)] = {"target_only": only_target, "golden_only": only_golden}
            warnings.append(
                f"step {step}: ranks present on one side only are not compared: target only {only_target}, "
                f"golden only {only_golden}"
            )
        for rank in sorted(set(target_ranks) & set(golden_ranks)):
            tasks.append(Task(step, rank, target_ranks[rank], golden_ranks[rank]))
    if rank_gaps:
        missing["ranks"] = rank_gaps
    if not tasks:
        raise CompareError(f"no rank is in both {target.root} and {golden.root}")
    return tasks


def _mapping(options: BuildOptions) -> LayerMapping | None:
    if isinstance(options.layer_mapping, Path):
        return LayerMapping.load(options.layer_mapping)
    if options.layer_mapping:
        return LayerMapping()
    return None


def process_task(
    task: Task,
    options: BuildOptions,
    part: Path,
    parallel_write: bool = False,
    keep_graphs: bool = False,
    whole_file: bool = True,
) -> TaskResult:
    """Build (and compare) one (step, rank) and write it into ``part``.

    ``parallel_write`` has a second process write the part while this one reads, scores and
    formats the rows: for a lone task, whose process would otherwise leave the second core
    idle. ``keep_graphs``: this process ends after this task (BuildOptions.one_shot).
    ``whole_file``: the part becomes the .vis.db, so it gets msprobe's indexes (parts merged
    into one file are indexed there).
    """
    with collector_paused():
        # Forked first, while this process is small: the child shares no graph pages. In a
        # compare it starts by reading the golden dump and writing the golden rows itself,
        # while this process reads the two dumps.
        golden_job = (
            functools.partial(_write_golden_ahead, task, options)
            if task.golden is not None
            else None
        )
        conn = writer.open_part(part, parallel_write, golden_job, indexed=whole_file)
        try:
            return _process_task(task, options, conn, keep_graphs)
        except BaseException:
            writer.abandon(conn)
            raise


def _write_golden_ahead(
    task: Task, options: BuildOptions, conn: NodeWriter, reply: Callable[[Any], None]
) -> None:
    """The writing process's first job in a compare: read the golden dump, hand its records
    to the other process (which would otherwise parse the same file), then build the golden
    graph as that process does and format its rows before the match is known."""
    assert task.golden is not None
    records = read_records(task.golden)
    reply(records)
    golden = build_graph(task.golden, BENCH, records)
    golden.step, golden.rank = task.step, task.rank
    if options.overflow_check:
        check_overflow(golden)
    writer.write_graph_ahead_of_match(conn, golden, data_mode(golden))
    golden.release()  # the part holds its rows


def _process_task(
    task: Task,
    options: BuildOptions,
    conn: NodeWriter,
    keep_graphs: bool,
) -> TaskResult:
    started = time.perf_counter()
    clock = Stopwatch()
    target = build_graph(task.target, NPU)
    target.step, target.rank = task.step, task.rank
    clock.lap("read and build target")
    golden: Graph | None = None
    mode: DataMode | None = None
    match: dict[str, int] | None = None
    if task.golden is not None:
        # Parsed by the writing process, which reads the golden dump for its own rows; if it
        # could not (a broken file), this process reads it and reports the error.
        records = conn.first_reply() if isinstance(conn, InsertProcess) else None
        golden = build_graph(task.golden, BENCH, records)
        golden.step, golden.rank = task.step, task.rank
        clock.lap("read and build golden")
    graphs = [target] if golden is None else [target, golden]
    if options.overflow_check:
        for graph in graphs:
            check_overflow(graph)
        clock.lap("overflow")
    if golden is not None:
        mode = common_mode(target, golden, layer_mapping=bool(options.layer_mapping))
        stats = match_graphs(target, golden, options.match_mode, _mapping(options))
        match = {
            "target_matched": stats.target_matched,
            "target_unmatched": stats.target_unmatched,
            "golden_matched": stats.golden_matched,
            "golden_unmatched": stats.golden_unmatched,
        }
        clock.lap("match")
        if isinstance(conn, InsertProcess):  # its first job formatted them (process_task)
            writer.correct_links(conn, golden)
        else:
            # The golden rows need only the match (and, in id order, "Bench_..." comes
            # before "NPU_...").
            writer.write_graph(conn, golden, target, mode)
        clock.lap("write golden")
    score_and_write(conn, target, golden, mode)
    clock.lap("score and write target")
    # The last rows are in: the writing process builds tb_nodes' indexes while this one
    # summarises the graphs.
    conn.finish_nodes()
    pairs: list[tuple[Graph, Graph | None]] = [(target, golden)]
    if golden is not None:
        pairs.append((golden, target))
    writer.write_summaries(conn, pairs)
    # Still while the writing process finishes: the communication ops, and the imports they
    # need (graphboard.distributed, 40 ms that a one-shot compare would otherwise wait for).
    from graphboard.distributed import collect_comm_nodes

    comm_nodes = [node for graph in graphs for node in collect_comm_nodes(graph)]
    conn.close()  # with an InsertProcess: waits for it to finish the file
    clock.lap("summarise and close")
    warnings = [warning for graph in graphs for warning in graph.warnings]
    micro_steps = max(graph.micro_steps for graph in graphs)
    if keep_graphs:
        _KEPT_UNTIL_EXIT.extend(graphs)
        gc.freeze()  # and out of the cyclic collector's sight, which would only traverse them
    else:
        for graph in graphs:
            graph.release()
    return TaskResult(
        task.step,
        task.rank,
        mode,
        micro_steps,
        match,
        warnings,
        comm_nodes,
        time.perf_counter() - started,
        clock.stages,
    )


_KEPT_UNTIL_EXIT: list[Graph] = []  # see BuildOptions.one_shot


def _default_name(options: BuildOptions, started: datetime) -> str:
    kind = "compare" if options.compare else "build"
    return f"{kind}_{started.strftime('%Y%m%d%H%M%S')}.vis.db"


def _claim_final_path(temp: Path, directory: Path, name: str) -> Path:
    """Link the finished file under ``name`` (or name_2, _3... if taken): never overwrite."""
    stem = name.removesuffix(".vis.db")
    suffix = 1
    while True:
        candidate = directory / (name if suffix == 1 else f"{stem}_{suffix}.vis.db")
        try:
            os.link(temp, candidate)
        except FileExistsError:
            suffix += 1
            continue
        except OSError:
            if candidate.exists():
                suffix += 1
                continue
            os.replace(temp, candidate)  # filesystems without hard links
            return candidate
        temp.unlink()
        return candidate


POOL_MIN_BYTES = 48 * 1024 * 1024  # below this much dump.json, starting workers costs more


def _dump_bytes(tasks: list[Task]) -> int:
    total = 0
    for task in tasks:
        for rank_dir in (task.target, task.golden):
            if rank_dir is not None:
                with suppress(OSError):  # a missing file is reported when the task reads it
                    total += rank_dir.file("dump.json").stat().st_size
    return total


def _workers(options: BuildOptions, tasks: list[Task]) -> int:
    if options.workers is not None:
        return max(1, min(options.workers, len(tasks)))
    if len(tasks) == 1 or _dump_bytes(tasks) < POOL_MIN_BYTES:
        return 1
    return max(1, min(os.cpu_count() or 1, len(tasks), 8))


@dataclass(slots=True)
class BuildPlan:
    """What a build will do, decided before any work: the (step, rank) tasks, in order.

    Planning reads only folder listings (and the layer-mapping file), so it is cheap, can be
    repeated in another process (a Celery task) with the same result, and is how a service
    validates a dump before queueing it.
    """

    options: BuildOptions
    tasks: list[Task]
    warnings: list[str]
    missing: dict[str, Any]
    started_at: datetime = field(default_factory=datetime.now)
    started: float = field(default_factory=time.perf_counter)

    @property
    def name(self) -> str:
        return self.options.output_name or _default_name(self.options, self.started_at)


def plan_build(options: BuildOptions) -> BuildPlan:
    """Find and pair the dumps' step and rank folders; raise on anything that cannot build."""
    warnings: list[str] = []
    missing: dict[str, Any] = {}
    started_at = datetime.now()
    target_layout = discover(options.target)
    golden_layout = discover(options.golden) if options.golden is not None else None
    warnings.extend(target_layout.warnings)
    if golden_layout is not None:
        warnings.extend(golden_layout.warnings)
    tasks = _pair_tasks(target_layout, golden_layout, warnings, missing)
    if isinstance(options.layer_mapping, Path):
        LayerMapping.load(options.layer_mapping)  # fail before any work on a bad mapping file
    return BuildPlan(options, tasks, warnings, missing, started_at)


def _ensure_output_dir(options: BuildOptions) -> None:
    try:
        options.output_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise StoreError(
            f"{options.output_dir}: cannot create the output folder: {error.strerror or error}"
        ) from None


def _remove(leftovers: list[Path]) -> None:
    """Remove a failed build's temporary files. One that cannot be removed (a read-only
    folder: it was never created) must not replace the error that failed the build."""
    for leftover in leftovers:
        with suppress(OSError):
            leftover.unlink(missing_ok=True)


def _output_error(error: sqlite3.Error | OSError, path: Path) -> StoreError:
    """What failed writing the .vis.db, in one line naming it (a full disk, a folder made
    read-only meanwhile...)."""
    reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
    return StoreError(f"{path}: cannot write the database: {reason}")


def run_build(options: BuildOptions, progress: ProgressCallback = silent) -> BuildResult:
    """Build or compare and return where the finished .vis.db is."""
    plan = plan_build(options)
    _ensure_output_dir(options)
    stem = writer.temp_path_for(options.output_dir / plan.name)
    parts = [stem.with_name(f"{stem.name}.part{index}") for index in range(len(plan.tasks))]
    try:
        progress(0.0, f"{len(plan.tasks)} graph(s) to build")
        results = _run_tasks(plan.tasks, options, parts, progress)
    except BaseException:
        _remove(parts)
        raise
    return finish_build(plan, results, parts, progress)


def finish_build(
    plan: BuildPlan,
    results: list[TaskResult],
    parts: list[Path],
    progress: ProgressCallback = silent,
) -> BuildResult:
    """Merge the tasks' part files (in task order) into one .vis.db, link communication ops
    across ranks, index it and rename it into place. The parts are consumed; on failure they
    and the temporary file are removed, so there is a complete file or none."""
    options = plan.options
    warnings = list(plan.warnings)
    name = plan.name
    conn = None
    temp: Path | None = None
    try:
        _ensure_output_dir(options)
        temp = writer.temp_path_for(options.output_dir / name)
        modes = {result.mode for result in results}
        if len(modes) > 1:
            raise CompareError(
                f"ranks and steps hold different data modes: {sorted(str(mode) for mode in modes)}"
            )
        mode = modes.pop() if modes else None
        clock = Stopwatch()
        if len(parts) == 1:  # a lone part already is the whole file: no copy
            os.replace(parts[0], temp)
            conn = writer.open_db(temp)
        else:
            conn = writer.open_new_db(temp)
            for part in parts:
                writer.merge_part(conn, part)
        clock.lap("merge parts")
        sides = (NPU, BENCH) if options.compare else (NPU,)
        from graphboard.distributed import link_ranks  # see _process_task

        link_summary = link_ranks(
            conn,
            [node for result in results for node in result.comm_nodes],
            options.overflow_check,
            dumped=[(side, result.step, result.rank) for result in results for side in sides],
        )
        clock.lap("link ranks")
        warnings.extend(link_summary.warnings)
        for result in results:
            warnings.extend(result.warnings)
        steps = sorted({task.step for task in plan.tasks})
        ranks = sorted({task.rank for task in plan.tasks})
        config = writer.ConfigRow(
            graph_type="compare" if options.compare else "build",
            task=str(mode) if mode is not None else "",
            tool_tip=tool_tips(mode) if mode is not None else None,
            micro_steps=max(result.micro_steps for result in results),
            overflow_check=options.overflow_check,
            node_colors=node_colors(mode) if mode is not None else None,
            rank_list=ranks,
            step_list=steps,
        )
        writer.write_config(conn, config)
        match = {
            f"{result.step}/{result.rank}": result.match
            for result in results
            if result.match is not None
        }
        writer.write_meta(
            conn,
            {
                "schema": SCHEMA_NAME,
                "schema_version": schema.SCHEMA_VERSION,
                "graphboard_version": __version__,
                "created_at": plan.started_at.isoformat(timespec="seconds"),
                "command": options.command or sys.argv,
                "inputs": {
                    "target": str(Path(options.target).resolve()),
                    "golden": str(Path(options.golden).resolve())
                    if options.golden is not None
                    else None,
                    "layer_mapping": str(options.layer_mapping)
                    if isinstance(options.layer_mapping, Path)
                    else options.layer_mapping,
                },
                "flags": {
                    "overflow_check": options.overflow_check,
                    "fuzzy_match": options.fuzzy_match,
                    "layer_mapping": bool(options.layer_mapping),
                    "match_mode": options.match_mode.value,
                },
                "graph_type": config.graph_type,
                "data_mode": str(mode) if mode is not None else None,
                "steps": steps,
                "ranks": ranks,
                "missing": plan.missing,
                "match": match,
                "links": link_summary.counts,
                "warnings": warnings,
                "timings": {
                    "tasks": {f"{result.step}/{result.rank}": result.timings for result in results},
                    "finish": clock.stages,
                },
            },
        )
        progress(0.97, "indexing")
        writer.finalize(conn)
        conn = None
        final = _claim_final_path(temp, options.output_dir, name)
    except BaseException as error:
        if conn is not None:
            with suppress(sqlite3.Error):
                conn.close()
        _remove([*([temp] if temp is not None else []), *parts])
        if isinstance(error, (sqlite3.Error, OSError)):
            raise _output_error(error, options.output_dir / name) from None
        raise
    progress(1.0, f"wrote {final}")
    return BuildResult(
        path=final,
        graph_type="compare" if options.compare else "build",
        mode=mode,
        steps=steps,
        ranks=ranks,
        warnings=warnings,
        match=match,
        seconds=time.perf_counter() - plan.started,
    )


def _run_tasks(
    tasks: list[Task], options: BuildOptions, parts: list[Path], progress: ProgressCallback
) -> list[TaskResult]:
    def report(done: int, result: TaskResult) -> None:
        progress(
            0.95 * done / len(tasks), f"{done}/{len(tasks)} step {result.step} rank {result.rank}"
        )

    workers = _workers(options, tasks)
    if workers == 1:
        results = []
        lone = len(tasks) == 1 and (os.cpu_count() or 1) > 1
        for index, task in enumerate(tasks):
            last = options.one_shot and index == len(tasks) - 1
            results.append(
                process_task(
                    task,
                    options,
                    parts[index],
                    parallel_write=lone,
                    keep_graphs=last,
                    whole_file=len(tasks) == 1,
                )
            )
            report(index + 1, results[-1])
        return results
    # here: 15 ms of every graph_build's start-up that only a pool of workers needs
    from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, wait

    context = multiprocessing.get_context("spawn")  # safe inside servers with threads
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=context,
        initializer=die_with_parent,  # a worker outliving a killed build writes on for nothing
        initargs=(os.getpid(),),
    )
    try:
        futures: dict[Future[TaskResult], int] = {
            pool.submit(process_task, task, options, parts[index], whole_file=False): index
            for index, task in enumerate(tasks)
        }
        ordered: list[TaskResult | None] = [None] * len(tasks)
        pending = set(futures)
        done_count = 0
        while pending:
            done, pending = wait(pending, return_when=FIRST_EXCEPTION)
            for future in done:
                error = future.exception()
                if error is not None:
                    if isinstance(error, GraphboardError):
                        raise error
                    raise GraphboardError(
                        f"building step {tasks[futures[future]].step} rank {tasks[futures[future]].rank} failed: {error!r}"
                    ) from error
                result = future.result()
                ordered[futures[future]] = result
                done_count += 1
                report(done_count, result)
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
