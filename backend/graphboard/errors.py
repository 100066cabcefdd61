"""Errors a user can act on: each names the file, the record and what was expected."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any


class GraphboardError(Exception):
    """Base class; ``str(error)`` is a one-line message fit for a terminal or an HTTP body."""


class DumpError(GraphboardError):
    """A dump file or folder that cannot be read as msprobe writes it."""

    def __init__(
        self,
        path: str | Path,
        problem: str,
        *,
        record: str | None = None,
        expected: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.path = str(path)
        self.problem = problem
        self.record = record
        self.expected = expected
        self.hint = hint
        parts = [self.path]
        if record is not None:
            parts.append(f"record {record!r}")
        message = ": ".join(parts) + f": {problem}"
        if expected:
            message += f"; expected {expected}"
        if hint:
            message += f" ({hint})"
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        # Raised in a worker process and pickled back to the parent: rebuild it from its
        # parts (the default would call __init__ with the message alone and fail there).
        rebuild = functools.partial(
            type(self), record=self.record, expected=self.expected, hint=self.hint
        )
        return rebuild, (self.path, self.problem)


class LayoutError(DumpError):
    """A -tp/-gp folder whose shape is none of rank folder, rankN folders or stepN folders."""


class CompareError(GraphboardError):
    """Target and golden cannot be compared (different data modes, no common rank...)."""


class StoreError(GraphboardError):
    """A .vis.db that cannot be written or read."""
