"""One collective call of a process group as the linker records it (a gb_comm_calls row):
made by collectives.py, kept by the pairing context, written by tables.py."""

from __future__ import annotations

from dataclasses import dataclass, field

from graphboard.distributed.apis import Family
from graphboard.distributed.call_verdicts import Pair
from graphboard.distributed.collective_checks import Instance
from graphboard.distributed.verdicts import Verdict


@dataclass(slots=True)
class GroupCall:
    """One collective call of a group (a gb_comm_calls row). A rooted call's links are
    ordinary ``Link``s; a many↔many call keeps its pairs as a default verdict and exceptions."""

    id: int  # gb_comm_calls.id, from 1
    instance: Instance
    family: Family
    present: tuple[int, ...]  # members whose call was found, in member order
    absent: dict[int, str]  # member -> why it has no call, in member order
    verdict: Verdict  # worst over the call's links
    default: Verdict | None = None  # many↔many: every pair's verdict but the exceptions'
    exceptions: dict[Pair, Verdict] = field(default_factory=dict)

    @property
    def pairs(self) -> int:
        """How many pairs of present members it links (many↔many)."""
        return len(self.present) * (len(self.present) - 1) // 2
