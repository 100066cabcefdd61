"""One task, (step, rank): its stages in sequence, into a part file of its own.

The CLI, the server's local runner and Celery all run tasks through :func:`run_task`; only
where the task runs differs (in-process, or a pool worker: build/run.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING

from graphboard.allocation import keep_for_exit, without_cycle_collection
from graphboard.build import stages
from graphboard.build.options import BuildOptions, Task, TaskResult
from graphboard.build.stages import Side
from graphboard.compare.result import DataMode
from graphboard.dump.layout import RankDir
from graphboard.graph.builder import DumpRecords
from graphboard.graph.model import TARGET_SIDE, Graph
from graphboard.progress import Stopwatch
from graphboard.store import reference_table, writer
from graphboard.store.sink import open_sink

if TYPE_CHECKING:
    from graphboard.distributed import CommNode


def run_task(
    task: Task,
    options: BuildOptions,
    part: Path,
    whole_file: bool = True,
    read_aside: Mapping[RankDir, Future[DumpRecords]] | None = None,
) -> TaskResult:
    """Build (and compare) one (step, rank) into ``part``. ``whole_file``: the part becomes the
    .vis.db, so it gets msprobe's indexes (parts merged into one file are indexed there).
    ``read_aside``: the read stage of some of the task's rank folders, run by other processes
    (build/run.py: a lone compare's golden side, a merged replica's ranks); this process
    reads the others itself."""
    started = time.perf_counter()
    clock = Stopwatch()
    with without_cycle_collection():
        target_side, golden_side = Side.target_of(task), Side.golden_of(task)
        golden: Graph | None = None
        read = _reader(dict(read_aside or {}))
        if task.merge is not None:  # a merged replica: its ranks read and merged into one
            from graphboard.merge.stage import merged_sides

            target, golden = merged_sides(task.merge, read)
            clock.lap("wait for and merge ranks" if read_aside else "read and merge ranks")
        else:
            target = stages.hierarchy(target_side, read(target_side))
            clock.lap("read target")
            if golden_side is not None:
                aside = read_aside is not None and golden_side.dump in read_aside
                golden = stages.hierarchy(golden_side, read(golden_side))
                clock.lap("wait for and build golden" if aside else "read golden")
        noise = None
        if task.reference is not None and golden is not None:  # -nr: measured before matching
            reference_side = Side(task.reference, TARGET_SIDE, task.step, task.rank)
            reference = stages.hierarchy(reference_side, read(reference_side))
            noise = stages.measure_reference(reference, golden, options)
            reference.release()
            del reference
            clock.lap("read and measure reference")
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
            stages.score(target, golden, mode, noise)
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
        if not keep_for_exit(graphs):
            for graph in graphs:
                graph.release()
        # the graphs freed now, if not kept, while the collector is still paused: it would
        # traverse them all once on resuming
        del graphs, target, golden
    result.seconds = time.perf_counter() - started
    return result


def _reader(read_aside: dict[RankDir, Future[DumpRecords]]) -> Callable[[Side], DumpRecords]:
    """The read stage of a task some of whose folders other processes read: theirs waited for,
    the others read here. A future is let go once taken, so its records are freed with the
    task's graphs, while the collector is still paused, not left for it to traverse."""

    def read(side: Side) -> DumpRecords:
        future = read_aside.pop(side.dump, None)
        if future is None:
            return stages.read(side)
        if not future.done():
            # the modules later stages import when first needed, imported while waiting
            writer.load_summary_modules()
            import graphboard.distributed  # noqa: F401
        return future.result()

    return read


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
        # the target's rows before the golden's, as msprobe writes them
        for graph, partner in pairs:
            stages.sink(sink, stages.rows(graph, partner, mode))
        clock.lap("rows")
        sink.finish_nodes()
        writer.write_summaries(sink, pairs)
        reference_table.write(sink, target)  # -nr only
        from graphboard.distributed import collect_comm_nodes  # imported when first needed

        comm_nodes = [node for graph, _ in pairs for node in collect_comm_nodes(graph)]
        sink.close()
    except BaseException:
        sink.abandon()
        raise
    clock.lap("summaries")
    return comm_nodes
