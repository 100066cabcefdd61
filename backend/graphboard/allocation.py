"""Work that allocates millions of objects which all live until it ends.

Reading a dump, building and scoring its graphs, linking ranks: each keeps everything it
allocates until it is done and frees none of it before. The cyclic collector would only
traverse that growing heap again and again, finding nothing (bench/results/compare.md), so
such work runs with it paused; it runs again as before once the work ends.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def without_cycle_collection() -> Iterator[None]:
    """Pause the cyclic collector for the block (nested blocks leave it paused). The work that
    uses it runs in processes that do nothing else meanwhile (the command, the local runner's
    build process, a pool or Celery worker), so the pause touches no other work."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


# What finished work let go of, kept for the exit of a process that ends with its work.
_kept_for_exit: list[object] = []
_process_ends_with_work = False


def process_ends_with_work() -> None:
    """Declare that this process exits without the interpreter's teardown once its work is
    done (the graph_build command: cli.graph_build_command). What the work lets go of is then
    kept for that exit, which drops it whole, rather than freed object by object: a tenth of
    a 27k-record compare's time and more at a million (bench/results/core.md). Only an entry
    point that ends its process itself may declare it; a server, a worker or a test goes on
    and frees as it goes."""
    global _process_ends_with_work
    _process_ends_with_work = True


def keep_for_exit(work: object) -> bool:
    """Keep ``work`` (what finished work held) until the exit if the process ends with its
    work, and say so; else keep nothing, for the caller to free it at once.

    What is kept is never garbage, so it is frozen too (gc.freeze: every object tracked now
    is left out of later collections). Else the collector's first pass once resumed would
    traverse all of it, as long as freeing it would have taken."""
    if _process_ends_with_work:
        _kept_for_exit.append(work)
        gc.freeze()
    return _process_ends_with_work
