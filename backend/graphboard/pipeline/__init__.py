"""The build core: sides x steps x ranks -> one complete .vis.db, or none.

One sequence of stages, the same for the command line, the server's local runner and Celery:
:func:`plan_build` (validate and pair the folders into tasks), then for each task
:func:`run_task` (read, hierarchy, overflow, match, score, write the part, communication ops:
pipeline/stages.py) into a part file of its own, then :func:`finish_build` (merge, link ranks,
index, rename). :func:`run_build` is the three in one call, run by the executor it is given
(graphboard/executor.py). A failure anywhere removes every temporary file.

The package holds what a caller needs to start a build; the stages' modules (pipeline/task.py,
pipeline/finish.py: compare, store, distributed) are imported where a build reaches them
(pipeline/run.py says why).
"""

from __future__ import annotations

from graphboard.pipeline.options import BuildOptions, BuildResult, Task, TaskResult
from graphboard.pipeline.plan import BuildPlan, plan_build
from graphboard.pipeline.run import run_build, run_part

__all__ = [
    "BuildOptions",
    "BuildPlan",
    "BuildResult",
    "Task",
    "TaskResult",
    "plan_build",
    "run_build",
    "run_part",
]
