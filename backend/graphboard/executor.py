"""How the build's work is run: every way, in one place.

The orchestration (pipeline/run.py) says *what* runs: plan, tasks, finish. An :class:`Executor`
says *how*: in this process, in a pool of worker processes, with some reading done aside by
other processes meanwhile; with the cyclic collector paused while work runs; and what a
process that ends with its work does with what the work built. The command line, the
server's local runner and Celery's workers run the same plan and differ only in the executor
they pass::

    Executor(ends_process=True)   graph_build: may start processes; keeps what its tasks
                                  built for its exit (os._exit), which drops it whole
    Executor()                    the local runner's build process: may start processes
    Executor(processes=False)     a Celery worker (a daemon, which may start none), a test

Work runs with the collector paused (:func:`collector_paused`) because it allocates millions
of objects that all live until it ends: the collector would only traverse that growing heap
again and again, finding nothing (bench/results/compare.md). An executor runs only in
processes that do nothing else meanwhile (the command, a build process, a pool or Celery
worker), never in one that serves requests: no interpreter-wide setting changes there.

Nothing here knows what a task is: work is a function and its arguments.
"""

from __future__ import annotations

import gc
import multiprocessing
import multiprocessing.util
import os
import sys
from collections.abc import Callable, Hashable, Iterator, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, NoReturn, Protocol, TypeVar

from graphboard.errors import GraphboardError
from graphboard.stopping import die_with_parent

R = TypeVar("R")
K = TypeVar("K", bound=Hashable)
MAX_WORKERS = 8  # past this many processes, reading and writing contend more than they gain


class Releasable(Protocol):
    def release(self) -> None: ...


@dataclass(slots=True)
class Output(Generic[R]):
    """What a unit of work gives back: its ``result`` (sent back from a worker process) and
    what it built and ``held`` alive to its end (graphs), for the executor to free at once,
    or to keep for the exit of a process that ends with its work."""

    result: R
    held: Sequence[Releasable] = ()


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic collector paused for the block (nested blocks leave it paused), then as
    it was. Only executors call it: see the module's docstring."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass
