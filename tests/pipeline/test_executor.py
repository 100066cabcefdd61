"""graphboard.executor: work runs with the cyclic collector paused wherever it runs (here, in a
pool worker, reading aside) and leaves it as it was; a process that ends with its build keeps
the task's graphs for the exit (frozen, out of the collector's sight) instead of freeing them."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

import pytest

from fixture_cases import fixture_path
from graphboard.executor import Executor, Output


class _Held:
    def __init__(self) -> None:
        self.released = False

    def release(self) -> None:
        self.released = True


def _collector_state(item: int) -> tuple[int, bool]:
    """A worker's work: its item, and whether the collector ran while it worked."""
    return item, gc.isenabled()


def _work(item: int) -> Output[tuple[int, bool]]:
    return Output(_collector_state(item))


@pytest.mark.parametrize("enabled", [True, False], ids=["collector on", "collector off"])
def test_work_here_pauses_the_collector_and_leaves_it_as_it_was(enabled: bool) -> None:
    was_enabled = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    held = _Held()
    try:
        assert Executor().run(lambda: Output(gc.isenabled(), [held])) is False
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was_enabled else gc.disable)()
    assert held.released  # freed at once: this process goes on


def test_work_on_other_processes_pauses_their_collector() -> None:
    """A pool worker and a worker reading aside run one call each, outside any task: the
    pause must be the executor's there too."""
    executor = Executor()
    done: list[int] = []
    results = executor.run_each(
        _work,
        [(1,), (2,)],
        workers=2,
        label=str,
        done=lambda count, _result: done.append(count),
    )
    assert results == [(1, False), (2, False)] and done == [1, 2]
    with executor.reading_aside(_collector_state, [3, 4], workers=2) as futures:
        assert [futures[item].result() for item in (3, 4)] == [(3, False), (4, False)]


def test_an_executor_that_starts_no_process_runs_the_work_here() -> None:
    pids = Executor(processes=False).run_each(
        lambda: Output(__import__("os").getpid()),
        [(), ()],
        workers=2,
        label=str,
        done=lambda _count, _result: None,
    )
    assert pids == [__import__("os").getpid()] * 2


_TASK_IN_A_FRESH_PROCESS = """
import gc, json, sys
from pathlib import Path
from graphboard.pipeline import BuildOptions, plan_build
from graphboard.pipeline.task import run_task
from graphboard.executor import Executor
from graphboard.graph.model import Graph
executor = Executor(ends_process=sys.argv[1] == "ends")
root, out = Path(sys.argv[2]), Path(sys.argv[3])
options = BuildOptions(target=root / "target", golden=root / "golden", output_dir=out)
executor.run(run_task, plan_build(options).tasks[0], options, out / "part0.db")
gc.collect()
kept = [graph for work in executor.kept for graph in work]
alive = kept + [o for o in gc.get_objects() if isinstance(o, Graph)]  # frozen ones not listed
print(json.dumps({
    "kept": len(executor.kept),
    "alive": len(alive),
    "frozen": gc.get_freeze_count() > 0,
    "whole": all(node.parent is not None for g in alive for node in g.nodes.values()
                 if node is not g.root),
}))
"""


@pytest.mark.parametrize("ends", [True, False], ids=["ends with its work", "goes on"])
def test_a_process_ending_with_its_build_keeps_the_graphs_others_free_them(
    tmp_path: Path, ends: bool
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    shown = subprocess.run(
        [
            sys.executable,
            "-c",
            _TASK_IN_A_FRESH_PROCESS,
            "ends" if ends else "goes on",
            str(fixture_path("convnet-stats")),
            str(out),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    state = json.loads(shown.stdout.strip().splitlines()[-1])
    if ends:  # the target and golden graphs, kept whole for the exit
        assert state == {"kept": 1, "alive": 2, "frozen": True, "whole": True}
    else:
        assert state == {"kept": 0, "alive": 0, "frozen": False, "whole": True}


_EXIT_WITH_A_QUEUE_ALIVE = """
import multiprocessing
from graphboard.executor import Executor
# a queue still alive at the exit, as a stopped pool's can be (held by the stop's traceback,
# or by a worker cut short while starting)
stuck = multiprocessing.get_context("spawn").Queue()
Executor(ends_process=True).exit(143)
"""


def test_a_process_ending_by_os_exit_leaves_no_semaphore_behind() -> None:
    """Issue 30: a stopped compare once exited 143, cleanly, but its pool's named semaphores
    were reported leaked: os._exit skips multiprocessing's exit hook, which unlinks those of
    queues still alive."""
    ended = subprocess.run(
        [sys.executable, "-c", _EXIT_WITH_A_QUEUE_ALIVE],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ended.returncode == 143, ended.stderr
    assert "leaked" not in ended.stderr, ended.stderr
