"""One process-wide pause of the cyclic garbage collector, safe to nest across threads."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class _CollectorPause:
    """Pauses the cyclic garbage collector while a build or a link runs.

    Both allocate millions of long-lived objects and free none until they end; the cyclic
    collector would only rescan the growing heap over and over (a third of a 1M-node build,
    a quarter of a 1,024-rank link). ``gc.disable`` is process-wide, so
    pauses nest across threads: the first records whether the collector ran, the last restores
    that. A plain save-and-restore would let one thread re-enable it under another's pause,
    or re-enable it for a process that had turned it off meanwhile.

    In a server worker thread this is safe but not free: no thread of the process collects
    cycles until the link ends (seconds at 1,024 ranks), so their cyclic garbage waits.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._resume = False

    @contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if self._depth == 0:
                self._resume = gc.isenabled()
                gc.disable()
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0 and self._resume:
                    gc.enable()


collector_paused = _CollectorPause()
