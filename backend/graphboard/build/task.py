"""One task, (step, rank): its stages in sequence, into a part file of its own.

The CLI, the server's local runner and Celery all run tasks through :func:`run_task`; only
where the task runs differs (in-process, or a pool worker: build/run.py).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from graphboard.build import stages
from graphboard.build.options import BuildOptions, Task, TaskResult
from graphboard.build.stages import Side
from graphboard.compare.result import DataMode
from graphboard.graph.builder import DumpRecords
from graphboard.graph.model import Graph
from graphboard.progress import Stopwatch
from graphboard.store import writer
from graphboard.store.sink import open_sink

if TYPE_CHECKING:
    from graphboard.distributed import CommNode


@contextmanager
def without_cycle_collection() -> Iterator[None]:
    """A task allocates millions of objects that live until it ends and frees none before:
    the cyclic collector would only traverse the growing heap again and again (see
    bench/results/compare.md). Tasks run in processes that do nothing else meanwhile (the
    command, the local runner's build process, a pool or Celery worker), so the pause
    touches no other work; the collector runs again as before once the task ends."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def run_task(
    task: Task,
    options: BuildOptions,
    part: Path,
    whole_file: bool = True,
    golden_records: Future[DumpRecords] | None = None,
) -> TaskResult:
    """Build (and compare) one (step, rank) into ``part``. ``whole_file``: the part becomes the
    .vis.db, so it gets msprobe's indexes (parts merged into one file are indexed there).
    ``golden_records``: the golden side's read stage, run elsewhere (build/run.py reads a lone
    compare's two sides in two processes), else this process reads it after the target."""
    started = time.perf_counter()
    clock = Stopwatch()
    with without_cycle_collection():
        target_side, golden_side = Side.target_of(task), Side.golden_of(task)
        golden: Graph | None = None
        if task.merge is not None:  # a merged replica: its ranks read and merged into one
            from graphboard.merge.stage import merged_sides

            target, golden = merged_sides(task.merge)
        else:
            target = stages.hierarchy(target_side, stages.read(target_side))
        clock.lap("read target")
        if golden_side is not None and task.merge is None:
            records = (
                stages.read(golden_side)
                if golden_records is None
                else _golden_read_aside(golden_records)
            )
            golden = stages.hierarchy(golden_side, records)
            clock.lap("read golden" if golden_records is None else "wait for and build golden")
        graphs = [target] if golden is None else [target, golden]
        if options.overflow_check:
            for graph in graphs:
                stages.overflow(graph)
            clock.lap("overflow")
        mode: DataMode | None = None
        match: dict[str, int] | None = None
        if golden is not None:
            matched = stages.match(target, golden, options)
            mode, match = matched.mode, matched.counts
            clock.lap("match")
            stages.score(target, golden, mode)
            clock.lap("score")
        comm_nodes = _write_part(part, whole_file, target, golden, mode, clock)
        result = TaskResult(
            task.step,
            task.rank,
            mode,
            max(graph.micro_steps for graph in graphs),
            match,
            [warning for graph in graphs for warning in graph.warnings],
            comm_nodes,
            0.0,
            clock.stages,
        )
        for graph in graphs:
            graph.release()
    result.seconds = time.perf_counter() - started
    return result


def _golden_read_aside(records: Future[DumpRecords]) -> DumpRecords:
    """The golden side's records, read by another process; the modules the later stages
    import when first needed are imported while it still reads, instead of after."""
    if not records.done():
        writer.load_summary_modules()
        import graphboard.distributed  # noqa: F401
    return records.result()


def _write_part(
    part: Path,
    whole_file: bool,
    target: Graph,
    golden: Graph | None,
    mode: DataMode | None,
    clock: Stopwatch,
) -> list[CommNode]:
    """The rows and sink stages, then the summaries; returns the task's communication ops."""
    pairs: list[tuple[Graph, Graph | None]] = [(target, golden)]
    if golden is not None:
        pairs.append((golden, target))
    sink = open_sink(part, indexed=whole_file)
    try:
        # in id order ("Bench_..." before "NPU_..."), as SQLite returns rows by primary key
        for graph, partner in sorted(pairs, key=lambda pair: pair[0].graph_id):
            stages.sink(sink, stages.rows(graph, partner, mode))
        clock.lap("rows")
        sink.finish_nodes()
        writer.write_summaries(sink, pairs)
        from graphboard.distributed import collect_comm_nodes  # imported when first needed

        comm_nodes = [node for graph, _ in pairs for node in collect_comm_nodes(graph)]
        sink.close()
    except BaseException:
        sink.abandon()
        raise
    clock.lap("summaries")
    return comm_nodes
