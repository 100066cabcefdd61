"""The build core: sides x steps x ranks -> one complete .vis.db, or none.

One sequence of stages, the same for the command line, the server's local runner and Celery:
:func:`plan_build` (validate and pair the folders into tasks), then for each task
:func:`run_task` (read, hierarchy, overflow, match, score, write the part, communication ops:
build/stages.py) into a part file of its own, then :func:`finish_build` (merge, link ranks,
index, rename). :func:`run_build` is the three in one call, run by the executor it is given
(graphboard/executor.py). A failure anywhere removes every temporary file.
"""

from __future__ import annotations

from graphboard.build.finish import SCHEMA_NAME, finish_build
from graphboard.build.options import BuildOptions, BuildResult, Task, TaskResult
from graphboard.build.plan import BuildPlan, plan_build
from graphboard.build.run import run_build, run_part
from graphboard.build.task import run_task

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
    "run_part",
    "run_task",
]
