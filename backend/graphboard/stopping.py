"""How a build stops: a stop signal unwinds it as Ctrl+C does, and its children die with it.

SIGINT raises KeyboardInterrupt in the main thread, and every cleanup of a build (the writing
child killed and reaped, the temporary files removed) runs on the way out. SIGTERM and SIGHUP
would end the process on the spot instead, leaving a part file of hundreds of megabytes and a
writing child that runs on for seconds. :func:`stop_signals_raise` makes the three alike:
each raises :class:`Stopped`, a KeyboardInterrupt, so the same cleanup runs, and a command
exits 128 + the signal's number (:func:`exit_status`: 130, 143, 129).

A parent that dies without cleaning up (SIGKILL, a crash) cannot stop its children;
:func:`die_with_parent` has Linux do it.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


class Stopped(KeyboardInterrupt):
    """A stop signal, raised in the main thread where SIGINT raises KeyboardInterrupt."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.signum,)


def stop_signal(interrupt: KeyboardInterrupt) -> signal.Signals:
    """The signal behind ``interrupt``: a :class:`Stopped`'s, else Ctrl+C's SIGINT."""
    return signal.Signals(interrupt.signum) if isinstance(interrupt, Stopped) else signal.SIGINT


def exit_status(interrupt: KeyboardInterrupt) -> int:
    """A shell's status for a process ended by the signal behind ``interrupt``."""
    return 128 + stop_signal(interrupt)


class _RaiseOnce:
    """The handler: the first stop signal raises; later ones, which arrive while the build
    unwinds (a second Ctrl+C, a service manager signalling the whole group), are dropped
    so that they cannot cut the cleanup short."""

    def __init__(self) -> None:
        self.fired = False

    def __call__(self, signum: int, _frame: FrameType | None) -> None:
        if self.fired:
            return
        self.fired = True
        raise Stopped(signum)


@contextmanager
def stop_signals_raise() -> Iterator[None]:
    """While the block runs, SIGINT, SIGTERM and SIGHUP raise :class:`Stopped` in the main
    thread; the handlers before it are restored afterwards. A signal ignored on entry stays
    ignored (``nohup`` for SIGHUP, a shell's background job for SIGINT). Outside the main
    thread, which Python's signal handlers never run in, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handler = _RaiseOnce()
    previous: dict[signal.Signals, Any] = {}
    for signum in STOP_SIGNALS:
        current = signal.getsignal(signum)
        if current is not signal.SIG_IGN:
            previous[signum] = signal.signal(signum, handler)
    try:
        yield
    finally:
        for stopping, former in previous.items():
            signal.signal(stopping, former)


@functools.cache
def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes  # here: only a child's first request needs it

        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return prctl


def die_with_parent(parent: int, signum: int = signal.SIGKILL) -> None:
    """Have Linux send this process ``signum`` when its parent ``parent`` (a pid) ends, by
    whatever means; if it has ended already, send it now. Elsewhere than Linux, nothing."""
    prctl = _prctl()
    if prctl is None:
        return
    prctl(PR_SET_PDEATHSIG, signum)
    if os.getppid() != parent:  # it ended before the request: no one would signal
        os.kill(os.getpid(), signum)
