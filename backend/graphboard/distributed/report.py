"""Warnings (capped per kind) and rank lists written so that 1,000 ranks stay readable."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

MAX_WARNINGS_PER_KIND = 20


def ranks_text(ranks: Iterable[int]) -> str:
    """``[0, 1, 2, 5, 7, 8]`` -> ``0-2, 5, 7-8``: groups of 1,000 ranks stay readable."""
    spans: list[list[int]] = []
    for rank in sorted(set(ranks)):
        if spans and rank == spans[-1][1] + 1:
            spans[-1][1] = rank
        else:
            spans.append([rank, rank])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


class Warnings:
    """Warnings by kind, capped so a badly broken 1,000-rank run cannot bury the meta table."""

    def __init__(self) -> None:
        self.by_kind: dict[str, list[str]] = defaultdict(list)
        self.dropped: Counter[str] = Counter()

    def add(self, kind: str, message: str) -> None:
        if len(self.by_kind[kind]) < MAX_WARNINGS_PER_KIND:
            self.by_kind[kind].append(message)
        else:
            self.dropped[kind] += 1

    def all(self) -> list[str]:
        out = [message for messages in self.by_kind.values() for message in messages]
        out.extend(
            f"... and {count} more {kind} warning(s)" for kind, count in self.dropped.items()
        )
        return out
