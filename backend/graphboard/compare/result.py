"""What comparing one target node with its golden counterpart produces."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum, StrEnum

from graphboard.dump.records import Param, Role


class Level(IntEnum):
    PASS = 0
    WARNING = 1
    ERROR = 2

    @property
    def label(self) -> str:
        return self.name.lower()

    @property
    def precision_index(self) -> float:
        return PRECISION_INDEX[self]


PRECISION_INDEX = {Level.PASS: 0, Level.WARNING: 0.5, Level.ERROR: 1}


class DataMode(StrEnum):
    """What the dumps hold; the values are msprobe's ``tb_config.task`` strings."""

    SUMMARY = "summary"  # statistics
    MD5 = "md5"
    TENSOR = "all"  # whole tensors
    STRUCTURE = "structure"  # names only: match, never score


Metric = float | str  # a number, or a marker such as "N/A", "Nan", "unsupported", "shape unmatched"


@dataclass(slots=True)
class ParamRow:
    """One target parameter and its golden counterpart (either may be missing)."""

    npu: Param | None
    bench: Param | None
    metrics: dict[str, Metric] = field(default_factory=dict)
    level: Level = Level.PASS
    messages: list[str] = field(default_factory=list)
    requires_grad_consistent: bool = True
    paired_by: str = "name"  # "name", or "position" where the names could not agree

    @property
    def is_output(self) -> bool:
        param = self.npu or self.bench
        return param is not None and param.role is Role.OUTPUT

    def raise_to(self, level: Level, message: str | None = None) -> None:
        if level > self.level:
            self.level = level
        if message and message not in self.messages:
            self.messages.append(message)


@dataclass(slots=True)
class NodeComparison:
    rows: list[ParamRow]
    level: Level | None  # None when the node has no rows to score
    extra_npu: list[str] = field(default_factory=list)  # target parameters with no golden twin
    extra_bench: list[str] = field(default_factory=list)
    # The level of a divergence that starts here, or None: derived from the rows when there
    # are rows (``starts_here``). Given only for an outcome without its rows, as a process
    # receives it from the helper that scored the node (pipeline.py).
    introduced_level: Level | None = None

    def __post_init__(self) -> None:
        if self.rows:
            self.introduced_level = starts_here(self.rows, self.level)

    @property
    def precision_index(self) -> float | None:
        return None if self.level is None else PRECISION_INDEX[self.level]


def starts_here(rows: list[ParamRow], level: Level | None) -> Level | None:
    """The level of a divergence that starts at this node, or None.

    It starts here when every input tensor agrees (passes) and yet the node is flagged, by an
    output or by an argument that differs (e.g. GELU's ``approximate``).
    """
    if level is None or level is Level.PASS:
        return None
    for row in rows:
        param = row.npu or row.bench
        if (
            not row.is_output
            and param is not None
            and param.is_tensor
            and row.level is not Level.PASS
        ):
            return None
    return level
