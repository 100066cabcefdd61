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
    it states the layout version it was built for, which must be graphboard's."""
    if module.__name__ != MODULES["btree"]:
        return None  # built with graphboard, from the same checkout
    # imported here: the store imports this seam
    from graphboard.store.node_rows import LAYOUT_VERSION

    built_for = getattr(module, "LAYOUT_VERSION", None)
    if built_for == LAYOUT_VERSION:
        return None
    stated = "no stated layout" if built_for is None else f"tb_nodes layout {built_for!r}"
    return (
        f"{module.__name__} was built for {stated}, this graphboard writes layout"
        f" {LAYOUT_VERSION}: SQLite writes tb_nodes instead (reinstall packages/graphboard-btree)"
    )


def active() -> dict[str, bool]:
    """Which compiled parts this process would use (bench/ and the install tests ask)."""
    return {name: compiled(name) is not None for name in PARTS}
