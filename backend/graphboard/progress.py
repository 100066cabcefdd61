"""Progress reporting: a bar on stderr for people, a callback for jobs."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

ProgressCallback = Callable[[float, str], None]


def silent(_fraction: float, _message: str) -> None:
    return None


class ProgressBar:
    """``[graph_build] ####------ 40% 2/5 step 0 rank 1``, redrawn in place on a terminal."""

    def __init__(self, stream: TextIO | None = None, width: int = 30) -> None:
        self.stream = stream or sys.stderr
        self.width = width
        self.tty = self.stream.isatty()
        self.started = time.monotonic()
        self._last = -1

    def __call__(self, fraction: float, message: str) -> None:
        percent = int(max(0.0, min(1.0, fraction)) * 100)
        if not self.tty and percent == self._last:
            return
        self._last = percent
        filled = int(self.width * percent / 100)
        elapsed = time.monotonic() - self.started
        line = f"[graph_build] {'#' * filled}{'-' * (self.width - filled)} {percent:3d}% {elapsed:5.1f}s {message}"
        if self.tty:
            self.stream.write("\r\033[K" + line + ("\n" if percent >= 100 else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


class Stopwatch:
    """Seconds per named stage, in the order the stages ran (kept in gb_meta "timings")."""

    def __init__(self) -> None:
        self.stages: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.stages[stage] = round(self.stages.get(stage, 0.0) + now - self._last, 3)
        self._last = now
