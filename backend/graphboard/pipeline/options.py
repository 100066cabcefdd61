"""What a build is asked to do and what it gives back: the types every stage passes on."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from graphboard.compare.matching import MatchMode
from graphboard.compare.result import DataMode
from graphboard.dump.layout import RankDir
from graphboard.merge.flags import ParallelOptions
from graphboard.merge.plan import ReplicaTask

if TYPE_CHECKING:  # a type only: the module is imported with the stages (pipeline/run.py)
    from graphboard.distributed import CommNode


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
    parallel: ParallelOptions | None = None  # --rank_size/--tp/--pp...: merge ranks (merge/)
    # -nr: the golden configuration run in the target's precision and kernels, whose measured
    # noise judges the target (compare/noise_reference.py)
    noise_reference: Path | None = None
    command: list[str] = field(default_factory=list)

    @property
    def compare(self) -> bool:
        return self.golden is not None

    @property
    def match_mode(self) -> MatchMode:
        if self.layer_mapping:
            return MatchMode.LAYER_MAPPING
        if self.fuzzy_match or (self.parallel is not None and self.compare):
            return MatchMode.FUZZY  # forced for a merged compare, as msprobe
        return MatchMode.DEFAULT


@dataclass(slots=True)
class Task:
    """One (step, rank): its target rank folder and, in a compare, the golden one."""

    step: int
    rank: int
    target: RankDir
    golden: RankDir | None
    merge: ReplicaTask | None = None  # a merged replica: its ranks are read and merged (merge/)
    reference: RankDir | None = None  # the noise reference's rank folder (-nr), if it has one


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
