"""What the user asks the probe to record: the dump level and task, checked once up front."""

from __future__ import annotations

from enum import StrEnum

from graphboard.errors import GraphboardError


class ProbeError(GraphboardError):
    """The probe was configured or driven wrongly (bad level, nested start, ...)."""


class Level(StrEnum):
    """msprobe's dump levels."""

    L0 = "L0"  # modules only
    L1 = "L1"  # APIs only; construct.json stays {}
    MIX = "mix"  # modules and APIs, APIs nested under the module that called them

    @property
    def records_modules(self) -> bool:
        return self is not Level.L1

    @property
    def records_apis(self) -> bool:
        return self is not Level.L0


class Task(StrEnum):
    STATISTICS = "statistics"  # Max, Min, Mean, Norm per tensor
    MD5 = "md5"  # statistics plus a CRC-32 per tensor
    TENSOR = "tensor"  # statistics plus every tensor saved as a .pt file

    @property
    def header_task(self) -> str:
        """The ``task`` dump.json declares: msprobe writes md5 dumps as ``statistics``."""
        return Task.STATISTICS.value if self is Task.MD5 else self.value


def parse_level(value: str | Level) -> Level:
    try:
        return Level(value)
    except ValueError:
        allowed = ", ".join(level.value for level in Level)
        raise ProbeError(f"unknown dump level {value!r}; expected one of {allowed}") from None


def parse_task(value: str | Task) -> Task:
    try:
        return Task(value)
    except ValueError:
        allowed = ", ".join(task.value for task in Task)
        raise ProbeError(f"unknown dump task {value!r}; expected one of {allowed}") from None
