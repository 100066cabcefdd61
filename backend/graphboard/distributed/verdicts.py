"""Verdicts on the data of a link: consistent, mismatch (with the reason), or unknown (why)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum


class Consistency(StrEnum):
    """A StrEnum: a status is the very text the tables store, bound and counted as it is."""

    CONSISTENT = "consistent"
    MISMATCH = "mismatch"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Verdict:
    status: Consistency
    reason: str | None = None


CONSISTENT = Verdict(Consistency.CONSISTENT)
# Members as module names: ``Consistency.MISMATCH`` is a class attribute lookup that costs
# more than the comparison in loops run once per link.
MISMATCH_STATUS = Consistency.MISMATCH
CONSISTENT_STATUS = Consistency.CONSISTENT
# A status as a plain str, for rows: sqlite3 binds a str subclass through its adapter lookup,
# which costs twice the insert of the row itself.
STATUS_TEXT: dict[Consistency, str] = {status: status.value for status in Consistency}


def unknown(reason: str) -> Verdict:
    return Verdict(Consistency.UNKNOWN, reason)


def mismatch(reason: str) -> Verdict:
    return Verdict(Consistency.MISMATCH, reason)


def combine(verdicts: Iterable[Verdict]) -> Verdict:
    """Any mismatch wins; otherwise consistent if anything at all could be checked."""
    consistent: Verdict | None = None
    unchecked: Verdict | None = None
    for verdict in verdicts:
        if verdict.status is MISMATCH_STATUS:
            return verdict
        if verdict.status is CONSISTENT_STATUS:
            consistent = consistent or verdict
        else:
            unchecked = unchecked or verdict
    return consistent or unchecked or unknown("nothing to check")
