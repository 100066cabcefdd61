"""Planning a merged build or compare: the flags checked against the rank folders found, and
the data-parallel replicas of each step paired across the sides, before any dump is read.

Beyond msprobe: a compare whose sides have different data-parallel counts compares replica i
with replica i for the replicas both have and names the others in a warning (msprobe raises).
"""

from __future__ import annotations

from dataclasses import dataclass

from graphboard.dump.layout import DumpLayout, LayoutKind, RankDir
from graphboard.merge.flags import ParallelFlags, ParallelFlagsError, ParallelOptions
from graphboard.merge.layout import Replica, Strategy, generated_replicas, strategy_of


@dataclass(frozen=True, slots=True)
class ReplicaTask:
    """One merged graph to build: a step's replica on the target side, and its golden
    counterpart in a compare. Its rank id is the target replica's main rank."""

    step: int
    target: Replica
    target_ranks: dict[int, RankDir]
    golden: Replica | None = None
    golden_ranks: dict[int, RankDir] | None = None
    options: ParallelOptions | None = None  # both sides' flags (set by plan_merge)

    @property
    def rank(self) -> int:
        return self.target.main_rank

    def rank_folders(self) -> list[RankDir]:
        """Every rank folder of the task, in the order the merge stage reads them."""
        folders = [self.target_ranks[rank] for rank in self.target.ranks]
        if self.golden is not None and self.golden_ranks is not None:
            folders += [self.golden_ranks[rank] for rank in self.golden.ranks]
        return folders


@dataclass(frozen=True, slots=True)
class MergePlan:
    options: ParallelOptions
    strategies: tuple[Strategy, Strategy | None]
    tasks: list[ReplicaTask]


def _step_ranks(
    layout: DumpLayout, flags: ParallelFlags, side: str
) -> dict[int, dict[int, RankDir]]:
    """Each step's rank folders, which must be exactly rank0 .. rank<rank_size - 1>."""
    if layout.kind is LayoutKind.RANK:
        raise ParallelFlagsError(
            f"{layout.root}: --rank_size {flags.rank_size} merges the rank folders of a dump, but "
            f"this is one rank's folder; give the {side} dump's root or step folder"
        )
    steps: dict[int, dict[int, RankDir]] = {}
    for item in layout.ranks:
        steps.setdefault(item.step, {})[item.rank] = item
    for step, ranks in sorted(steps.items()):
        # distinct ints, as many as rank_size, from 0 to rank_size - 1: exactly 0..rank_size-1.
        # Never a list of rank_size numbers: a mistyped --rank_size 400000000 must fail here,
        # not after allocating gigabytes.
        if len(ranks) != flags.rank_size or min(ranks) != 0 or max(ranks) != flags.rank_size - 1:
            found = ", ".join(f"rank{rank}" for rank in sorted(ranks))
            raise ParallelFlagsError(
                f"{layout.root}: step {step} of the {side} dump holds {len(ranks)} rank folder(s) "
                f"({found}) but --rank_size {flags.rank_size} expects rank0..rank{flags.rank_size - 1}"
            )
    return steps


def _unpaired_warning(
    flags: tuple[ParallelFlags, ParallelFlags], sides: tuple[list[Replica], list[Replica]]
) -> str | None:
    target, golden = sides
    common = min(len(target), len(golden))
    if len(target) == len(golden):
        return None
    longer, name = (target, "target") if len(target) > len(golden) else (golden, "golden")
    rest = ", ".join(
        f"{replica.index} (main rank {replica.main_rank})" for replica in longer[common:]
    )
    return (
        f"the target has {flags[0].dp} data-parallel replica(s) ({flags[0].describe()}) and the "
        f"golden {flags[1].dp} ({flags[1].describe()}): replicas 0..{common - 1} are compared "
        f"pairwise; {name} replica(s) {rest} have no counterpart and are not compared"
    )


def plan_merge(
    options: ParallelOptions,
    target: DumpLayout,
    golden: DumpLayout | None,
    warnings: list[str],
) -> MergePlan:
    """The replica tasks of every step, checked against the folders; raise on any misfit."""
    target_steps = _step_ranks(target, options.target, "target")
    target_replicas = generated_replicas(options.target)
    strategies = (strategy_of(options.target), None)
    if golden is None or options.golden is None:
        tasks = [
            ReplicaTask(
                step, replica, {rank: ranks[rank] for rank in replica.ranks}, options=options
            )
            for step, ranks in sorted(target_steps.items())
            for replica in target_replicas
        ]
        return MergePlan(options, strategies, tasks)
    golden_steps = _step_ranks(golden, options.golden, "golden")
    golden_replicas = generated_replicas(options.golden)
    unpaired = _unpaired_warning(
        (options.target, options.golden), (target_replicas, golden_replicas)
    )
    if unpaired:
        warnings.append(unpaired)
    steps = sorted(target_steps.keys() & golden_steps.keys())
    if not steps:
        raise ParallelFlagsError(
            f"the target {target.root} (steps {sorted(target_steps)}) and the golden "
            f"{golden.root} (steps {sorted(golden_steps)}) share no step to compare"
        )
    for side, only in (
        ("target", sorted(target_steps.keys() - golden_steps.keys())),
        ("golden", sorted(golden_steps.keys() - target_steps.keys())),
    ):
        if only:
            warnings.append(f"steps {only} are only in the {side} dump and are not compared")
    tasks = [
        ReplicaTask(
            step,
            target_replica,
            {rank: target_steps[step][rank] for rank in target_replica.ranks},
            golden_replica,
            {rank: golden_steps[step][rank] for rank in golden_replica.ranks},
            options,
        )
        for step in steps
        for target_replica, golden_replica in zip(target_replicas, golden_replicas, strict=False)
    ]
    return MergePlan(options, (strategies[0], strategy_of(options.golden)), tasks)
