"""The one seam between graphboard and its compiled speed-ups.

Every rule is written in Python, which is the reference and runs on any install. A compiled
module here only makes one hot stage faster and must give the same result, held by tests that
run the shared fixtures both ways and compare the files. Each is optional: an install without
a C compiler (``CC=false pip install .``) skips it, and ``GRAPHBOARD_PURE=1`` ignores those
built, so the Python runs on any install. ``GRAPHBOARD_PURE=render,btree`` ignores only the
parts named: bench/bench_core.py measures what each part saves that way.

A caller asks for its module once, at import, and falls back to its own Python when it gets
None::

    _render = accel.compiled("render")
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

PURE_ENV = "GRAPHBOARD_PURE"


def pure_forced(name: str | None = None) -> bool:
    """Whether the environment asks for the Python path on every stage (or on part ``name``)."""
    value = os.environ.get(PURE_ENV, "").strip()
    if value in ("", "0"):
        return False
    if value == "1":
        return True
    return name is not None and name in {part.strip() for part in value.split(",")}


def compiled(name: str) -> ModuleType | None:
    """``graphboard.accel._<name>``, or None when it is not built or the pure path is forced."""
    if pure_forced(name):
        return None
    try:
        return importlib.import_module(f"graphboard.accel._{name}")
    except ImportError:
        return None


def active() -> dict[str, bool]:
    """Which compiled parts this process would use (bench/ and the install tests ask)."""
    return {name: compiled(name) is not None for name in PARTS}


# Every compiled part, by the name its callers ask for.
PARTS = ("render", "btree")
