"""Call stacks for stack.json: captured per forward record, written in msprobe's grouped format.

A frame reads ``"File <path>, line <n>, in <function>, \\n <source line>"``, innermost first,
with the probe's own frames left out so the first frame is the code that made the call.
Records with identical stacks share one group: ``{"0": [[names...], [frames...]], ...}``.
"""

from __future__ import annotations

import linecache
import os
import sys

Frames = tuple[str, ...]

_PROBE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def capture_stack() -> Frames:
    frames: list[str] = []
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if not code.co_filename.startswith(_PROBE_DIR):
            line = linecache.getline(code.co_filename, frame.f_lineno).strip()
            frames.append(
                f"File {code.co_filename}, line {frame.f_lineno}, in {code.co_name}, \n {line}"
            )
        frame = frame.f_back  # type: ignore[assignment]
    return tuple(frames)


class StackBook:
    """Node names grouped by identical stacks, groups in first-seen order."""

    def __init__(self) -> None:
        self._groups: dict[Frames, list[str]] = {}

    def add(self, name: str, frames: Frames) -> None:
        self._groups.setdefault(frames, []).append(name)

    def to_json(self) -> dict[str, list[list[str]]]:
        return {
            str(index): [names, list(frames)]
            for index, (frames, names) in enumerate(self._groups.items())
        }
