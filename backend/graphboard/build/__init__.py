"""The build core: sides x steps x ranks -> one complete .vis.db, or none.

One sequence of stages, the same for the command line, the server's local runner and Celery:
:func:`plan_build` (validate and pair the folders into tasks), then for each task
:func:`run_task` (read, hierarchy, overflow, match, score, rows, sink: build/stages.py) into
a part file of its own, then :func:`finish_build` (merge, link ranks, index, rename).
:func:`run_build` is the three in one call. A failure anywhere removes every temporary file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from graphboard.build.options import BuildOptions, BuildResult, Task, TaskResult
from graphboard.build.plan import BuildPlan, plan_build
from graphboard.build.run import run_build

if TYPE_CHECKING:
    from graphboard.build.finish import SCHEMA_NAME, finish_build
    from graphboard.build.task import run_task


def __getattr__(name: str) -> Any:
    """The stages' modules (compare, store: a tenth of a second) are imported when a task
    first needs them, not with the package: a compare's golden side is read aside meanwhile
    (build/run.py)."""
    if name in ("SCHEMA_NAME", "finish_build"):
        from graphboard.build import finish

        return getattr(finish, name)
    if name == "run_task":
        from graphboard.build.task import run_task

        return run_task
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "SCHEMA_NAME",
    "BuildOptions",
    "BuildPlan",
    "BuildResult",
    "Task",
    "TaskResult",
    "finish_build",
    "plan_build",
    "run_build",
    "run_task",
]
