"""The one seam between graphboard and its compiled speed-ups.

Every rule is written in Python, which is the reference and runs on any install. A compiled
module only makes one hot stage faster and must give the same result, held by tests that run
the shared fixtures both ways and compare the files. Each is optional: an install without a C
compiler (``CC=false pip install .``) skips graphboard's own, ``GRAPHBOARD_PURE=1`` ignores
those built, so the Python runs on any install. ``GRAPHBOARD_PURE=render,btree`` ignores only
the parts named: bench/bench_core.py measures what each part saves that way.

"render" is built with graphboard (setup.py, beside this file); "btree", tb_nodes written
straight into SQLite's file format, is a package of its own (packages/graphboard-btree),
installed apart by scripts/setup. Built apart, it states the tb_nodes layout it was made for,
and one made for another layout is refused here, once, with a line on stderr: its stage then
runs its Python, as when it is not installed.

A caller asks for its module once, at import, and falls back to its own Python when it gets
None::

    _render = accel.compiled("render")
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
from types import ModuleType

PURE_ENV = "GRAPHBOARD_PURE"

# Where each compiled part is imported from, by the name its callers ask for.
MODULES = {
    "render": "graphboard.accel._render",
    "btree": "graphboard_btree._btree",
}
# Every compiled part.
PARTS = tuple(MODULES)
# The form of what store/node_rows.py hands the B-tree writer (its NodesLayout, what a row may
# hold, a refusal's words), as a number the writer states too: one built for another is
# refused. It lives here, at the seam, so the check needs nothing above it; node_rows.py
# describes what it covers. 2: NaN in a NOT NULL column refused, as SQLite does.
BTREE_LAYOUT_VERSION = 2


def pure_forced(name: str | None = None) -> bool:
    """Whether the environment asks for the Python path on every stage (or on part ``name``)."""
    value = os.environ.get(PURE_ENV, "").strip()
    if value in ("", "0"):
        return False
    if value == "1":
        return True
    return name is not None and name in {part.strip() for part in value.split(",")}


def compiled(name: str) -> ModuleType | None:
    """Part ``name``'s compiled module, or None when it is not built (or installed), is refused,
    or the pure path is forced."""
    if pure_forced(name) or name not in MODULES:
        return None
    return _usable(MODULES[name])


@functools.cache  # once a process: a refusal is told once, however often it is asked for
def _usable(module_name: str) -> ModuleType | None:
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    refused = refusal(module)
    if refused is not None:
        print(f"graphboard: warning: {refused}", file=sys.stderr, flush=True)
        return None
    return module


def refusal(module: ModuleType) -> str | None:
    """Why a compiled module built apart from graphboard cannot serve it, or None. The B-tree
    writer is handed store/node_rows.py's layout and rows and must refuse rows in its words:
    it states the layout version it was built for, which must be BTREE_LAYOUT_VERSION."""
    if module.__name__ != MODULES["btree"]:
        return None  # built with graphboard, from the same checkout
    built_for = getattr(module, "LAYOUT_VERSION", None)
    if built_for == BTREE_LAYOUT_VERSION:
        return None
    stated = "no stated layout" if built_for is None else f"tb_nodes layout {built_for!r}"
    return (
        f"{module.__name__} was built for {stated}, this graphboard writes layout"
        f" {BTREE_LAYOUT_VERSION}: SQLite writes tb_nodes instead (reinstall packages/graphboard-btree)"
    )


def active() -> dict[str, bool]:
    """Which compiled parts this process would use (bench/ and the install tests ask)."""
    return {name: compiled(name) is not None for name in PARTS}
