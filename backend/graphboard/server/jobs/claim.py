"""One embedded job runner per state folder: a second server on it refuses to start.

The embedded runner owns its state folder: at start it queues again the jobs a previous
server left ``running`` and sweeps the uploads no job needs (:meth:`LocalRunner.start`). A
second server on the same state folder would queue the first one's running jobs again and
sweep its uploads mid-build. So the runner claims the folder with an exclusive ``flock`` on
``runner.lock`` for its lifetime; the claim ends with the process, even by SIGKILL (the
kernel drops the lock), so a crash leaves nothing to clean up.

The .vis.db files of the data dir are shared safely: two servers with their own state folders
(``GRAPHBOARD_STATE_DIR``) may serve and match one data dir (SQLite's locking; see
:mod:`graphboard.store.reader.held_files`), as may Celery workers sharing one catalog.

A claim is counted per process (the ``graphboard serve`` command claims before uvicorn
starts, to refuse with one line; the runner claims again at its start), since a second
``flock`` on another descriptor of the file would conflict with the process's own.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from graphboard.errors import GraphboardError

LOCK_NAME = "runner.lock"

_claims: dict[Path, tuple[int, int]] = {}  # lock file: descriptor, claims of this process
_guard = threading.Lock()


class StateFolderTaken(GraphboardError):
    """Another process runs the embedded job runner on this state folder."""


def _owner(fd: int) -> str:
    text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    return f"pid {text}" if text.isdigit() else "another process"


def claim(state_root: Path) -> None:
    """Claim ``state_root`` for this process's job runner, or raise StateFolderTaken."""
    lock = state_root / LOCK_NAME
    with _guard:
        if lock in _claims:
            fd, count = _claims[lock]
            _claims[lock] = (fd, count + 1)
            return
        try:
            state_root.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as error:
            raise GraphboardError(f"{lock}: cannot open: {error.strerror or error}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = _owner(fd)
            os.close(fd)
            raise StateFolderTaken(
                f"another graphboard server ({owner}) runs jobs from {state_root}: one server "
                "per state folder; stop it, or give this one its own with "
                "GRAPHBOARD_STATE_DIR=DIR (the data dir's .vis.db files are shared safely)"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        _claims[lock] = (fd, 1)


def release(state_root: Path) -> None:
    """End one claim; the last one unlocks the folder."""
    lock = state_root / LOCK_NAME
    with _guard:
        if lock not in _claims:
            return
        fd, count = _claims[lock]
        if count > 1:
            _claims[lock] = (fd, count - 1)
            return
        del _claims[lock]
        os.close(fd)  # the flock ends with its descriptor


@contextmanager
def claimed(state_root: Path) -> Iterator[None]:
    claim(state_root)
    try:
        yield
    finally:
        release(state_root)
