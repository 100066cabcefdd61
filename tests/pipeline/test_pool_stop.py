"""A build's pool stopped while a worker sends its result (the golden side's records read
aside: tens of megabytes) must still shut down: issue 30's SIGTERM runs that hung past 15 s."""

from __future__ import annotations

import multiprocessing
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from graphboard.executor import _kill_workers

if not Path("/proc/self/io").exists():
    pytest.skip("needs Linux's /proc/PID/io", allow_module_level=True)

RESULT_BYTES = 200 << 20  # long enough in the pipe for the kill to land while it is sent


def _big_result(marker: str) -> bytes:
    result = bytes(RESULT_BYTES)
    Path(marker).touch()  # now it is pickled and sent
    return result


def _read_here() -> int:
    """Bytes this process has read (from its pipes too), from Linux's /proc/self/io: a read
    syscall counts as it returns, so this grows while a long message comes in pieces."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def test_workers_killed_mid_result_let_the_pool_shut_down(tmp_path: Path) -> None:
    marker = tmp_path / "sending"
    pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
    future = pool.submit(_big_result, str(marker))
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert time.monotonic() < deadline, "the worker never got to its result"
        time.sleep(0.005)
    received = _read_here() + (8 << 20)
    while _read_here() < received:  # the pool's thread is reading the message now
        assert time.monotonic() < deadline, "the worker never sent its result"
        time.sleep(0.001)
    _kill_workers(pool)
    stopping = threading.Thread(target=pool.shutdown, kwargs={"cancel_futures": True})
    stopping.start()
    stopping.join(timeout=30)
    assert not stopping.is_alive(), "shutdown waits for a read that never ends"
    assert future.done()
