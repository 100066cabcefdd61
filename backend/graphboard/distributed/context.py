"""State shared by the pairing steps of one ``link_ranks`` call: which ranks were dumped, the
links and group calls found so far, the warnings, and the peers missing from the dump."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from graphboard.distributed.model import Endpoint, Link
from graphboard.distributed.report import Warnings, ranks_text
from graphboard.distributed.verdicts import Verdict, unknown

if TYPE_CHECKING:
    from graphboard.distributed.calls import Call
    from graphboard.distributed.group_call import GroupCall

StepKey = tuple[str, int]  # (side, step)


class PairingContext:
    def __init__(self, dumped: dict[StepKey, set[int]]) -> None:
        self.dumped = dumped
        self.links: list[Link] = []  # point-to-point, batch and rooted collective links
        self.group_calls: list[GroupCall] = []  # every collective call, gb_comm_calls.id - 1
        self.warnings = Warnings()
        # (side, step, missing rank) -> [how many ops name it, (rank, node) of the first]:
        # one warning each, however many ops name it
        self.orphaned: dict[tuple[str, int, int], tuple[int, tuple[int, str]]] = {}

    def in_dump(self, side: str, step: int, rank: int) -> bool:
        return rank in self.dumped.get((side, step), ())

    def _orphan(self, side: str, step: int, absent: int, callers: int, first: Endpoint) -> None:
        key = (side, step, absent)
        known = self.orphaned.get(key)
        if known is None:
            assert first.node is not None
            self.orphaned[key] = (callers, (first.rank, first.node.name))
        else:
            self.orphaned[key] = (known[0] + callers, known[1])

    def absence(self, side: str, step: int, absent: int) -> str:
        """Why a call has no counterpart on rank ``absent``."""
        if not self.in_dump(side, step, absent):
            return f"rank {absent} is not in the dump"
        return f"rank {absent} has no matching call"

    def unlinked(self, side: str, step: int, present: Endpoint, absent: int) -> Verdict:
        if not self.in_dump(side, step, absent):
            self._orphan(side, step, absent, 1, present)
        return unknown(self.absence(side, step, absent))

    def unlinked_group(
        self,
        side: str,
        step: int,
        calls: Mapping[int, Call],
        present: Sequence[int],
        absent: int,
    ) -> str:
        """Why every present member of a many↔many call lacks its link to ``absent``."""
        if not self.in_dump(side, step, absent):
            self._orphan(side, step, absent, len(present), calls[present[0]].endpoint)
        return self.absence(side, step, absent)

    def warn_missing_ranks(self) -> None:
        """One warning per rank that calls name but the dump lacks."""
        for (side, step, missing), (count, (rank, name)) in self.orphaned.items():
            present = ranks_text(self.dumped.get((side, step), ()))
            self.warnings.add(
                "missing-rank",
                f"{side} step {step}: rank {missing} is not in the dump (ranks {present} are); "
                f"{count} communication op(s) have no peer there, e.g. {name} on rank {rank}",
            )
