"""Planning: find the dumps' step and rank folders and pair them into tasks, before any work.

Planning reads only folder listings (and the layer-mapping file), so it is cheap, gives the
same tasks in any process (a Celery task repeats it), and is how the service validates a dump
before queueing it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from graphboard.compare.layer_mapping import LayerMapping
from graphboard.dump.layout import DumpLayout, LayoutKind, discover
from graphboard.errors import CompareError
from graphboard.merge.plan import MergePlan, plan_merge
from graphboard.pipeline.options import BuildOptions, Task
from graphboard.pipeline.output import check_output_name
from graphboard.pipeline.reference import attach_references


@dataclass(slots=True)
class BuildPlan:
    """What a build will do: the (step, rank) tasks, in order, and what planning noticed."""

    options: BuildOptions
    tasks: list[Task]
    warnings: list[str]
    missing: dict[str, Any]
    started_at: datetime = field(default_factory=datetime.now)
    started: float = field(default_factory=time.perf_counter)

    @property
    def name(self) -> str:
        if self.options.output_name:
            return self.options.output_name
        kind = "compare" if self.options.compare else "build"
        return f"{kind}_{self.started_at.strftime('%Y%m%d%H%M%S')}.vis.db"


def plan_build(options: BuildOptions) -> BuildPlan:
    """Find and pair the dumps' step and rank folders; raise on anything that cannot build."""
    if options.output_name is not None:
        check_output_name(options.output_name)
    warnings: list[str] = []
    missing: dict[str, Any] = {}
    started_at = datetime.now()
    target_layout = discover(options.target)
    golden_layout = discover(options.golden) if options.golden is not None else None
    warnings.extend(target_layout.warnings)
    if golden_layout is not None:
        warnings.extend(golden_layout.warnings)
    if options.parallel is not None:  # one task per merged replica (merge/plan.py)
        merged = plan_merge(options.parallel, target_layout, golden_layout, warnings)
        tasks = merged_tasks(merged)
    else:
        tasks = pair_tasks(target_layout, golden_layout, warnings, missing)
    if options.noise_reference is not None:
        attach_references(options, tasks, warnings, missing)
    if isinstance(options.layer_mapping, Path):
        LayerMapping.load(options.layer_mapping)  # fail before any work on a bad mapping file
    return BuildPlan(options, tasks, warnings, missing, started_at)


def merged_tasks(plan: MergePlan) -> list[Task]:
    """The tasks of a merged build: one per step and (target) replica, keyed by the replicas'
    main ranks, whose folders stand for the task where one folder is asked for."""
    return [
        Task(
            task.step,
            task.rank,
            task.target_ranks[task.rank],
            None
            if task.golden is None or task.golden_ranks is None
            else task.golden_ranks[task.golden.main_rank],
            merge=task,
        )
        for task in plan.tasks
    ]


def pair_tasks(
    target: DumpLayout, golden: DumpLayout | None, warnings: list[str], missing: dict[str, Any]
) -> list[Task]:
    """The tasks of a build (one per target rank folder) or of a compare (one per (step, rank)
    present on both sides; what one side lacks is recorded in ``missing`` and warned of)."""
    if golden is None:
        return [Task(item.step, item.rank, item, None) for item in target.ranks]
    if target.kind is not golden.kind:
        raise CompareError(
            f"the target {target.root} is a {target.kind.value} folder but the golden {golden.root} is a "
            f"{golden.kind.value} folder; point both at the same level (rank folder, step folder or dump root)"
        )
    if target.kind is LayoutKind.RANK:
        return [Task(target.ranks[0].step, target.ranks[0].rank, target.ranks[0], golden.ranks[0])]
    steps = _paired_steps(target, golden, warnings, missing)
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


def _paired_steps(
    target: DumpLayout, golden: DumpLayout, warnings: list[str], missing: dict[str, Any]
) -> list[int]:
    if target.kind is not LayoutKind.STEPS:
        return [target.steps[0]]
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
    return steps
