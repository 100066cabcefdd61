"""State shared by the pairing steps of one ``link_ranks`` call: which ranks were dumped, the
links found so far, the warnings, and the peers that are missing from the dump."""

from __future__ import annotations

from collections import defaultdict

from graphboard.distributed.model import Endpoint, Link
from graphboard.distributed.report import Warnings, ranks_text
from graphboard.distributed.verdicts import Verdict, unknown

StepKey = tuple[str, int]  # (side, step)


class PairingContext:
    def __init__(self, dumped: dict[StepKey, set[int]]) -> None:
        self.dumped = dumped
        self.links: list[Link] = []
        self.warnings = Warnings()
        # (side, step, missing rank) -> the (rank, node) calls that name it: one warning each
        self.orphaned: dict[tuple[str, int, int], list[tuple[int, str]]] = defaultdict(list)

    def in_dump(self, side: str, step: int, rank: int) -> bool:
        return rank in self.dumped.get((side, step), ())

    def unlinked(self, side: str, step: int, present: Endpoint, absent: int) -> Verdict:
        if not self.in_dump(side, step, absent):
            assert present.node is not None
            self.orphaned[(side, step, absent)].append((present.rank, present.node.name))
            return unknown(f"rank {absent} is not in the dump")
        return unknown(f"rank {absent} has no matching call")

    def warn_missing_ranks(self) -> None:
        """One warning per rank that calls name but the dump lacks."""
        for (side, step, missing), callers in self.orphaned.items():
            rank, name = callers[0]
            present = ranks_text(self.dumped.get((side, step), ()))
            self.warnings.add(
                "missing-rank",
                f"{side} step {step}: rank {missing} is not in the dump (ranks {present} are); "
                f"{len(callers)} communication op(s) have no peer there, e.g. {name} on rank {rank}",
            )
