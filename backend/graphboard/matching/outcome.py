"""What one (un)match action did, and why a pair was refused."""

from __future__ import annotations

from dataclasses import dataclass, field

from graphboard.refusals import Conflict, NotFound, Refusal


class MatchFailure(Exception):
    """Why one pair cannot be (un)matched: a top-level failure refuses the request (an HTTP
    error, a command's error), a twin's or descendant's is reported as skipped."""

    def __init__(self, code: str, message: str, *, status: int = 409) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status

    def as_refusal(self) -> Refusal:
        if self.status == 404:
            return NotFound(self.message, code=self.code)
        return Conflict(self.message, code=self.code)


@dataclass(slots=True)
class ScoredPair:
    target: str
    golden: str
    precision_index: float | None
    level: int | None  # 0 pass, 1 warning, 2 error; None when not scored (or unpaired)


@dataclass(slots=True)
class Skipped:
    target: str
    golden: str | None
    code: str
    reason: str


@dataclass(slots=True)
class Outcome:
    action_id: int | None
    pairs: list[ScoredPair] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
