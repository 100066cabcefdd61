"""What comparing one target node with its golden counterpart produces."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import NamedTuple

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
# A node's precision index falls in one band per level: [0, 0.3) pass, [0.3, 0.6) warning,
# [0.6, 1] error (msprobe's colour bands, which tb_config.node_colors spells out).
WARNING_FROM = 0.3
ERROR_FROM = 0.6
_LEVEL_OF_LABEL = {level.label: level for level in Level}


def level_of_precision(precision: float | None) -> Level | None:
    """A node's level from its precision index (None: not scored)."""
    if precision is None:
        return None
    if precision >= ERROR_FROM:
        return Level.ERROR
    if precision >= WARNING_FROM:
        return Level.WARNING
    return Level.PASS


def level_of_label(label: str) -> Level | None:
    """A parameter's level from its ``Result`` text ("pass", "Warning", ...), None if unknown."""
    return _LEVEL_OF_LABEL.get(label.lower())


def label_of_code(code: int | None) -> str | None:
    """The label of a stored level code (gb_arrays, the matching overlay); None for -1 / NULL."""
    return None if code is None or code < 0 else Level(code).label


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

    target: Param | None
    golden: Param | None
    metrics: dict[str, Metric] = field(default_factory=dict)
    level: Level = Level.PASS
    # a list once there is a message; nearly no row has one, and a million-record compare
    # would hold a list per row for nothing
    messages: Sequence[str] = ()
    requires_grad_consistent: bool = True
    paired_by: str = "name"  # "name", or "position" where the names could not agree

    @property
    def is_output(self) -> bool:
        param = self.target or self.golden
        return param is not None and param.role is Role.OUTPUT

    def raise_to(self, level: Level, message: str | None = None) -> None:
        if level > self.level:
            self.level = level
        if message and message not in self.messages:
            self.messages = [*self.messages, message]


@dataclass(slots=True)
class NodeComparison:
    rows: list[ParamRow]
    level: Level | None  # None when the node has no rows to score
    extra_target: list[str] = field(
        default_factory=list
    )  # target parameters with no golden counterpart
    extra_golden: list[str] = field(default_factory=list)
    # The level of a divergence that starts here, or None (``starts_here``).
    introduced_level: Level | None = field(init=False)

    def __post_init__(self) -> None:
        self.introduced_level = starts_here(self.rows, self.level)

    @property
    def precision_index(self) -> float | None:
        return None if self.level is None else PRECISION_INDEX[self.level]


class ScoredParam(NamedTuple):
    """What "a divergence starts here" reads of one scored parameter of the target."""

    is_input: bool  # what the node received: inputs, parameters and their gradients
    is_tensor: bool
    level: Level


def divergence_level(level: Level | None, params: Iterable[ScoredParam]) -> Level | None:
    """The level of a divergence that starts at a node of ``level``, or None.

    It starts here when every input tensor agrees (passes) and yet the node is flagged, by an
    output or by an argument that differs (e.g. GELU's ``approximate``). A node without
    scored parameters of its own (an API collection borrowing its children's index) starts
    nothing. Only the target's parameters are read: they are all a stored node shows, so the
    builder, msprobe's files and a manual pairing judge from the same evidence.
    """
    if level is None or level is Level.PASS:
        return None
    scored = False
    for param in params:
        if param.is_input and param.is_tensor and param.level is not Level.PASS:
            return None
        scored = True
    return level if scored else None


def scored_params(rows: Iterable[ParamRow]) -> Iterator[ScoredParam]:
    """The rule's view of a comparison's rows: those whose target parameter is shown scored
    (not a golden-only row, not a masked leaf)."""
    for row in rows:
        if row.target is not None and not row.target.is_null:
            yield ScoredParam(row.target.role is not Role.OUTPUT, row.target.is_tensor, row.level)


def starts_here(rows: list[ParamRow], level: Level | None) -> Level | None:
    """:func:`divergence_level` of a node scored into ``rows``."""
    return divergence_level(level, scored_params(rows))