class Executor:
    processes: bool = True  # may start worker processes
    ends_process: bool = False  # the process ends with its work: see exit()
    # what finished work held, kept for the exit when the process ends with its work
    kept: list[Sequence[Releasable]] = field(default_factory=list, repr=False)

    def call(self, function: Callable[..., R], *args: Any) -> R:
        """``function(*args)`` in this process, the collector paused."""
        with collector_paused():
            return function(*args)

    def run(self, work: Callable[..., Output[R]], *args: Any) -> R:
        """``work(*args)`` in this process, the collector paused; what it held is let go
        (:meth:`_let_go`) before the collector resumes, which would traverse it all once."""
        with collector_paused():
            output = work(*args)
            result, held = output.result, output.held
            del output
            self._let_go(held)
            del held
        return result

    def _let_go(self, held: Sequence[Releasable]) -> None:
        """Free what work held, or, in a process that ends with its work, keep it for the
        exit (a tenth of a 27k-record compare's time and more at a million:
        bench/results/core.md). What is kept is never garbage, so it is frozen too (gc.freeze:
        left out of later collections), else the collector's first pass once resumed would
        traverse all of it, as long as freeing it would have taken."""
        if self.ends_process:
            self.kept.append(held)
            gc.freeze()
            return
        for item in held:
            item.release()

    def run_each(
        self,
        work: Callable[..., Output[R]],
        calls: Sequence[tuple[Any, ...]],
        *,
        workers: int,
        label: Callable[[int], str],
        done: Callable[[int, R], None],
    ) -> list[R]:
        """``work(*call)`` for each call, results in call order: one after the other here
        when ``workers`` is 1 (or this executor starts no process), else on a pool of
        ``workers`` processes. ``done(count, result)`` as each ends; ``label(index)`` names a
        call whose failure was not a GraphboardError."""
        if workers <= 1 or not self.processes or len(calls) <= 1:
            results = []
            for call in calls:
                results.append(self.run(work, *call))
                done(len(results), results[-1])
            return results
        pool = _start_pool(min(workers, len(calls), MAX_WORKERS))
        try:
            futures: dict[Future[R], int] = {
                pool.submit(_run_in_worker, work, call): index for index, call in enumerate(calls)
            }
            ordered: list[R | None] = [None] * len(calls)
            pending, count = set(futures), 0
            while pending:
                finished, pending = wait(pending, return_when=FIRST_EXCEPTION)
                for future in finished:
                    error = future.exception()
                    if isinstance(error, GraphboardError):
                        raise error
                    if error is not None:
                        raise GraphboardError(
                            f"{label(futures[future])} failed: {error!r}"
                        ) from error
                    ordered[futures[future]] = future.result()
                    count += 1
                    done(count, future.result())
        except BaseException:
            _kill_workers(pool)
            raise
        finally:
            pool.shutdown(cancel_futures=True)
        return [result for result in ordered if result is not None]

    @contextmanager
    def reading_aside(
        self, read: Callable[[K], R], items: Sequence[K], *, workers: int
    ) -> Iterator[dict[K, Future[R]]]:
        """``read(item)`` for each item, started on other processes (in the items' order: the
        first is ready first) while the block works with their futures. On leaving the
        block, those still running are stopped; on a failure or a stop, at once."""
        pool = _start_pool(min(workers, len(items), MAX_WORKERS))
        try:
            yield {item: pool.submit(_paused, read, item) for item in items}
        except BaseException:
            _kill_workers(pool)
            raise
        finally:
            pool.shutdown(cancel_futures=True)

    def exit(self, code: int) -> NoReturn:
        """End the process with ``code``. One that ends with its work skips the interpreter's
        teardown, which would free every module's objects (and what was kept) one by one
        only for the process to end anyway."""
        sys.stdout.flush()
        sys.stderr.flush()
        if self.ends_process:
            # What the interpreter's exit runs for multiprocessing (its atexit hook), which
            # os._exit skips: unlink the named semaphores of any pool still alive. A stopped
            # compare's pool can be (held by the stop's traceback, a worker cut short while
            # starting), and its semaphores were then reported leaked, 1 stop in 100 or so.
            multiprocessing.util._exit_function()  # type: ignore[attr-defined]
            os._exit(code)
        sys.exit(code)


def _start_pool(workers: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(
        max_workers=max(1, workers),
        mp_context=multiprocessing.get_context("spawn"),  # safe inside servers with threads
        initializer=die_with_parent,  # a worker outliving a killed build writes on for nothing
        initargs=(os.getpid(),),
    )


def _paused(function: Callable[..., R], *args: Any) -> R:
    """A pool worker's call: the worker does nothing else, so the pause is its own."""
    with collector_paused():
        return function(*args)


def _run_in_worker(work: Callable[..., Output[R]], call: tuple[Any, ...]) -> R:
    return Executor(processes=False).run(work, *call)


def _kill_workers(pool: ProcessPoolExecutor) -> None:
    """End a failed or stopped build's workers now, before its part files are removed:
    shutdown would wait for every running task to end (minutes for a large rank), and a
    worker still running could write a part after its removal. The executor has no public
    way to do this before Python 3.14 (kill_workers), hence its process table."""
    workers = list((pool._processes or {}).values())
    for worker in workers:
        worker.kill()
    for worker in workers:
        worker.join()
    # A worker killed while it sent its result (a golden side's records: tens of megabytes)
    # leaves the pool's reading thread blocked for the rest of that message forever: this
    # process holds the result pipe's write end too, so no end of file ever comes, and
    # shutdown would wait for that thread for ever (SIGTERM mid-compare hanging past 15 s,
    # its pool's semaphores reported leaked once it was SIGKILLed). With every worker gone,
    # that write end is the last: closing it ends the read, and the thread marks the pool
    # broken and stops as for any dead worker.
    pool._result_queue._writer.close()  # type: ignore[attr-defined]
