"""One task, (step, rank): its stages (pipeline/stages.py) in sequence, into a part file of its own.

The CLI, the server's local runner and Celery all run tasks through :func:`run_task`; only
the executor that runs it differs (graphboard/executor.py: in this process, or a pool
worker), which also frees or keeps the graphs the task hands back.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from graphboard.compare.result import DataMode
from graphboard.dump.layout import RankDir
from graphboard.executor import Output
from graphboard.graph.builder import DumpRecords
from graphboard.graph.model import TARGET_SIDE, Graph
from graphboard.merge.stage import merged_sides
from graphboard.pipeline import stages
from graphboard.pipeline.options import BuildOptions, Task, TaskResult
from graphboard.pipeline.stages import TaskSide
from graphboard.progress import Stopwatch

Reader = Callable[[RankDir], DumpRecords]


def run_task(
    task: Task,
    options: BuildOptions,
    part: Path,
    whole_file: bool = True,
    read: Reader = stages.read,
    read_aside: bool = False,
) -> Output[TaskResult]:
    """Build (and compare) one (step, rank) into ``part``; returns its result, and the graphs
    it built for the executor to let go. ``whole_file``: the part becomes the .vis.db, so it
    gets msprobe's indexes (parts merged into one file are indexed there). ``read``: the read
    stage, or one that takes what other processes have read (``read_aside``: pipeline/run.py),
    the timings then saying they waited for it."""
    started = time.perf_counter()
    clock = Stopwatch()
    target_side, golden_side = TaskSide.target_of(task), TaskSide.golden_of(task)
    golden: Graph | None = None
    if task.merge is not None:  # a merged replica: its ranks read and merged into one
        target, golden = merged_sides(task.merge, read)
        clock.lap("wait for and merge ranks" if read_aside else "read and merge ranks")
    else:
        target = stages.hierarchy(target_side, read(target_side.dump))
        clock.lap("read target")
        if golden_side is not None:
            golden = stages.hierarchy(golden_side, read(golden_side.dump))
            clock.lap("wait for and build golden" if read_aside else "read golden")
    noise = None
    if task.reference is not None and golden is not None:  # -nr: measured before matching
        reference_side = TaskSide(task.reference, TARGET_SIDE, task.step, task.rank)
        reference = stages.hierarchy(reference_side, read(reference_side.dump))
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
        # the rule columns and the -nr table are written from the graph's verdicts
        target.rule_verdicts = stages.score(target, golden, mode, noise)
        clock.lap("score")
    pairs: list[tuple[Graph, Graph | None]] = [(target, golden)]
    if golden is not None:
        pairs.append((golden, target))
    stages.write_part(part, whole_file, pairs, mode)
    clock.lap("write part")
    comm_nodes = stages.communication(graphs)
    result = TaskResult(
        task.step,
        task.rank,
        mode,
        max(graph.micro_steps for graph in graphs),
        match,
        [warning for graph in graphs for warning in graph.warnings],
        comm_nodes,
        time.perf_counter() - started,
        clock.stages,
    )
    return Output(result, graphs)
